"""MPI cells across hosts: two hosts made of network namespaces on this machine
(netns_hosts: each its own address, hostname and boot id), the kernel on the first,
Open MPI's mpirun starting its daemon on the second through an rsh agent that enters that
namespace, ranks on both. Checked: every rank's host, an allreduce across the hosts, the
namespace in band to the other host and rank 0's back, the clocks of the other host's
ranks probed and mapped, its metrics sampled there, one trace of 4 ranks; a rank killed on
the other host and a host unreachable at the start each end the cell naming host and
rank, the notebook's namespace as it was. Skipped, with the reason, where the machine
refuses namespaces (not root, no CAP_SYS_ADMIN)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import netns_hosts
import pytest
from test_kernel_harness import KernelHandle, wait_files

HOSTS = ["skhost1", "skhost2"]
WHY_NOT = netns_hosts.why_not() if shutil.which("mpirun") else "no mpirun on PATH"
pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(bool(WHY_NOT), reason=f"no hosts of network namespaces: {WHY_NOT}"),
]
pytest.importorskip("mpi4py", reason="mpi4py is not installed (the test extra has it)")


@pytest.fixture(scope="module")
def hosts():
    netns_hosts.remove_hosts(HOSTS)  # what a killed earlier run left
    netns_hosts.make_hosts(HOSTS)
    yield HOSTS
    netns_hosts.remove_hosts(HOSTS)


@pytest.fixture
def kernel(hosts, tmp_path):
    k = KernelHandle(tmp_path, prefix=netns_hosts.enter(hosts[0]))
    assert k.run("import numpy as np\nvalue = 'before'\nbig = np.arange(100_000.0)").status == "ok"
    yield k
    k.shutdown()


def meta(hosts: list[str], **more) -> dict:
    args = ["-H", ",".join(f"{h}:2" for h in hosts), "--mca", "plm_rsh_agent", netns_hosts.agent()]
    mpi = {"ranks": 4, "args": args, "gather": ["host"], "timeout": 120, **more}
    return {"scorep": {"profile": True, "backend": "builtin", "mpi": mpi}}


def test_ranks_on_two_hosts(kernel, hosts):
    assert kernel.value("__import__('socket').gethostname()") == hosts[0]
    code = (
        "from mpi4py import MPI\nimport socket\ncomm = MPI.COMM_WORLD\nrank = comm.Get_rank()\n"
        "host = socket.gethostname()\ntotal = comm.allreduce(float(big.sum()) + rank)\n"
        "big = big * 2\n"
    )
    result = kernel.run(code, meta(hosts), timeout=180)
    assert result.status == "ok", result.reply
    assert kernel.value("host") == [hosts[0]] * 2 + [hosts[1]] * 2
    assert kernel.value("total") == 4 * float(sum(range(100_000))) + 6
    assert kernel.value("float(big[-1])") == 2 * 99_999.0
    exp = Path(result.bundle()["path"])
    assert result.bundle()["mpi"]["hosts"] == sorted(hosts)
    manifest = wait_files(exp)
    assert manifest["files_status"] == "ready", manifest["errors"]
    assert manifest["mpi"]["hosts"] == {hosts[0]: [0, 1], hosts[1]: [2, 3]}
    clocks = manifest["mpi"]["clocks"]  # only the other host's ranks are probed
    assert sorted(clocks) == ["2", "3"] and all(c["probes"] >= 2 for c in clocks.values())
    schema = json.loads((exp / "metrics.json").read_text())
    keys = [s["key"] for s in schema["series"]]
    assert f"{hosts[1]}:cpu.total" in keys and f"{hosts[1]}:rank2.mem.rss" in keys
    import otf2

    with otf2.reader.open(str(exp / "traces.otf2")) as trace:
        groups = [g.name for g in trace.definitions.location_groups]
    assert groups == [f"MPI Rank {r}" for r in range(4)]


def test_a_rank_killed_on_the_other_host_is_named(kernel, hosts):
    code = (
        "from mpi4py import MPI\nimport os, signal\ncomm = MPI.COMM_WORLD\nvalue = 'changed'\n"
        "if comm.Get_rank() == 3:\n    os.kill(os.getpid(), signal.SIGKILL)\ncomm.Barrier()\n"
    )
    result = kernel.run(code, meta(hosts, fresh=True), timeout=180)
    assert result.status == "error" and result.reply["ename"] == "MPIRankFailed"
    evalue = result.reply["evalue"]
    assert "Rank 3 (pid " in evalue and f" on {hosts[1]})" in evalue
    assert kernel.value("value") == "before"


def test_an_unreachable_host_at_the_start_is_named(kernel, hosts):
    netns_hosts.link(hosts[1], up=False)
    try:
        result = kernel.run("value = 'changed'", meta(hosts, fresh=True), timeout=180)
    finally:
        netns_hosts.link(hosts[1], up=True)
    assert result.status == "error" and result.reply["ename"] == "MPIRankFailed"
    evalue = result.reply["evalue"]
    assert f"ranks 2, 3 on {hosts[1]}" in evalue
    assert kernel.value("value") == "before"
