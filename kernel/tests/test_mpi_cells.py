"""MPI cells through the real kernel, Debian's Open MPI and mpi4py: a ring exchange and an
allreduce on 2 and 4 ranks read back with otf2-print and pycubexr, rank 0's state and a
gathered value in the notebook, a rank that raises, a rank that calls os._exit, a rank
past the timeout, and an interrupt. (How fast every rank stops is benchmarks/mpi_cell.py's
figure, not an assert here.) One kernel for the module; its ranks stay up between cells
asking for the same ranks (test_mpi_kept.py checks that) and are started anew (~1.5 s for 4
ranks here) after a cell that stopped them or asked for another count."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from test_kernel_harness import KernelHandle, wait_files

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(
        shutil.which("mpirun") is None,
        reason="no mpirun on PATH (make setup installs Debian's openmpi-bin)",
    ),
]
mpi4py = pytest.importorskip("mpi4py", reason="mpi4py is not installed (the test extra has it)")

OTF2_PRINT = shutil.which("otf2-print") or (
    "/opt/scorep/bin/otf2-print" if os.access("/opt/scorep/bin/otf2-print", os.X_OK) else None
)


def mpi_meta(ranks: int, **more) -> dict:
    return {"scorep": {"profile": True, "backend": "builtin", "mpi": {"ranks": ranks, **more}}}


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k = KernelHandle(tmp_path_factory.mktemp("mpi"))
    assert k.run("import os\nvalue = 'before'\nbase = 40").status == "ok"
    yield k
    k.shutdown()


RING = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
out = np.zeros(10 * ((rank - 1) % size + 1))
sent = np.full(10 * (rank + 1), float(rank))          # 80 * (rank + 1) bytes to the right
if rank % 2 == 0:
    comm.Send(sent, dest=(rank + 1) % size, tag=7)
    comm.Recv(out, source=(rank - 1) % size, tag=7)
else:
    comm.Recv(out, source=(rank - 1) % size, tag=7)
    comm.Send(sent, dest=(rank + 1) % size, tag=7)
total = comm.allreduce(base + rank)
print('from', (rank - 1) % size, 'got', out[0])
mine = rank * 10
if rank == 0:
    only_on_zero = 'zero'
"""


def events(anchor: Path) -> list[str]:
    if not OTF2_PRINT:  # the notebook-facing checks above ran; the archive's need it
        pytest.skip("no otf2-print (Debian's otf2-tools, which make setup installs)")
    out = subprocess.run([OTF2_PRINT, str(anchor)], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def definitions(anchor: Path) -> list[str]:
    if not OTF2_PRINT:
        pytest.skip("no otf2-print (Debian's otf2-tools, which make setup installs)")
    out = subprocess.run([OTF2_PRINT, "-G", str(anchor)], capture_output=True, text=True,
                         check=True)  # fmt: skip
    return out.stdout.splitlines()


@pytest.mark.parametrize("n", [2, 4])
def test_ring_and_allreduce(kernel, n):
    result = kernel.run(RING, mpi_meta(n, gather=["mine"]), timeout=120)
    assert result.status == "ok", result.reply
    out = result.stdout()
    for r in range(n):  # every rank's line, labelled with its rank
        assert f"[rank {r}] from {(r - 1) % n} got {float((r - 1) % n)}\n" in out
    # rank 0's namespace came back, the gathered value is every rank's, in rank order
    assert kernel.value("total") == sum(40 + r for r in range(n))
    assert kernel.value("rank") == 0 and kernel.value("only_on_zero") == "zero"
    assert kernel.value("mine") == [10 * r for r in range(n)]
    assert kernel.value("'MPI' in globals()") is False  # mpi4py stays in the ranks
    manifest = wait_files(Path(result.bundle()["path"]))
    assert manifest["files_status"] == "ready", manifest["errors"]
    assert manifest["mpi"]["ranks"] == n and result.bundle()["mpi"]["ranks"] == n
    anchor = Path(result.bundle()["path"]) / "traces.otf2"
    groups = [line for line in definitions(anchor) if line.startswith("LOCATION_GROUP")]
    assert len(groups) == n and all(f'"MPI Rank {r}"' in groups[r] for r in range(n))
    lines = events(anchor)
    sends = [line.split() for line in lines if line.startswith("MPI_SEND")]
    recvs = [line.split() for line in lines if line.startswith("MPI_RECV")]
    assert len(sends) == n and len(recvs) == n
    for r in range(n):  # location r sent 80 * (r + 1) bytes to r + 1 with tag 7
        send = next(s for s in sends if s[1] == str(r))
        text = " ".join(send)
        assert f"Receiver: {(r + 1) % n} " in text and "Tag: 7," in text
        assert text.endswith(f"Length: {80 * (r + 1)}")
        recv = " ".join(next(x for x in recvs if x[1] == str(r)))
        assert f"Sender: {(r - 1) % n} " in recv and recv.endswith(
            f"Length: {80 * ((r - 1) % n + 1)}"
        )
    ends = [line for line in lines if line.startswith("MPI_COLLECTIVE_END")]
    assert len(ends) == n and all("Operation: ALLREDUCE" in e for e in ends)
    # the profile: a process per rank, each rank's calls counted on its own location
    from pycubexr import CubexParser

    with CubexParser(str(anchor.parent / "profile.cubex")) as cube:
        assert len(cube.get_locations()) == n
        visits = cube.get_metric_values(cube.get_metric_by_name("visits"))
        for cnode in cube.all_cnodes():
            if cube.get_region(cnode).name == "mpi4py.MPI.Comm:Send":
                assert list(visits.cnode_values(cnode)) == [1] * n


THREADED = """
import threading
from mpi4py import MPI

def work():
    return sum(i * i for i in range(20000))

worker = threading.Thread(target=work, name="work")
worker.start()
worker.join()
tid = worker.native_id
MPI.COMM_WORLD.Barrier()
"""


def test_a_thread_on_each_rank_has_its_thread_records(kernel):
    """Score-P's THREAD_BEGIN / THREAD_END on each rank's worker (its own COMM "" of its
    rank's SCOREP_GROUP_PTHREAD, ThreadId = its native id), within the rank's cell on the
    run's clock; the master threads have none."""
    import otf2

    result = kernel.run(THREADED, mpi_meta(2, gather=["tid"]), timeout=120)
    assert result.status == "ok", result.reply
    tids = kernel.value("tid")
    manifest = wait_files(Path(result.bundle()["path"]))
    assert manifest["files_status"] == "ready", manifest["errors"]
    anchor = Path(result.bundle()["path"]) / "traces.otf2"
    got: dict[tuple[str, str], list] = {}
    with otf2.reader.open(str(anchor)) as trace:
        for location, event in trace.events:
            got.setdefault((location.group.name, location.name), []).append(event)
    cell = f"cell [{manifest['cells'][0]['execution_count']}]"
    for r in range(2):
        group = f"MPI Rank {r}"
        master = got[(group, "Master thread")]
        assert not [e for e in master if "Thread" in type(e).__name__]
        enter = next(
            e.time for e in master if type(e).__name__ == "Enter" and e.region.name == cell
        )
        leave = next(
            e.time for e in master if type(e).__name__ == "Leave" and e.region.name == cell
        )
        worker = got[(group, "Thread 1 (work)")]
        begin, end = worker[0], worker[-1]
        assert (type(begin).__name__, type(end).__name__) == ("ThreadBegin", "ThreadEnd")
        assert {a.name: v for a, v in begin.attributes.items()} == {"ThreadId": tids[r]}
        assert begin.thread_contingent is end.thread_contingent
        assert begin.thread_contingent.group.name == "SCOREP_GROUP_PTHREAD"
        assert enter <= begin.time <= worker[1].time and worker[-2].time <= end.time <= leave
    lines = [line.split() for line in events(anchor) if line.startswith("THREAD_")]
    assert sorted((x[0], x[1]) for x in lines) == [("THREAD_BEGIN", "1"), ("THREAD_BEGIN", "3"),
                                                   ("THREAD_END", "1"), ("THREAD_END", "3")]  # fmt: skip
    assert len({x[-4] for x in lines}) == 2  # a contingent per rank: "" <0>, "" <1>
    defs = definitions(anchor)
    assert (
        sum(1 for line in defs if line.startswith("COMM") and "SCOREP_GROUP_PTHREAD" in line) == 2
    )


def test_a_rank_that_raises_is_named_and_rank_0_state_comes_back(kernel):
    code = (
        "from mpi4py import MPI\nr = MPI.COMM_WORLD.Get_rank()\nafter_raise = 'rank 0 ran'\n"
        "if r == 1:\n    raise ValueError('bad input on this rank')\n"
    )
    result = kernel.run(code, mpi_meta(2), timeout=120)
    assert result.status == "error"
    assert result.reply["ename"] == "ValueError"
    assert "[rank 1]" in result.reply["evalue"]
    shown = result.of("error")
    assert len(shown) == 1 and "[rank 1]" in shown[0]["traceback"][0]
    assert "bad input on this rank" in "\n".join(shown[0]["traceback"])
    assert kernel.value("after_raise") == "rank 0 ran"
    assert result.manifest()["status"] == "error"


def test_a_rank_that_exits_stops_the_run_and_leaves_the_namespace(kernel):
    code = (
        "from mpi4py import MPI\nimport os\ncomm = MPI.COMM_WORLD\nvalue = 'changed'\n"
        "if comm.Get_rank() == 1:\n    os._exit(3)\ncomm.Barrier()\n"
    )
    result = kernel.run(code, mpi_meta(2), timeout=120)
    assert result.status == "error" and result.reply["ename"] == "MPIRankFailed"
    assert "Rank 1 " in result.reply["evalue"] and "unchanged" in result.reply["evalue"]
    assert result.bundles()[-1]["status"] == "crashed"
    assert kernel.value("value") == "before"


def test_a_rank_past_the_timeout_is_named(kernel):
    code = (
        "from mpi4py import MPI\nimport time\nvalue = 'changed'\n"
        "if MPI.COMM_WORLD.Get_rank() == 1:\n    time.sleep(600)\n"
    )
    result = kernel.run(code, mpi_meta(2, timeout=2), timeout=120)
    assert result.status == "error"
    assert "rank 1 still ran after the cell's timeout of 2 s" in result.reply["evalue"].lower()
    assert kernel.value("value") == "before"


def test_interrupt_stops_every_rank(kernel):
    # rank 0 sleeps in Python, rank 1 waits in MPI for a message that never comes
    code = (
        "from mpi4py import MPI\nimport os, time, numpy as np\ncomm = MPI.COMM_WORLD\n"
        "value = 'changed'\nprint('pid', os.getpid(), flush=True)\n"
        "if comm.Get_rank() == 0:\n    time.sleep(600)\n"
        "else:\n    comm.Recv(np.zeros(1), source=0)\n"
    )
    msg_id = kernel.send(code, mpi_meta(2))
    for line in ("[rank 0] pid", "[rank 1] pid"):  # both ranks in their cell
        if not any(line in m["content"].get("text", "") for _, m in kernel._early.get(msg_id, [])):
            kernel.wait_output(msg_id, line)
    kernel.km.interrupt_kernel()
    result = kernel.collect(msg_id, timeout=60)
    assert result.status == "error" and result.reply["ename"] == "KeyboardInterrupt"
    pids = [int(p) for p in re.findall(r"pid (\d+)", result.stdout())]
    assert len(pids) == 2
    for pid in pids:  # every rank is gone
        assert (
            not Path(f"/proc/{pid}").exists()
            or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
        )
    assert result.manifest()["status"] == "interrupted"
    assert kernel.value("value") == "before"
    # and the next MPI cell runs
    again = kernel.run("from mpi4py import MPI\nn = MPI.COMM_WORLD.Get_size()", mpi_meta(2))
    assert again.status == "ok" and kernel.value("n") == 2


def test_the_magic_runs_ranks(kernel):
    result = kernel.run(
        "%%scorep_mpi -n 2 --gather who\nimport os\nwho = int(os.environ['OMPI_COMM_WORLD_RANK'])",
        {"scorep": {"backend": "builtin"}},
        timeout=120,
    )
    assert result.status == "ok", result.reply
    assert kernel.value("who") == [0, 1]
    # the ranks' launcher variables never reach the kernel
    assert kernel.value("'OMPI_COMM_WORLD_RANK' in os.environ") is False


def test_a_missing_launcher_is_explained(kernel):
    result = kernel.run("x = 1", mpi_meta(2, launcher="/nowhere/mpirun"))
    assert result.status == "error"
    assert "'/nowhere/mpirun' was not found" in result.reply["evalue"]


def test_manifest_names_launcher_and_hosts(kernel):
    result = kernel.run("y = 1", mpi_meta(2), timeout=120)
    manifest = json.loads((Path(result.bundle()["path"]) / "manifest.json").read_text())
    assert manifest["mpi"]["launcher_kind"] == "openmpi"
    assert sorted(r for ranks in manifest["mpi"]["hosts"].values() for r in ranks) == [0, 1]


def test_ranks_on_other_hosts_paths(tmp_path):
    """The paths of ranks on another host, on this one (SCOREP_KERNEL_MPI_AS_REMOTE): the
    namespace inside the messages, clocks probed and mapped, the node sampled by its
    first rank."""
    k = KernelHandle(tmp_path, env={"SCOREP_KERNEL_MPI_AS_REMOTE": "1"})
    try:
        assert k.run("import numpy as np\nbig = np.arange(300_000.0)").status == "ok"
        code = (
            "from mpi4py import MPI\nr = MPI.COMM_WORLD.Get_rank()\n"
            "total = MPI.COMM_WORLD.allreduce(float(big.sum()))\nbig = big * 2\n"
        )
        result = k.run(code, mpi_meta(2, gather=["r"]), timeout=120)
        assert result.status == "ok", result.reply
        assert k.value("total") == 2 * float(sum(range(300_000)))
        assert k.value("float(big[-1])") == 2 * 299_999.0  # 2.4 MB back in band
        assert k.value("r") == [0, 1]
        manifest = wait_files(Path(result.bundle()["path"]))
        assert manifest["files_status"] == "ready", manifest["errors"]
        clocks = manifest["mpi"]["clocks"]
        assert sorted(clocks) == ["0", "1"]
        for clock in clocks.values():  # one machine: the estimate is near 0
            assert clock["probes"] >= 2 and abs(clock["offset_ns"]) < 50e6
        schema = json.loads((Path(result.bundle()["path"]) / "metrics.json").read_text())
        keys = [s["key"] for s in schema["series"]]
        host = os.uname().nodename
        assert f"{host}:cpu.total" in keys and f"{host}:rank1.mem.rss" in keys
    finally:
        k.shutdown()


def test_a_rank_that_raises_while_another_waits_for_it(kernel):
    # rank 1 fails before the message rank 0 waits for: rank 0 would wait for ever
    code = (
        "from mpi4py import MPI\nimport numpy as np\ncomm = MPI.COMM_WORLD\nvalue = 'changed'\n"
        "if comm.Get_rank() == 1:\n    raise RuntimeError('no data for rank 0')\n"
        "comm.Recv(np.zeros(1), source=1)\n"
    )
    result = kernel.run(code, mpi_meta(2), timeout=120)
    assert result.status == "error" and result.reply["ename"] == "RuntimeError"
    evalue = result.reply["evalue"]
    assert "Rank 1 raised RuntimeError: no data for rank 0" in evalue
    assert "rank 0 still ran" in evalue and "unchanged" in evalue
    assert any("[rank 1]" in e["traceback"][0] for e in result.of("error"))
    assert kernel.value("value") == "before"


def test_interrupt_while_the_ranks_start(kernel, tmp_path):
    # a launcher that never starts its ranks (as srun waiting for nodes): the interrupt
    # ends the wait and the launcher
    fake = tmp_path / "mpiexec"
    fake.write_text('#!/bin/sh\ncase "$1" in --version) echo fake;; *) sleep 600;; esac\n')
    fake.chmod(0o755)
    msg_id = kernel.send("value = 'changed'", mpi_meta(2, launcher=str(fake)))
    deadline = time.monotonic() + 30
    while not _processes_of(fake) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_of(fake), "the fake launcher started"
    kernel.km.interrupt_kernel()
    result = kernel.collect(msg_id, timeout=60)
    assert result.status == "error" and result.reply["ename"] == "KeyboardInterrupt"
    assert "ranks were still starting" in result.reply["evalue"]
    assert kernel.value("value") == "before"
    deadline = time.monotonic() + 10
    while _processes_of(fake) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _processes_of(fake), "the launcher was stopped"


def _processes_of(path: Path) -> list[int]:
    """Live processes whose command line names ``path``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if str(path).encode() in cmd and state != "Z":
            found.append(int(proc.name))
    return found
