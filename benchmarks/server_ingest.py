"""OTF2 ingest speed: the server's fast reader (C callbacks into libotf2) against the
otf2 package's public high-level reader, on the same archive in the same run.

The public reader runs on a slice (its first SLOW_EVENTS events) to keep the run short;
events/s is what each reaches.
"""

from __future__ import annotations

import time

from _report import report
from _server_tracegen import cached_experiment

N_EVENTS = 2_000_000
SLOW_EVENTS = 200_000


def main() -> None:
    import otf2

    from jupyterlab_scorep.otf2_read import read_trace

    exp = cached_experiment("server-ingest-2M", N_EVENTS)
    anchor = str(exp / "traces.otf2")
    best = 0.0
    for _ in range(3):  # best of three: the machine is shared
        t = time.perf_counter()
        _defs, events = read_trace(anchor)
        dt = time.perf_counter() - t
        n = sum(int(e.times.size) for e in events)
        best = max(best, n / dt)
    t = time.perf_counter()
    seen = 0
    with otf2.reader.open(anchor) as trace:
        for _location, _event in trace.events:
            seen += 1
            if seen >= SLOW_EVENTS:
                break
    slow = seen / (time.perf_counter() - t)
    report("OTF2 ingest, fast reader (definitions + Enter/Leave/Metric)", best, "events/s",
           peer="otf2 high-level reader", peer_value=slow, target=">= 2e6",
           met=bool(best >= 2e6), note=f"{n:,} events, 2 threads; peer on the first {seen:,}")


if __name__ == "__main__":
    main()
