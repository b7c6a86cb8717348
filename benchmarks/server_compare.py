"""GET compare on two 1M-event experiments, once both are indexed: the first answer (the
server holds nothing in memory yet: call trees read from the indexes, compared, encoded)
and a repeated one (the comparison cached), measured as the service computes them, then
the same over HTTP through a real jupyter server.

The two experiments are synthetic (server_ext/tests/synthetic_trace.py) with different
seeds, so their call trees differ almost everywhere: ~150,000 call paths each, ~220,000
merged. That is the worst case for matching by name path. The typical case is measured
too: a cell whose loop calls a small function 500,000 and then 600,000 times (1M and
1.2M events, three call paths), built with the tests' experiment factory.

Peer: the same comparison when both runs are read from their profile.cubex (pycubexr), as
a server without trace indexes would have to.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import urllib.parse
import urllib.request

from _jupyter_server import jupyter_server
from _report import report
from _server_tracegen import DATA, cached_experiment

N_EVENTS = 1_000_000
FIRST_ROUNDS = 5
REPEATS = 20


def main() -> None:
    from jupyterlab_scorep.analysis import compare, compare_json
    from jupyterlab_scorep.http.service import Service
    from jupyterlab_scorep.trace import calltree
    from jupyterlab_scorep.trace.index_store import ensure_index

    a = cached_experiment("server-compare-1M-a", N_EVENTS, seed=1, cubex=True)
    b = cached_experiment("server-compare-1M-b", N_EVENTS, seed=2, cubex=True)
    t = time.perf_counter()
    for exp in (a, b):
        ensure_index(str(exp))
    index_s = time.perf_counter() - t

    async def first() -> tuple[float, float, dict]:
        svc = Service(str(a.parent), version="bench")
        try:
            t, c = time.perf_counter(), time.process_time()
            body = json.dumps(await svc.compare(str(a), str(b)), separators=(",", ":"))
            return time.perf_counter() - t, time.process_time() - c, json.loads(body)
        finally:
            svc.shutdown()

    async def repeated() -> list[float]:
        svc = Service(str(a.parent), version="bench")
        try:
            await svc.compare(str(a), str(b))
            times = []
            for _ in range(REPEATS):
                t = time.perf_counter()
                json.dumps(await svc.compare(str(a), str(b)), separators=(",", ":"))
                times.append(time.perf_counter() - t)
            return times
        finally:
            svc.shutdown()

    def loop_run(name: str, calls: int):
        from experiment_factory import many_calls_thread, write_experiment

        exp = DATA / name
        if not (exp / "manifest.json").exists():
            write_experiment(exp, threads=[many_calls_thread(calls)], metrics=None)
        ensure_index(str(exp))
        return exp

    la, lb = (
        loop_run("server-compare-loop-500k", 500_000),
        loop_run("server-compare-loop-600k", 600_000),
    )

    async def first_loop() -> float:
        svc = Service(str(a.parent), version="bench")
        try:
            t = time.perf_counter()
            json.dumps(await svc.compare(str(la), str(lb)), separators=(",", ":"))
            return time.perf_counter() - t
        finally:
            svc.shutdown()

    loop_ms = statistics.median(asyncio.run(first_loop()) for _ in range(FIRST_ROUNDS)) * 1e3
    firsts = [asyncio.run(first()) for _ in range(FIRST_ROUNDS)]
    wall_ms = statistics.median(f[0] for f in firsts) * 1e3
    cpu_ms = statistics.median(f[1] for f in firsts) * 1e3
    body = firsts[-1][2]
    warm_ms = statistics.median(asyncio.run(repeated())) * 1e3
    size_mb = len(json.dumps(body, separators=(",", ":"))) / 1e6
    paths = body.get("truncated", {}).get("paths_dropped", 0)

    # peer: both trees from profile.cubex
    t = time.perf_counter()
    ta, tb = calltree.from_cubex(a / "profile.cubex"), calltree.from_cubex(b / "profile.cubex")
    cmp_ = compare.compare_trees(ta, tb)
    json.dumps(compare_json.comparison_json(cmp_))
    peer_ms = (time.perf_counter() - t) * 1e3

    note = (
        f"{N_EVENTS:,} events each, {len(ta.nodes):,} and {len(tb.nodes):,} call paths, "
        f"{len(cmp_.paths):,} merged, {len(cmp_.functions)} functions; answer "
        f"{size_mb:.2f} MB ({paths:,} paths left out); indexes built in {index_s:.1f} s; "
        f"median of {FIRST_ROUNDS} fresh servers"
    )
    report(
        "compare, first answer once indexed (2 x 1M events)",
        wall_ms,
        "ms",
        peer="both from profile.cubex (pycubexr)",
        peer_value=peer_ms,
        target="<= 200",
        met=bool(wall_ms <= 200),
        note=note + f"; CPU {cpu_ms:.0f} ms",
    )
    report(
        "compare, first answer once indexed (a loop: 1M and 1.2M events, 3 call paths)",
        loop_ms,
        "ms",
        target="<= 200",
        met=bool(loop_ms <= 200),
        note=f"the typical case: the same cell run with a changed size; median of {FIRST_ROUNDS}",
    )
    report(
        "compare, repeated (2 x 1M events, cached)",
        warm_ms,
        "ms",
        target="<= 200",
        met=bool(warm_ms <= 200),
        note=f"median of {REPEATS}",
    )
    http_first, http_cpu, http_warm = over_http(a, b)
    report(
        "compare over HTTP, first answer once indexed (2 x 1M events)",
        http_first,
        "ms",
        target="<= 200",
        met=bool(http_first <= 200),
        note=f"jupyter server on localhost, token auth, warmed by other requests and idle; "
        f"median of 3 fresh servers; server CPU {http_cpu:.0f} ms; repeated: "
        f"{http_warm:.1f} ms (median of {REPEATS}); wall times include the load of the "
        "other processes on this shared machine",
    )


def settle(pid: int, quiet_s: float = 0.05, window_s: float = 0.5, limit_s: float = 30) -> None:
    """Wait until the server's process tree is idle (its parse worker started and done
    importing): less than ``quiet_s`` CPU time in ``window_s``."""
    end = time.monotonic() + limit_s
    last = tree_cpu(pid)
    while time.monotonic() < end:
        time.sleep(window_s)
        now = tree_cpu(pid)
        if now - last < quiet_s:
            return
        last = now


def over_http(a, b, servers: int = 3) -> tuple[float, float, float]:
    """The first answer (median over ``servers`` fresh servers, each warmed by other
    requests and idle), the server's CPU time for it, and the repeated answer."""
    firsts, cpus, warms = [], [], []
    for _ in range(servers):
        first, cpu, warm = one_server(a, b)
        firsts.append(first)
        cpus.append(cpu)
        warms.append(warm)
    return statistics.median(firsts), statistics.median(cpus), statistics.median(warms)


def tree_cpu(pid: int) -> float:
    import psutil

    total = 0.0
    for p in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        try:
            total += sum(p.cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def one_server(a, b) -> tuple[float, float, float]:
    """The first and the repeated answer through a real jupyter server."""
    with jupyter_server(a.parent) as server:
        server.get("experiments")  # a server that has answered before, as one in use has
        settle(server.pid)
        q = urllib.parse.urlencode({"a": a.name, "b": b.name})
        cpu0 = tree_cpu(server.pid)
        first = server.get(f"compare?{q}")
        cpu = (tree_cpu(server.pid) - cpu0) * 1e3
        warm = statistics.median(server.get(f"compare?{q}") for _ in range(REPEATS))
        return first, cpu, warm


if __name__ == "__main__":
    main()
