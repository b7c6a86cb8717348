"""MPI cells under a real Slurm (slurm_cluster: Debian's slurmctld, slurmd and munge
started here, one node): a kernel inside an allocation (SLURM_JOB_ID, as after
``salloc``) runs its MPI cells' ranks with ``srun`` inside that allocation, without being
told: the ranks are the job's steps, with PMIx; the ranks stay up between cells; a rank
killed ends the cell naming it. Skipped with the reason where Slurm cannot run here."""

from __future__ import annotations

from pathlib import Path

import pytest
import slurm_cluster
from test_kernel_harness import KernelHandle, wait_files

WHY_NOT = slurm_cluster.why_not()
pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(bool(WHY_NOT), reason=f"no Slurm here: {WHY_NOT}"),
]
pytest.importorskip("mpi4py", reason="mpi4py is not installed (the test extra has it)")

BUILTIN = {"scorep": {"backend": "builtin"}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with slurm_cluster.running(tmp_path_factory.mktemp("slurm")) as c:
        yield c


@pytest.fixture
def kernel(cluster, tmp_path):
    job = cluster.allocate(2)
    k = KernelHandle(tmp_path, env={"SLURM_JOB_ID": job, "SLURM_CONF": str(cluster.conf)})
    k.job = job  # type: ignore[attr-defined]
    assert k.run("base = 40").status == "ok"
    yield k
    k.shutdown()
    cluster.release(job)


def test_srun_starts_the_ranks_inside_the_allocation(kernel):
    code = (
        "%%scorep_mpi -n 2 --gather job,pid\nfrom mpi4py import MPI\nimport os\n"
        "comm = MPI.COMM_WORLD\ntotal = comm.allreduce(base + comm.Get_rank())\n"
        "job = os.environ.get('SLURM_JOB_ID')\npid = os.getpid()\n"
    )
    result = kernel.run(code, BUILTIN, timeout=180)
    assert result.status == "ok", result.reply
    assert kernel.value("total") == 81
    assert kernel.value("job") == [kernel.job, kernel.job]  # the allocation's steps
    manifest = wait_files(Path(result.bundle()["path"]))
    assert manifest["files_status"] == "ready", manifest["errors"]
    assert manifest["mpi"]["launcher_kind"] == "srun"
    assert "--kill-on-bad-exit=1" in manifest["mpi"]["launcher_args"]
    pids = kernel.value("pid")
    again = kernel.run("%%scorep_mpi -n 2 --gather pid\npid = os.getpid()", BUILTIN, timeout=120)
    assert again.status == "ok" and kernel.value("pid") == pids  # kept up under srun too


def test_a_rank_killed_under_srun_is_named(kernel):
    code = (
        "%%scorep_mpi -n 2 --fresh\nfrom mpi4py import MPI\nimport os, signal\n"
        "comm = MPI.COMM_WORLD\nvalue = 'changed'\n"
        "if comm.Get_rank() == 1:\n    os.kill(os.getpid(), signal.SIGKILL)\ncomm.Barrier()\n"
    )
    assert kernel.run("value = 'before'").status == "ok"
    result = kernel.run(code, BUILTIN, timeout=180)
    assert result.status == "error" and result.reply["ename"] == "MPIRankFailed"
    assert "Rank 1 (pid " in result.reply["evalue"]
    assert kernel.value("value") == "before"
