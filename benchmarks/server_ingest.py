"""Server ingest: the OTF2 archive of a 2M-event run into arrays, as the index build reads
it (definitions + every location's events), in events per CPU-second.

Three readers of the same archive, interleaved over ROUNDS rounds (median and range):
the numpy decoder (otf2_decode, with the callbacks for what it leaves), the ctypes
callbacks alone (otf2_read's fallback), and the public otf2 reader (on its first
200k events; it builds an object per event). Target (issue 11): >= 10M events/CPU-s.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _report import report  # noqa: E402
from _server_tracegen import cached_experiment  # noqa: E402

N_EVENTS = 2_000_000
SLOW_EVENTS = 200_000
ROUNDS = 5


def rate(anchor: str, decode: bool) -> tuple[float, int]:
    from jupyterlab_scorep.otf2_read import read_trace

    c = time.process_time()
    _defs, events = read_trace(anchor, decode=decode)
    n = sum(int(e.times.size) for e in events)
    return n / (time.process_time() - c), n


def main() -> None:
    import otf2

    exp = cached_experiment("server-ingest-2M", N_EVENTS)
    anchor = str(exp / "traces.otf2")
    fast, slow = [], []
    n = 0
    for i in range(ROUNDS):
        for decode in (True, False) if i % 2 == 0 else (False, True):
            r, n = rate(anchor, decode)
            (fast if decode else slow).append(r)
    c = time.process_time()
    seen = 0
    with otf2.reader.open(anchor) as trace:
        for _location, _event in trace.events:
            seen += 1
            if seen >= SLOW_EVENTS:
                break
    public = seen / (time.process_time() - c)
    med, lo, hi = statistics.median(fast), min(fast), max(fast)
    report(
        "OTF2 ingest, numpy decoder",
        med,
        "events/CPU-s",
        peer="ctypes callbacks (the fallback)",
        peer_value=statistics.median(slow),
        target=">= 1e7",
        met=bool(med >= 1e7),
        note=f"median of {ROUNDS}, range {lo:,.0f}-{hi:,.0f}; {n:,} events in 2 threads; "
        f"callbacks {min(slow):,.0f}-{max(slow):,.0f}; public reader {public:,.0f} events/CPU-s "
        f"on its first {seen:,}",
    )


if __name__ == "__main__":
    main()
