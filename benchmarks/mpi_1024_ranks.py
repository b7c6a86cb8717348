"""A 1,024-rank MPI trace: how fast the builtin backend's merge writes it and how fast the
server answers for it (simulated ranks: no 1,024 processes run here).

The experiment is what a 1,024-rank builtin MPI cell leaves: per rank a Recording (a cell
region, CALLS calls of 20 functions, every 50th an ``MPI_Send`` to the next rank in a ring,
with its OTF2 message event) in ``.ranks/``, merged by ``mpi.merge`` into one OTF2 archive
(a location group per rank) and one CUBE4 profile, as after a real cell. Ranks 1000 and up
compute 1.5x longer, so the imbalance verdict has ranks to name.

Figures: the merge's rate (events/s); through a real jupyter server on localhost the
first timeline answer, the heat map's and one row per rank's timeline p95, GET ranks and
GET summary (``_mpi_figures``, shared with mpi_100m_events.py); and, in this process, the
OTF2 read's rate in events per CPU-second (target >= 10M) beside the whole index build's.

Run: ``python benchmarks/mpi_1024_ranks.py`` (~1-2 min; the archive is made in a temporary
directory).
"""

from __future__ import annotations

import json
import pickle
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "kernel")]

from _mpi_figures import report_server, server_figures, spread  # noqa: E402
from _report import report  # noqa: E402

RANKS = 1024
CALLS = 1000  # per rank: 2,000 enter/leave events and CALLS / MPI_EVERY sends
MPI_EVERY = 50
INGEST_ROUNDS = 3


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


def main() -> None:
    from scorep_kernel import manifest as mf

    with tempfile.TemporaryDirectory() as tmp:
        exp = Path(tmp) / "mpi-1024"
        make_experiment(exp)
        merge_s = finish_experiment(exp)
        manifest = mf.read_manifest(exp)
        assert (manifest["status"], manifest["files_status"]) == (mf.STATUS_OK, mf.FILES_READY)
        events = manifest["measurement"]["merge"]["events"]
        figures = server_figures(Path(tmp), exp, RANKS)
        read_rate, build_rate, read_share = ingest(exp, events)
    report(f"merge of {RANKS} ranks' recordings ({events / 1e6:.1f}M events)", events / merge_s,
           "events/s", note=f"{merge_s:.1f} s, OTF2 + CUBE4")  # fmt: skip
    report_server(figures)
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
