"""Bounded concurrent load on a real jupyter server with the extension, over loopback:
CLIENTS clients, each sending a timeline, a calltree and a metrics request, one after
another, per round, over four experiments, one of them 10M events; ROUNDS rounds, each
starting when the last one has ended. The traces start unindexed, so the first round also
waits on index builds (single flight: each is built once).

Asserts: every answer is a 200 (so no 5xx) with a well-formed body, and the server
process's memory stays bounded (see RSS_GROWTH_LIMIT). Latencies are printed, never
asserted (this machine is shared and has 2 cores).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.parse
from pathlib import Path

import numpy as np
import psutil
import pytest
from experiment_factory import write_experiment
from synthetic_trace import write_experiment as write_synthetic
from tornado.simple_httpclient import SimpleAsyncHTTPClient

from jupyterlab_scorep.trace import calltree
from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf
from scorep_kernel import region_words as rw

pytestmark = pytest.mark.timeout(600)

CLIENTS = 50
ROUNDS = 3
BIG_EVENTS = 10_000_000
REQUEST_TIMEOUT_S = 400  # generous: a 10M-event index build on a busy 2-core machine
MiB = 2**20
# How much the server process's RSS may grow under the load, over its size before it.
# What it legitimately holds: the memory-mapped indexes it reads (file-backed; the
# 10M-event trace's is ~230 MiB on disk, paged in as queried), the call trees derived
# from the indexes and profiles (the 10M trace has ~200k call paths: ~80 MiB as Python
# objects), and the answers in flight (50 clients; a timeline or call tree answer is under
# 1 MB of JSON, a few MiB as Python objects). Measured here: +620 MiB, of which ~280 MiB
# file-backed, flat after the first round. What must never happen: the events read into
# the server process itself (the parse worker peaks at ~800 MiB for the 10M-event trace,
# on top of the above), or memory that grows with the number of requests. 1 GiB leaves
# room for the first and fails on the second.
RSS_GROWTH_LIMIT = 1024 * MiB


@pytest.fixture(scope="session")
def load_experiments(tmp_path_factory):
    """Four experiments, generated once per session under a pytest tmp dir: the 10M-event
    trace with metrics (call tree from the trace); a 1M-event one with profile.cubex and
    metrics; the small known experiment (cubex, metric files); and a small one whose call
    tree and metrics come from the trace only."""
    root = tmp_path_factory.mktemp("load")
    big = write_synthetic(root / "big-10M", BIG_EVENTS, n_threads=2, metrics=True)
    medium = write_synthetic(root / "medium-1M", 1_000_000, n_threads=4, metrics=True, cubex=True)
    small = write_experiment(root / "small")
    bare = write_experiment(root / "trace-only", cubex=False)
    (bare / ex.METRICS_SCHEMA).unlink()
    (bare / ex.METRICS_DATA).unlink()
    return root, [big, medium, small, bare]


@pytest.fixture
def jp_server_config(load_experiments):
    root, _ = load_experiments
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyterlab_scorep": True},
            "allow_unauthenticated_access": False,
        },
        "ScorePExtension": {"experiment_roots": [str(root)]},
    }


class PeakRss:
    """The peak RSS of this process (the server runs in it) and of its children (the
    parse worker), sampled by a thread, so a blocked event loop does not stop it."""

    def __init__(self, interval_s: float = 0.02):
        self.proc = psutil.Process()
        self.interval_s = interval_s
        info = self.proc.memory_info()
        self.peak = info.rss
        # RSS less its file-backed pages (the memory-mapped indexes, the libraries)
        self.anon_peak = info.rss - info.shared
        self.child_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            info = self.proc.memory_info()
            self.peak = max(self.peak, info.rss)
            self.anon_peak = max(self.anon_peak, info.rss - info.shared)
            for child in self.proc.children(recursive=True):
                try:
                    self.child_peak = max(self.child_peak, child.memory_info().rss)
                except psutil.Error:
                    pass

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def check_timeline(body: dict, width: int) -> None:
    assert {"window", "width", "range", "regions", "locations"} <= set(body)
    t0, t1 = body["window"]
    assert t1 > t0 and body["width"] == width
    used = set()
    for loc in body["locations"]:
        assert {"id", "name", "max_depth", "rows"} <= set(loc)
        for row in loc["rows"]:
            n = len(row["start"])
            assert n and all(len(row[k]) == n for k in ("end", "region", "count"))
            assert all(s <= e for s, e in zip(row["start"], row["end"]))
            assert 0 <= row["depth"] <= loc["max_depth"]
            used.update(row["region"])
    assert {str(r) for r in used} == set(body["regions"])
    for info in body["regions"].values():
        assert info["role"] in rw.REGION_ROLES and isinstance(info["name"], str)


def check_calltree(body: dict) -> None:
    assert body["source"] in ("cubex", "trace") and body["locations"]
    nodes, stack = 0, [body["root"]]
    while stack:
        node = stack.pop()
        nodes += 1
        assert node["incl_s"] >= 0 and node["visits"] >= 0 and isinstance(node["name"], str)
        stack.extend(node["children"])
    assert nodes <= calltree.MAX_NODES + 1  # + a synthetic root
    assert body["total_s"] == body["root"]["incl_s"]


def check_metrics(body: dict, width: int) -> None:
    assert body["series"] and isinstance(body["notes"], list)
    for s in body["series"]:
        n = len(s["t"])
        assert n <= width and all(len(s[k]) == n for k in ("mean", "min", "max"))
        assert s["t"] == sorted(s["t"])


async def test_concurrent_clients_get_well_formed_answers_in_bounded_memory(
    load_experiments, jp_serverapp, http_server_client, jp_base_url, jp_auth_header, capsys
):
    _, experiments = load_experiments
    client = SimpleAsyncHTTPClient(force_instance=True, max_clients=CLIENTS)
    # (round, route, status, bytes, seconds, problem, experiment)
    results: list[tuple[int, str, int, int, float, str, str]] = []

    async def request(r: int, route: str, params: dict, check) -> None:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        # get_url builds http://127.0.0.1:<port><path>: loopback only
        url = http_server_client.get_url(f"{jp_base_url}scorep/api/{route}?{query}")
        started = time.perf_counter()
        response = await client.fetch(
            url, headers=jp_auth_header, raise_error=False, request_timeout=REQUEST_TIMEOUT_S
        )
        seconds = time.perf_counter() - started
        problem = ""
        try:
            body = json.loads(response.body or b"null")
            if response.code == 200:
                check(body)
            else:
                problem = f"{response.code}: {body}"
        except Exception as e:  # recorded, asserted on below with the others
            problem = f"{type(e).__name__}: {e}"
        name = Path(params["path"]).name
        results.append((r, route, response.code, len(response.body or b""), seconds, problem, name))

    wall_s = {exp: mf.read_manifest(exp)["wall_s"] for exp in experiments}

    async def one_client(k: int, r: int) -> None:
        rng = np.random.default_rng([k, r])
        exp = experiments[(k + r) % len(experiments)]
        full = wall_s[exp]
        span = full * 1e9 / 10 ** rng.uniform(0, 4)  # the full run down to 1/10,000
        t0 = int(rng.uniform(0, full * 1e9 - span))
        width = int(rng.integers(200, 2000))
        await request(
            r,
            "timeline",
            {"path": str(exp), "width": width, "t0": t0, "t1": t0 + int(span) + 1},
            lambda b: check_timeline(b, width),
        )
        location = None if k % 2 else 0
        await request(r, "calltree", {"path": str(exp), "location": location}, check_calltree)
        await request(
            r, "metrics", {"path": str(exp), "width": 100}, lambda b: check_metrics(b, 100)
        )

    # Before the load: the server is up and its parse worker started (warm_up).
    rss_after_round = []
    with PeakRss() as rss:
        baseline = rss.proc.memory_info().rss
        started = time.perf_counter()
        for r in range(ROUNDS):
            await asyncio.gather(*(one_client(k, r) for k in range(CLIENTS)))
            rss_after_round.append(rss.proc.memory_info().rss)
        wall = time.perf_counter() - started
    client.close()

    problems = [(route, p) for _, route, _, _, _, p, _ in results if p]
    growth = rss.peak - baseline

    def percentiles(rows) -> str:
        lat = np.array([row[4] for row in rows]) * 1e3
        return f"p50 {np.percentile(lat, 50):6.0f} ms  p95 {np.percentile(lat, 95):6.0f} ms"

    lines = [f"load: {len(results)} requests, {CLIENTS} clients, {ROUNDS} rounds, {wall:.1f} s"]
    for r in range(ROUNDS):
        rows = [row for row in results if row[0] == r]
        what = "cold: includes the index builds" if r == 0 else "warm"
        lines.append(f"  round {r} ({what}): {percentiles(rows)}")
        for route in ("timeline", "calltree", "metrics"):
            of_route = [row for row in rows if row[1] == route]
            largest = max(row[3] for row in of_route) / 1e6
            lines.append(f"    {route:9s} {percentiles(of_route)}  largest {largest:.2f} MB")
        if r == 0:
            for exp in experiments:
                first = [row[4] for row in rows if row[1] == "timeline" and row[6] == exp.name]
                lines.append(f"    first timelines of {exp.name}: max {max(first):.1f} s")
    lines.append(
        f"  server RSS {baseline / MiB:.0f} MiB before, peak {rss.peak / MiB:.0f} MiB "
        f"(+{growth / MiB:.0f} MiB, limit +{RSS_GROWTH_LIMIT / MiB:.0f}); after each round "
        + ", ".join(f"{x / MiB:.0f}" for x in rss_after_round)
        + f" MiB; anonymous (not file-backed) peak {rss.anon_peak / MiB:.0f} MiB"
        + f"; parse worker peak {rss.child_peak / MiB:.0f} MiB"
    )
    with capsys.disabled():
        print("\n" + "\n".join(lines))

    assert len(results) == CLIENTS * ROUNDS * 3
    assert not [row for row in results if row[2] >= 500], f"5xx answers: {problems[:5]}"
    assert not problems, f"{len(problems)} bad answers, e.g. {problems[:5]}"
    assert growth < RSS_GROWTH_LIMIT, "\n".join(lines)
