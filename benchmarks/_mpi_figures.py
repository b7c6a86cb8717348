"""What the many-rank benchmarks (mpi_1024_ranks.py, mpi_100m_events.py) ask a real jupyter
server about an MPI run, and how they state it.

Through a server on localhost (wall times, on a shared machine): the first timeline answer
(builds the index), timeline p50 / p95 over ROUNDS random windows at WIDTH px with the
ranks aggregated (``rows=HEAT_ROWS``: 1,024 ranks do not fit, so the answer is the ranks x
time heat map; target p95 <= 50 ms), interleaved with the same windows one row per rank
(``rows=<ranks>``, the peer) and one row per rank for the ranks the panel has in view when
it scrolls them (``ranks=lo:hi``, VIEW_RANKS ranks at a random place: the rows in view and
as many again either side); GET ranks (``matrix=pairs``: the N x N communication matrix and
the per-rank times; target <= 100 ms warm) over RANKS_ROUNDS requests, median and range;
GET summary with the imbalance verdict.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _jupyter_server import jupyter_server
from _report import report

ROUNDS = 60
RANKS_ROUNDS = 9
WIDTH = 1600
HEAT_ROWS = 256  # the rows the heat map is asked for
VIEW_RANKS = 33  # one row per rank, scrolled: 11 rows in view (334 px of 34) and 11 either side


@dataclass
class ServerFigures:
    ranks: int
    first_ms: float
    times: dict[str, list[float]]  # "heat", "rows", "view": ms per window
    sizes: dict[str, list[int]]  # bytes per answer
    heat: dict | None  # the last heat-map answer's heatmap
    ranks_first_ms: float
    ranks_ms: list[float]
    ranks_body: dict
    summary_ms: float
    verdicts: list[str]


def fetch(server, route: str) -> tuple[float, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/scorep/api/{route}",
        headers={"Authorization": f"token {server.token}"},
    )
    t = time.perf_counter()
    with urllib.request.urlopen(request, timeout=900) as r:
        body = r.read()
    return (time.perf_counter() - t) * 1e3, body


def spread(values: list[float], digits: int = 1) -> str:
    return f"median {np.median(values):.{digits}f}, range {min(values):.{digits}f}-{max(values):.{digits}f}"


def server_figures(root: Path, exp: Path, ranks: int) -> ServerFigures:
    """Start a server on ``root`` and ask it about ``exp`` (whose index it builds)."""
    q = {"path": exp.name}
    with jupyter_server(root) as server:
        first_ms, body = fetch(server, "timeline?" + urllib.parse.urlencode({**q, "width": WIDTH}))
        full = json.loads(body)
        t_end = int(full.get("t1") or full.get("range", [0, 0])[1])
        rng = np.random.default_rng(7)
        kinds = ("heat", "rows", "view")
        times: dict[str, list[float]] = {k: [] for k in kinds}
        sizes: dict[str, list[int]] = {k: [] for k in kinds}
        heat_body = b"{}"
        for i in range(ROUNDS):
            span = t_end if i == 0 else int(t_end / 10 ** rng.uniform(0, 3))
            t0 = int(rng.integers(0, max(t_end - span, 1)))
            window = {**q, "t0": t0, "t1": t0 + span, "width": WIDTH}
            lo = int(rng.integers(0, ranks - VIEW_RANKS + 1))
            for kind in kinds[i % 3 :] + kinds[: i % 3]:
                extra: dict[str, object] = {
                    "heat": {"rows": HEAT_ROWS},
                    "rows": {"rows": ranks},
                    "view": {"ranks": f"{lo}:{lo + VIEW_RANKS}"},
                }[kind]
                ms, body = fetch(server, "timeline?" + urllib.parse.urlencode({**window, **extra}))
                times[kind].append(ms)
                sizes[kind].append(len(body))
                if kind == "heat":
                    heat_body = body
        pairs = {**q, "matrix": "pairs"}
        ranks_first, _ = fetch(server, "ranks?" + urllib.parse.urlencode(pairs))
        ranks_times = []
        ranks_body = b"{}"
        for _ in range(RANKS_ROUNDS):
            ms, ranks_body = fetch(server, "ranks?" + urllib.parse.urlencode(pairs))
            ranks_times.append(ms)
        summary_ms, summary_body = fetch(server, "summary?" + urllib.parse.urlencode(q))
    verdicts = [
        str(v.get("text") or v.get("title")) for v in json.loads(summary_body).get("verdicts", [])
    ]
    return ServerFigures(
        ranks, first_ms, times, sizes, json.loads(heat_body).get("heatmap"), ranks_first,
        ranks_times, json.loads(ranks_body), summary_ms, verdicts,
    )  # fmt: skip


def report_server(f: ServerFigures, label: str = "") -> None:
    """The rows of ``f``; ``label`` goes after the rank count in each row's name."""
    n = f"{f.ranks} ranks{label}"
    matrix = f.ranks_body.get("matrix") or {}
    n_matrix = matrix.get("size") or len(matrix.get("bytes") or [])
    heat = f.heat
    p95 = {k: float(np.percentile(v, 95)) for k, v in f.times.items()}
    p50 = {k: float(np.percentile(v, 50)) for k, v in f.times.items()}
    report(f"first timeline answer, {n} (index built)", f.first_ms, "ms")
    report(f"timeline p95 over HTTP, {n} aggregated (heat map)", p95["heat"], "ms",
           peer=f"one row per rank (rows={f.ranks}), same windows", peer_value=p95["rows"],
           target="<= 50", met=bool(p95["heat"] <= 50),
           note=f"p50 {p50['heat']:.1f} ms (one row per rank {p50['rows']:.1f}), {ROUNDS} "
           f"windows at {WIDTH} px, interleaved; largest answer {max(f.sizes['heat']) / 1e6:.2f} MB "
           f"(one row per rank {max(f.sizes['rows']) / 1e6:.2f}); heat map "
           f"{len(heat['rows']) if heat else 0} rows x {heat['columns'] if heat else 0} columns")  # fmt: skip
    report(f"timeline p95 over HTTP, {n} one row per rank, the {VIEW_RANKS} in view "
           "(ranks=lo:hi)", p95["view"], "ms",
           peer=f"all {f.ranks} rows, same windows", peer_value=p95["rows"],
           note=f"p50 {p50['view']:.1f} ms (all rows {p50['rows']:.1f}), {ROUNDS} windows, "
           f"interleaved with the heat map's; largest answer {max(f.sizes['view']) / 1e6:.2f} MB")  # fmt: skip
    report(f"GET ranks, {n} (matrix {n_matrix} x {n_matrix})",
           float(np.median(f.ranks_ms)), "ms", target="<= 100",
           met=bool(np.median(f.ranks_ms) <= 100),
           note=f"{spread(f.ranks_ms)} over {RANKS_ROUNDS}; first {f.ranks_first_ms:.0f} ms (reads "
           f"the trace's messages), {len(json.dumps(f.ranks_body)) / 1e6:.2f} MB, "
           f"{len((matrix.get('pairs') or {}).get('sender') or [])} non-zero pairs")  # fmt: skip
    report(f"GET summary, {n}", f.summary_ms, "ms",
           note="verdicts: " + " | ".join(f.verdicts)[:400])  # fmt: skip
