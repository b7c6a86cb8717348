"""From a 1M-event run's end to its timeline served: index build in the server's (warm)
worker process plus the first full-view query, as the server does on the first request.
Target (issue 11): < 0.5 s.

Peer: reading the same archive with the otf2 package's public reader alone (extrapolated
from a 200k-event slice), i.e. before any drawing could start.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import time

from _report import report
from _server_tracegen import DATA, cached_experiment

N_EVENTS = 1_000_000
ROUNDS = 5  # each from a run that just ended (no index); the median counts


async def first_timeline(service, exp) -> float:
    from jupyterlab_scorep.trace import timeline

    t = time.perf_counter()
    real = service.reads.roots.experiment(str(exp))
    manifest = await service.reads.manifest(real)
    index = await service.reads.index(real, manifest)
    json.dumps(timeline.query(index, 0, index.meta["range"][1], 1600))
    return time.perf_counter() - t


def main() -> None:
    import otf2

    from jupyterlab_scorep.http.service import Service
    from jupyterlab_scorep.trace.index_store import IndexCache

    exp = cached_experiment("server-first-1M", N_EVENTS)
    service = Service(str(DATA), version="bench")
    service.reads._worker.call(int, 0)  # as after server start: the worker is up, imports done
    results = []
    for _ in range(ROUNDS):
        shutil.rmtree(exp / ".index", ignore_errors=True)  # a run that just ended
        service.reads.indexes = IndexCache()  # nothing of it loaded yet
        results.append(asyncio.run(first_timeline(service, exp)))
    service.shutdown()
    seconds = statistics.median(results)
    t, seen = time.perf_counter(), 0
    with otf2.reader.open(str(exp / "traces.otf2")) as trace:
        for _ in trace.events:
            seen += 1
            if seen >= 200_000:
                break
    peer = (time.perf_counter() - t) * N_EVENTS / seen
    report(
        "run end -> timeline served (1M events)",
        seconds,
        "s",
        peer="public otf2 reader, reading only (extrapolated)",
        peer_value=peer,
        target="< 0.5",
        met=bool(seconds < 0.5),
        note="index build in the warm worker + first full-view query + JSON; median of "
        f"{ROUNDS}, range {min(results):.2f}-{max(results):.2f} s",
    )


if __name__ == "__main__":
    main()
