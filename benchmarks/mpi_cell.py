"""MPI cells: what running a profiled cell as 4 ranks costs, how fast an interrupt stops
every rank, and how fast the builtin backend merges the ranks' recordings.

Figures, in one run on one machine:

- kept ranks: the round trip of a trivial 4-rank profiled cell (builtin backend, ``x = 1``)
  once the ranks are up (they stay up between cells, mpi.kept_ranks), cells back to back,
  against the peer ``mpirun -n 4 python -c pass``, the two interleaved over KEPT_ROUNDS
  rounds: medians with their ranges; then KEPT_ROUNDS cells back to back (each meets the
  previous cell's merge, ``mpi.merger``); the issue's target is <= 0.3 s;
- launch: the round trip of a trivial 4-rank profiled cell in fresh ranks (``--fresh``,
  as every Score-P cell is: Score-P measures a process from its start to its end; median
  of 3) against the peer ``mpirun -n 4 python -c pass`` (median of 3, the launcher alone)
  and ``mpirun -n 4 python -c "from mpi4py import MPI"`` (plus MPI's start-up, which every
  fresh rank pays too): what the kernel adds is the difference;
- interrupt: from the interrupt request to the cell's reply, for 4 ranks of which 3 sleep
  in Python and one waits in MPI_Recv for a message that never comes (killed after
  ``INTERRUPT_GRACE_S``); the issue asks for every rank stopped within 1 s;
- merge: the rate at which ``mpi.merge`` writes 4 ranks' recordings (1M enter/leave
  events each, 10k MPI calls each) as one OTF2 archive and one CUBE4 profile, events per
  second of the whole merge, with the OTF2 part alone beside it.

Run: ``python benchmarks/mpi_cell.py`` (~1 min; needs mpirun and mpi4py, skipped without).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "kernel")]

from _kernel_client import Kernel  # noqa: E402
from _report import report  # noqa: E402

RANKS = 4
KEPT_ROUNDS = 9
META = {"scorep": {"profile": True, "backend": "builtin", "mpi": {"ranks": RANKS}}}
FRESH = {"scorep": {"profile": True, "backend": "builtin", "mpi": {"ranks": RANKS, "fresh": True}}}


def launcher() -> list[str]:
    argv = ["mpirun", "-n", str(RANKS), "--oversubscribe"]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    return argv


def bare(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([*launcher(), sys.executable, "-c", code], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - start


def interrupt_seconds(kernel: Kernel) -> float:
    code = (
        "from mpi4py import MPI\nimport time, numpy as np\ncomm = MPI.COMM_WORLD\n"
        "print('ready', flush=True)\n"
        f"if comm.Get_rank() == {RANKS - 1}:\n    comm.Recv(np.zeros(1), source=0)\n"
        "else:\n    time.sleep(600)\n"
    )
    msg = kernel.kc.session.msg(
        "execute_request",
        dict(
            code=code,
            silent=False,
            store_history=True,
            user_expressions={},
            allow_stdin=False,
            stop_on_error=True,
        ),
        metadata=META,
    )
    kernel.kc.shell_channel.send(msg)
    msg_id = msg["header"]["msg_id"]
    seen = 0
    while seen < RANKS:  # every rank is in its cell
        m = kernel.kc.get_iopub_msg(timeout=120)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "stream":
            seen += m["content"]["text"].count("ready")
    time.sleep(0.3)
    start = time.perf_counter()
    kernel.km.interrupt_kernel()
    while True:
        r = kernel.kc.get_shell_msg(timeout=60)
        if r["parent_header"].get("msg_id") == msg_id:
            break
    elapsed = time.perf_counter() - start
    assert r["content"]["status"] == "error", r["content"]
    while True:  # drain to idle
        m = kernel.kc.get_iopub_msg(timeout=60)
        if (m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"):  # fmt: skip
            break
    return elapsed


def merge_rate(tmp: Path) -> tuple[float, float, int]:
    """(events/s of the whole merge, events/s of its OTF2 part, events)."""
    import numpy as np

    from scorep_kernel import manifest as mf
    from scorep_kernel.formats.recording import ROLE_CELL, Recording, Region, ThreadEvents
    from scorep_kernel.measure import mpi_calls
    from scorep_kernel.measure.mpi_calls import RankMpi
    from scorep_kernel.mpi import merge
    from scorep_kernel.mpi.common import RANKS_DIR, RANKS_JSON, rank_file

    exp = tmp / "merge"
    exp.mkdir()
    mf.write_manifest(
        exp, mf.new_manifest("m", backend="builtin", isolation="subprocess", cells=[])
    )
    calls, mpi_every = 500_000, 50  # 1M events per rank, an MPI call every 50th call
    regions = [Region("cell [1]", "cell", "", 0, ROLE_CELL)]
    regions += [Region(f"__main__:f{i}", "__main__", "", i) for i in range(20)]
    regions.append(Region(mpi_calls.region_name("Send"), "MPI"))
    send = len(regions) - 1
    t0 = 5_000_000_000
    for r in range(RANKS):
        k = np.arange(calls)
        region = np.where(k % mpi_every == 0, send, 1 + k % 20).astype(np.int32)
        times = np.empty(2 * calls + 2, np.int64)
        times[0], times[-1] = t0, t0 + 1000 * calls + 10
        times[1:-1:2] = t0 + 1000 * k + 1
        times[2:-1:2] = t0 + 1000 * k + 500
        regs = np.empty(2 * calls + 2, np.int32)
        regs[0] = regs[-1] = 0
        regs[1:-1:2] = regs[2:-1:2] = region
        kinds = np.zeros(2 * calls + 2, np.int8)
        kinds[0], kinds[1:-1:2] = 1, 1
        thread = ThreadEvents("Master thread", 7, times, regs, kinds)
        rec = Recording(regions, [thread], 0, t0, int(times[-1]), hostname="node")
        sends = np.flatnonzero(region == send)
        n = sends.size
        mpi = RankMpi(
            rank=r, region_names=[regions[send].name], comms=[("MPI_COMM_WORLD", tuple(range(RANKS)))],
            call_thread=np.full(n, 7), call_t0=t0 + 1000 * sends + 1,
            call_t1=t0 + 1000 * sends + 500, call_region=np.zeros(n, np.int32),
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
    start = time.perf_counter()
    result = merge.merge(exp)
    whole = time.perf_counter() - start
    events = result["notes"]["events"]
    otf2_s = result["notes"]["merge_seconds"]["traces.otf2"]
    return events / whole, events / otf2_s, events


def main() -> None:
    if shutil.which("mpirun") is None:
        print("no mpirun: skipped")
        return
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        print("no mpi4py: skipped")
        return
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as cwd:
        bare_pass = statistics.median(bare("pass") for _ in range(3))
        bare_mpi = statistics.median(bare("from mpi4py import MPI") for _ in range(3))
        kernel = Kernel("scorep-python", cwd=cwd)
        try:
            kernel.run("x = 0")
            cells = []
            for _ in range(3):
                result = kernel.run("x = 1", FRESH)
                assert result.status == "ok", result.error
                cells.append(result.seconds)
            assert kernel.run("x = 1", META).status == "ok"  # the ranks start here
            kept, peer = [], []
            for _ in range(KEPT_ROUNDS):
                result = kernel.run("x = 1", META)
                assert result.status == "ok", result.error
                kept.append(result.seconds)
                peer.append(bare("pass"))
            burst = []  # back to back: each cell meets the previous one's merge
            for _ in range(KEPT_ROUNDS):
                result = kernel.run("x = 1", META)
                assert result.status == "ok", result.error
                burst.append(result.seconds)
            stop = interrupt_seconds(kernel)
        finally:
            kernel.close()
        rate, otf2_rate, events = merge_rate(Path(cwd))
    cell = statistics.median(cells)
    k, p = statistics.median(kept), statistics.median(peer)
    report(
        f"profiled {RANKS}-rank cell round trip, ranks kept up (builtin, x = 1)", k, "s",
        peer=f"mpirun -n {RANKS} python -c pass", peer_value=p, target="<= 0.3 s", met=k <= 0.3,
        note=f"{KEPT_ROUNDS} interleaved rounds: kept {min(kept):.3f}-{max(kept):.3f} s, "
        f"peer {min(peer):.3f}-{max(peer):.3f} s",
    )  # fmt: skip
    b = statistics.median(burst)
    report(
        f"profiled {RANKS}-rank cells back to back, ranks kept up (builtin, x = 1)", b, "s",
        target="<= 0.3 s", met=b <= 0.3,
        note=f"{KEPT_ROUNDS} cells: {min(burst):.3f}-{max(burst):.3f} s",
    )  # fmt: skip
    report(
        f"profiled {RANKS}-rank cell round trip, fresh ranks (builtin, x = 1)", cell, "s",
        peer=f"mpirun -n {RANKS} python -c pass", peer_value=bare_pass,
        note=f"mpirun -n {RANKS} python -c 'from mpi4py import MPI': {bare_mpi:.2f} s; "
        f"the kernel adds {cell - bare_mpi:.2f} s over MPI's own start",
    )  # fmt: skip
    report(
        f"interrupt to reply, {RANKS} ranks (one blocked in MPI_Recv)", stop, "s",
        target="< 1 s", met=stop < 1.0,
    )  # fmt: skip
    report(
        f"merge of {RANKS} ranks' recordings ({events / 1e6:.1f}M events, OTF2 + CUBE4)", rate,
        "events/s", note=f"the OTF2 part alone: {otf2_rate:.3g} events/s",
    )  # fmt: skip


if __name__ == "__main__":
    main()
