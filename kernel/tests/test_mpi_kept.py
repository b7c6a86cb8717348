"""MPI ranks that stay up between cells (builtin backend) through the real kernel, Debian's
Open MPI and mpi4py: the same processes serve the next MPI cell with their namespaces and
each cell is still its own experiment (read back with otf2); a value the notebook rebinds
reaches them; ``--fresh`` runs in ranks of its own; a rank killed between cells is found,
all ranks are started anew and the cell says so; ``%scorep_mpi stop`` and the kernel's
shutdown end them. (The kept-ranks round trip is benchmarks/mpi_cell.py's figure.)"""

from __future__ import annotations

import os
import shutil
import signal
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
pytest.importorskip("mpi4py", reason="mpi4py is not installed (the test extra has it)")

MAGIC = "%%scorep_mpi -n 2 --gather pid,mine\n"
BUILTIN = {"scorep": {"backend": "builtin"}}


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return True
    return state == "Z"


def wait_gone(pids: list[int], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while not all(gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return all(gone(p) for p in pids)


def location_groups(anchor: Path) -> int:
    import otf2

    with otf2.reader.open(str(anchor)) as trace:
        return len(trace.definitions.location_groups)


@pytest.fixture
def kernel(tmp_path):
    k = KernelHandle(tmp_path)
    assert k.run("import os\nbase = 40").status == "ok"
    yield k
    k.shutdown()


def first_cell(kernel) -> list[int]:
    code = MAGIC + (
        "from mpi4py import MPI\nrank = MPI.COMM_WORLD.Get_rank()\npid = os.getpid()\n"
        "mine = 10 * rank + base\n"
    )
    result = kernel.run(code, BUILTIN, timeout=120)
    assert result.status == "ok", result.reply
    assert "stay up for the next MPI cell" in result.bundle()["summary"]["message"]
    return kernel.value("pid")


def test_ranks_stay_up_with_their_namespaces(kernel):
    pids = first_cell(kernel)
    assert len(set(pids)) == 2 and kernel.value("mine") == [40, 50]
    # the same processes; rank 1 kept its own `mine` (50), though the notebook's is now
    # the gathered list; rank 0's namespace came back (rank == 0)
    code = MAGIC + "pid = os.getpid()\nsize = MPI.COMM_WORLD.Get_size()\n"
    result = kernel.run(code, BUILTIN, timeout=120)
    assert result.status == "ok", result.reply
    assert kernel.value("pid") == pids
    assert kernel.value("mine") == [40, 50]  # not the notebook's list, sent back
    assert kernel.value("size") == 2 and kernel.value("rank") == 0
    assert "Kept ranks: cell 2 on them." in result.bundle()["summary"]["message"]
    # each cell is its own experiment with both ranks
    manifest = wait_files(Path(result.bundle()["path"]))
    assert manifest["files_status"] == "ready", manifest["errors"]
    assert manifest["mpi"]["kept"] is True and manifest["mpi"]["cells_on_ranks"] == 2
    # where a kept cell's round trip goes: no ranks started, the ranks' start and stop
    assert "ranks_start" not in manifest["timings"]
    assert {"measure_start", "measure_stop", "manifest"} <= set(manifest["timings"])
    assert location_groups(Path(result.bundle()["path"]) / "traces.otf2") == 2


def test_a_value_the_notebook_rebinds_reaches_the_kept_ranks(kernel):
    pids = first_cell(kernel)
    assert kernel.run("base = 1000\nrows = [1, 2, 3]").status == "ok"  # not profiled
    result = kernel.run(MAGIC + "mine = base + sum(rows) + rank", BUILTIN, timeout=120)
    assert result.status == "ok", result.reply
    assert kernel.value("mine") == [1006, 1007] and kernel.value("pid") == pids


def test_fresh_runs_in_ranks_of_its_own(kernel):
    pids = first_cell(kernel)
    fresh = "%%scorep_mpi -n 2 --fresh --gather pid\nimport os\npid = os.getpid()"
    result = kernel.run(fresh, BUILTIN, timeout=120)
    assert result.status == "ok", result.reply
    assert "kept up were ended first" in result.stderr()
    assert "--fresh" in result.bundle()["summary"]["message"]
    fresh_pids = kernel.value("pid")
    assert not set(fresh_pids) & set(pids)
    assert wait_gone(pids) and wait_gone(fresh_pids)  # the kept ones first, these after it
    assert kernel.run("%scorep_mpi").stdout().strip() == "No MPI ranks are kept up."


def test_a_rank_killed_between_cells_is_restarted_and_reported(kernel):
    pids = first_cell(kernel)
    os.kill(pids[1], signal.SIGKILL)
    assert wait_gone(pids)  # mpirun ends the other rank too
    result = kernel.run(MAGIC + "pid = os.getpid()\nmine = mine", BUILTIN, timeout=120)
    assert result.status == "ok", result.reply
    note = result.stderr()
    assert f"rank 1 (pid {pids[1]} on " in note and "had ended since the last MPI cell" in note
    assert "all 2 ranks were started anew" in note
    new = kernel.value("pid")
    assert not set(new) & set(pids)
    # their namespaces start from the notebook's: `mine` was the gathered list there
    assert kernel.value("mine") == [[40, 50], [40, 50]]


def test_stop_ends_the_kept_ranks(kernel):
    pids = first_cell(kernel)
    shown = kernel.run("%scorep_mpi").stdout()
    assert "2 MPI ranks kept up" in shown and str(pids[0]) in shown
    stopped = kernel.run("%scorep_mpi stop")
    assert stopped.status == "ok"
    assert stopped.stdout().strip() == "Ended the 2 MPI ranks (1 cells) kept up."
    assert wait_gone(pids)
    again = kernel.run(MAGIC + "pid = os.getpid()", BUILTIN, timeout=120)
    assert again.status == "ok" and not set(kernel.value("pid")) & set(pids)


def test_shutdown_ends_the_kept_ranks(tmp_path):
    k = KernelHandle(tmp_path)
    try:
        code = "%%scorep_mpi -n 2 --gather pid\nimport os\npid = os.getpid()"
        assert k.run(code, BUILTIN, timeout=120).status == "ok"
        pids = k.value("pid")
        assert not any(gone(p) for p in pids)
    finally:
        k.shutdown()
    assert wait_gone(pids)
