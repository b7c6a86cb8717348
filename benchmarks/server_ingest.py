"""Server ingest: the OTF2 archive of a 2M-event run into arrays, as the index build reads
it (definitions + every location's events), in events per CPU-second.

The readers of the same archive, interleaved over ROUNDS rounds (median and range): the
native scanner (otf2_scan, what the server uses), the numpy decoder (otf2_decode, where
the scanner is not built), the ctypes callbacks alone (otf2_read's fallback, the peer:
libotf2 reading the same file), and the public otf2 reader (on its first 200k events; it
builds an object per event). Target (issue 11): >= 10M events/CPU-s.

Then Score-P's own archives (recorded once by Score-P, _scorep_tracegen.py): the native
scanner against libotf2's callbacks on each, interleaved over ROUNDS rounds, in the
archive's events (every record libotf2 delivers: Enter/Leave, Metric, ...) per CPU-second,
definitions included. Target (issue 22): >= 20M events/CPU-s.
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
CHUNK_SIZE = 1024 * 1024  # the builtin writer's event chunk size (the anchor says so too)
READERS = ("auto", "numpy", "callbacks")


def rate(anchor: str, decoder: str) -> tuple[float, int]:
    from jupyterlab_scorep.trace.otf2_read import read_trace

    c = time.process_time()
    _defs, events = read_trace(anchor, decoder=decoder)  # type: ignore[arg-type]
    n = sum(int(e.times.size) for e in events)
    return n / (time.process_time() - c), n


def span(rates: list[float]) -> str:
    return f"{statistics.median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f})"


def main() -> None:
    import otf2

    from jupyterlab_scorep.trace import otf2_scan

    if not otf2_scan.available():
        sys.exit("the native scanner is not built: run `make setup` first")
    exp = cached_experiment("server-ingest-2M", N_EVENTS)
    anchor = str(exp / "traces.otf2")
    rates: dict[str, list[float]] = {r: [] for r in READERS}
    n = 0
    for i in range(ROUNDS):
        order = READERS if i % 2 == 0 else READERS[::-1]
        for decoder in order:
            r, n = rate(anchor, decoder)
            rates[decoder].append(r)
    c = time.process_time()
    seen = 0
    with otf2.reader.open(anchor) as trace:
        for _location, _event in trace.events:
            seen += 1
            if seen >= SLOW_EVENTS:
                break
    public = seen / (time.process_time() - c)
    per_file = decoders_alone(exp)
    fast = rates["auto"]
    med = statistics.median(fast)
    report(
        "OTF2 ingest, native scanner",
        med,
        "events/CPU-s",
        peer="libotf2 callbacks (the fallback)",
        peer_value=statistics.median(rates["callbacks"]),
        target=">= 1e7",
        met=bool(med >= 1e7),
        note=f"median (range) of {ROUNDS}: scanner {span(fast)}, numpy decoder "
        f"{span(rates['numpy'])}, callbacks {span(rates['callbacks'])}; {n:,} events in "
        f"2 threads, definitions included; public reader {public:,.0f} events/CPU-s on its "
        f"first {seen:,}",
    )
    for name, ms in per_file.items():
        report(f"one location's event file, {name} alone", ms, "ms per 1M events",
               note=f"median of {ROUNDS}, CPU time, the file already in memory")  # fmt: skip
    scorep_archives()


def scorep_archives() -> None:
    """The rows of Score-P's own archives (none where Score-P is not installed)."""
    from _scorep_tracegen import archives

    from jupyterlab_scorep.trace.otf2_read import read_trace

    found = archives()
    if not found:
        print("Score-P is not installed: no rows for Score-P's archives")
    for name, exp in found.items():
        anchor = str(exp / "traces.otf2")
        defs, _events = read_trace(anchor, decoder="callbacks")
        n = sum(int(loc["events"]) for loc in defs.locations)
        rates: dict[str, list[float]] = {"auto": [], "callbacks": []}
        for i in range(ROUNDS):
            for decoder in ("auto", "callbacks") if i % 2 == 0 else ("callbacks", "auto"):
                c = time.process_time()
                read_trace(anchor, decoder=decoder)  # type: ignore[arg-type]
                rates[decoder].append(n / (time.process_time() - c))
        med = statistics.median(rates["auto"])
        note = (
            f"median (range) of {ROUNDS}, interleaved: scanner {span(rates['auto'])}, "
            f"callbacks {span(rates['callbacks'])}; {n:,} events in {len(defs.locations)} "
            "locations, definitions included"
        )
        print(f"  {name}: {note}")  # the ranges, in RESULTS.md's output section
        report(
            f"Score-P archive ingest ({name}), native scanner",
            med,
            "events/CPU-s",
            peer="libotf2 callbacks (the fallback)",
            peer_value=statistics.median(rates["callbacks"]),
            target=">= 2e7",
            met=bool(med >= 2e7),
            note=note,
        )


def decoders_alone(exp: Path) -> dict[str, float]:
    """The scanner and the numpy decoder on one location's event file, without the rest
    of the reading (definitions, files): CPU ms per 1M events, median of ROUNDS."""
    import numpy as np

    from jupyterlab_scorep.trace import otf2_decode, otf2_scan

    data = np.fromfile(exp / "traces" / "0.evt", np.uint8)
    out = {}
    for name, decode in (("native scanner", otf2_scan.scan), ("numpy decoder", otf2_decode.decode)):
        times = []
        for _ in range(ROUNDS):
            c = time.process_time()
            decoded = decode(data, CHUNK_SIZE)
            times.append(time.process_time() - c)
            assert decoded is not None, f"the {name} did not read {exp}"
        out[name] = statistics.median(times) * 1e3 / (decoded.times.size / 1e6)
    return out


if __name__ == "__main__":
    main()
