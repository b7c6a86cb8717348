"""OTF2 ingest speed: the server's fast reader (C callbacks into libotf2) against the
otf2 package's public high-level reader, on the same archive in the same run.

The public reader runs on a slice (its first SLOW_EVENTS events) to keep the run short.
Rates are events per second of this process's CPU time (the machine is shared, so wall
time mostly measures the neighbours); the wall-clock rates are printed too.
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
    best_cpu = best_wall = 0.0
    for _ in range(3):  # best of three
        w, c = time.perf_counter(), time.process_time()
        _defs, events = read_trace(anchor)
        cpu, wall = time.process_time() - c, time.perf_counter() - w
        n = sum(int(e.times.size) for e in events)
        best_cpu, best_wall = max(best_cpu, n / cpu), max(best_wall, n / wall)
    w, c = time.perf_counter(), time.process_time()
    seen = 0
    with otf2.reader.open(anchor) as trace:
        for _location, _event in trace.events:
            seen += 1
            if seen >= SLOW_EVENTS:
                break
    slow_cpu = seen / (time.process_time() - c)
    slow_wall = seen / (time.perf_counter() - w)
    print(f"wall clock: fast {best_wall:,.0f} events/s, public {slow_wall:,.0f} events/s")
    report(
        "OTF2 ingest, fast reader (definitions + Enter/Leave/Metric)",
        best_cpu,
        "events/CPU-s",
        peer="otf2 high-level reader",
        peer_value=slow_cpu,
        target=">= 2e6",
        met=bool(best_cpu >= 2e6),
        note=f"{n:,} events, 2 threads; peer on the first {seen:,}; wall clock "
        f"{best_wall:,.0f} vs {slow_wall:,.0f} events/s",
    )


if __name__ == "__main__":
    main()
