"""A 1,024-rank MPI trace: how fast the builtin backend's merge writes it and how fast the
server answers for it (simulated ranks: no 1,024 processes run here).

The experiment is what a 1,024-rank builtin MPI cell leaves: per rank a Recording (a cell
region, CALLS calls of 20 functions, every 50th an ``MPI_Send`` to the next rank in a ring,
with its OTF2 message event) in ``.ranks/``, merged by ``mpi.merge`` into one OTF2 archive
(a location group per rank) and one CUBE4 profile, as after a real cell. Ranks 1000 and up
compute 1.5x longer, so the imbalance verdict has ranks to name.

Figures, through a real jupyter server on localhost (wall times, on a shared machine):
the merge's rate (events/s), the first timeline answer (builds the index), timeline p50 /
p95 over ROUNDS random windows at 1600 px with the ranks aggregated (``rows=256``: 1,024
ranks do not fit, so the answer is the ranks x time heat map; target p95 <= 50
ms), interleaved with the same windows one row per rank (``rows=1024``, the peer) and one row
per rank for the ranks the panel has in view when it scrolls them (``ranks=lo:hi``,
VIEW_RANKS ranks at a random place: the rows in view and as many again either side); GET
ranks (``matrix=pairs``: the 1,024 x 1,024 communication matrix and the per-rank times; target <= 100 ms
warm) over RANKS_ROUNDS requests, median and range; GET summary with the imbalance
verdict; and, in this process, the OTF2 read's rate in events per CPU-second (target >=
10M) beside the whole index build's.

Run: ``python benchmarks/mpi_1024_ranks.py`` (~1-2 min; the archive is made in a temporary
directory).
"""

from __future__ import annotations

import json
import pickle
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "kernel")]

from _jupyter_server import jupyter_server  # noqa: E402
from _report import report  # noqa: E402

RANKS = 1024
CALLS = 1000  # per rank: 2,000 enter/leave events and CALLS / MPI_EVERY sends
MPI_EVERY = 50
ROUNDS = 60
RANKS_ROUNDS = 9
INGEST_ROUNDS = 3
WIDTH = 1600
HEAT_ROWS = 256  # the rows the heat map is asked for
VIEW_RANKS = 33  # one row per rank, scrolled: 11 rows in view (334 px of 34) and 11 either side


def make_experiment(exp: Path) -> None:
    from scorep_kernel import manifest as mf
    from scorep_kernel.formats.recording import ROLE_CELL, Recording, Region, ThreadEvents
    from scorep_kernel.measure import mpi_calls
    from scorep_kernel.measure.mpi_calls import RankMpi
    from scorep_kernel.mpi.common import RANKS_DIR, RANKS_JSON, rank_file

    exp.mkdir()
    manifest = mf.new_manifest(exp.name, backend="builtin", isolation="subprocess",
                                       cells=[])  # fmt: skip
    manifest["mpi"] = {"ranks": RANKS, "hosts": {"node": list(range(RANKS))}}
    manifest["files_status"] = mf.FILES_PENDING
    mf.write_manifest(exp, manifest)
    regions = [Region("cell [1]", "cell", "", 0, ROLE_CELL)]
    regions += [Region(f"__main__:f{i}", "__main__", "", i) for i in range(20)]
    regions.append(Region(mpi_calls.region_name("Send"), "MPI"))
    send = len(regions) - 1
    t0 = 5_000_000_000
    k = np.arange(CALLS)
    region = np.where(k % MPI_EVERY == 0, send, 1 + k % 20).astype(np.int32)
    sends = np.flatnonzero(region == send)
    for r in range(RANKS):
        step = 1500 if r >= 1000 else 1000  # the slow ranks
        times = np.empty(2 * CALLS + 2, np.int64)
        times[0], times[-1] = t0, t0 + step * CALLS + 10
        times[1:-1:2] = t0 + step * k + 1
        times[2:-1:2] = t0 + step * k + step // 2
        regs = np.empty(2 * CALLS + 2, np.int32)
        regs[0] = regs[-1] = 0
        regs[1:-1:2] = regs[2:-1:2] = region
        kinds = np.zeros(2 * CALLS + 2, np.int8)
        kinds[0], kinds[1:-1:2] = 1, 1
        thread = ThreadEvents("Master thread", 7, times, regs, kinds)
        rec = Recording(regions, [thread], 0, t0, int(times[-1]), hostname="node")
        n = sends.size
        mpi = RankMpi(
            rank=r, region_names=[regions[send].name], comms=[("MPI_COMM_WORLD", tuple(range(RANKS)))],
            call_thread=np.full(n, 7), call_t0=t0 + step * sends + 1,
            call_t1=t0 + step * sends + step // 2, call_region=np.zeros(n, np.int32),
            ev_call=np.arange(n), ev_kind=np.full(n, mpi_calls.SEND, np.int8),
            ev_comm=np.zeros(n, np.int32), ev_peer=np.full(n, (r + 1) % RANKS),
            ev_tag=np.zeros(n, np.int64), ev_bytes=np.full(n, 4096),
            ev_bytes_recv=np.zeros(n, np.int64), ev_op=np.zeros(n, np.int16),
            ev_request=np.zeros(n, np.int64),
        )  # fmt: skip
        path = rank_file(exp, r)
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(pickle.dumps({"rank": r, "recording": rec, "mpi": mpi}, protocol=5))
    (exp / RANKS_DIR / RANKS_JSON).write_text(json.dumps({
        "epoch_offset_ns": 1_700_000_000_000_000_000,
        "ranks": [{"rank": r, "hostname": "node", "clock": {}} for r in range(RANKS)],
    }))  # fmt: skip


def finish_experiment(exp: Path) -> float:
    """What the kernel does once the ranks of a builtin MPI cell have ended: the run is over
    (manifest status "ok", its end and wall time, at the cell's reply), then the ranks'
    recordings merged into one OTF2 archive and one CUBE4 profile (``files_status``
    "ready"). The merge's wall seconds; RuntimeError when it fails. (The Galata fixture
    ui-tests/fixtures/many_ranks.py finishes its experiment with this too.)"""
    from scorep_kernel import manifest as mf
    from scorep_kernel.mpi import merge

    manifest = mf.read_manifest(exp)
    end_ns = time.time_ns()
    wall_s = (end_ns - manifest["start_ns"]) / 1e9
    mf.update_manifest(exp, status=mf.STATUS_OK, end_ns=end_ns, wall_s=wall_s)
    start = time.perf_counter()
    if merge.merge_files(exp) != 0:
        raise RuntimeError(f"merging the ranks of {exp} failed: see its manifest's errors")
    return time.perf_counter() - start


def fetch(server, route: str) -> tuple[float, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/scorep/api/{route}",
        headers={"Authorization": f"token {server.token}"},
    )
    t = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as r:
        body = r.read()
    return (time.perf_counter() - t) * 1e3, body


def ingest(exp: Path, events: int) -> tuple[list[float], list[float], list[float]]:
    """events / CPU-s of the OTF2 read alone and of the whole index build, interleaved,
    and the share of the build's wall time that went to its read (meta build_s)."""
    from jupyterlab_scorep.trace import index_build, otf2_read
    from scorep_kernel import experiment

    read, build, read_share = [], [], []
    for i in range(INGEST_ROUNDS):
        with tempfile.TemporaryDirectory() as out:
            for which in ("read", "build") if i % 2 == 0 else ("build", "read"):
                c = time.process_time()
                if which == "read":
                    otf2_read.read_trace(str(exp / experiment.OTF2_ANCHOR))
                    read.append(events / (time.process_time() - c))
                else:
                    meta = index_build.build_index(exp, out)
                    build.append(events / (time.process_time() - c))
                    read_share.append(meta["build_s"]["read"] / meta["build_s"]["total"])
    return read, build, read_share


def spread(values: list[float], digits: int = 1) -> str:
    return f"median {np.median(values):.{digits}f}, range {min(values):.{digits}f}-{max(values):.{digits}f}"


def main() -> None:
    from scorep_kernel import manifest as mf

    with tempfile.TemporaryDirectory() as tmp:
        exp = Path(tmp) / "mpi-1024"
        make_experiment(exp)
        merge_s = finish_experiment(exp)
        manifest = mf.read_manifest(exp)
        assert (manifest["status"], manifest["files_status"]) == (mf.STATUS_OK, mf.FILES_READY)
        events = manifest["measurement"]["merge"]["events"]
        q = {"path": exp.name}
        with jupyter_server(Path(tmp)) as server:
            first_ms, body = fetch(
                server, "timeline?" + urllib.parse.urlencode({**q, "width": WIDTH})
            )
            full = json.loads(body)
            t_end = int(full.get("t1") or full.get("range", [0, 0])[1])
            rng = np.random.default_rng(7)
            kinds = ("heat", "rows", "view")
            times: dict[str, list[float]] = {k: [] for k in kinds}
            sizes: dict[str, list[int]] = {k: [] for k in kinds}
            for i in range(ROUNDS):
                span = t_end if i == 0 else int(t_end / 10 ** rng.uniform(0, 3))
                t0 = int(rng.integers(0, max(t_end - span, 1)))
                window = {**q, "t0": t0, "t1": t0 + span, "width": WIDTH}
                lo = int(rng.integers(0, RANKS - VIEW_RANKS + 1))
                for kind in kinds[i % 3 :] + kinds[: i % 3]:
                    extra: dict[str, object] = {
                        "heat": {"rows": HEAT_ROWS},
                        "rows": {"rows": RANKS},
                        "view": {"ranks": f"{lo}:{lo + VIEW_RANKS}"},
                    }[kind]
                    ms, body = fetch(
                        server, "timeline?" + urllib.parse.urlencode({**window, **extra})
                    )
                    times[kind].append(ms)
                    sizes[kind].append(len(body))
                    if kind == "heat":
                        heat_body = body
            pairs = {**q, "matrix": "pairs"}
            ranks_first, _ = fetch(server, "ranks?" + urllib.parse.urlencode(pairs))
            ranks_times = []
            for _ in range(RANKS_ROUNDS):
                ms, ranks_body = fetch(server, "ranks?" + urllib.parse.urlencode(pairs))
                ranks_times.append(ms)
            summary_ms, summary_body = fetch(server, "summary?" + urllib.parse.urlencode(q))
        read_rate, build_rate, read_share = ingest(exp, events)
    answer = json.loads(ranks_body)
    matrix = answer.get("matrix") or {}
    n_matrix = matrix.get("size") or len(matrix.get("bytes") or [])
    verdicts = [
        v.get("text") or v.get("title") for v in json.loads(summary_body).get("verdicts", [])
    ]
    heat = json.loads(heat_body).get("heatmap")
    p95 = {k: float(np.percentile(v, 95)) for k, v in times.items()}
    p50 = {k: float(np.percentile(v, 50)) for k, v in times.items()}
    report(f"merge of {RANKS} ranks' recordings ({events / 1e6:.1f}M events)", events / merge_s,
           "events/s", note=f"{merge_s:.1f} s, OTF2 + CUBE4")  # fmt: skip
    report(f"first timeline answer, {RANKS} ranks (index built)", first_ms, "ms")
    report(f"timeline p95 over HTTP, {RANKS} ranks aggregated (heat map)", p95["heat"], "ms",
           peer="one row per rank (rows=1024), same windows", peer_value=p95["rows"],
           target="<= 50", met=bool(p95["heat"] <= 50),
           note=f"p50 {p50['heat']:.1f} ms (one row per rank {p50['rows']:.1f}), {ROUNDS} "
           f"windows at {WIDTH} px, interleaved; largest answer {max(sizes['heat']) / 1e6:.2f} MB "
           f"(one row per rank {max(sizes['rows']) / 1e6:.2f}); heat map "
           f"{len(heat['rows']) if heat else 0} rows x {heat['columns'] if heat else 0} columns")  # fmt: skip
    report(f"timeline p95 over HTTP, {RANKS} ranks one row per rank, the {VIEW_RANKS} in view "
           "(ranks=lo:hi)", p95["view"], "ms",
           peer=f"all {RANKS} rows, same windows", peer_value=p95["rows"],
           note=f"p50 {p50['view']:.1f} ms (all rows {p50['rows']:.1f}), {ROUNDS} windows, "
           f"interleaved with the heat map's; largest answer {max(sizes['view']) / 1e6:.2f} MB")  # fmt: skip
    report(f"GET ranks, {RANKS} ranks (matrix {n_matrix} x {n_matrix})",
           float(np.median(ranks_times)), "ms", target="<= 100",
           met=bool(np.median(ranks_times) <= 100),
           note=f"{spread(ranks_times)} over {RANKS_ROUNDS}; first {ranks_first:.0f} ms (reads "
           f"the trace's messages), {len(ranks_body) / 1e6:.2f} MB, "
           f"{len((matrix.get('pairs') or {}).get('sender') or [])} non-zero pairs")  # fmt: skip
    report(f"GET summary, {RANKS} ranks", summary_ms, "ms",
           note="verdicts: " + " | ".join(str(v) for v in verdicts)[:400])  # fmt: skip
    report(f"OTF2 read of the {RANKS}-rank archive (native scanner)",
           float(np.median(read_rate)), "events/CPU-s",
           peer="whole index build (read, levels, call paths, write)",
           peer_value=float(np.median(build_rate)), target=">= 1e7",
           met=bool(np.median(read_rate) >= 1e7),
           note=f"read {spread([r / 1e6 for r in read_rate], 2)} M; build "
           f"{spread([r / 1e6 for r in build_rate], 2)} M, over {INGEST_ROUNDS} interleaved "
           f"rounds; the read is {100 * float(np.median(read_share)):.0f} % of the build's "
           "wall time (the rest: pairing calls, levels, call paths, writing)")  # fmt: skip


if __name__ == "__main__":
    main()
