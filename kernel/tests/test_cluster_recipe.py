"""The README's recipe "On a Slurm cluster:", step by step as a user follows it in a login
shell (``bash -l``: /etc/profile's PATH, Lmod's ``module`` from /etc/profile.d):

1. an allocation (``salloc``) on the one-node Slurm of slurm_cluster;
2. ``module use DIR; module load scorep``: a site's Lua modulefile for Score-P (this
   machine's Score-P, found by ``scorep-config``) puts its bin/ on PATH; without it the
   login shell has no Score-P;
3. the kernel installed into "the cluster's environment": a fresh venv standing for it,
   its packages those of this checkout's environment (a ``.pth``, as offline as the
   editable install: no index here) and this checkout's code, the spec written by
   ``python -m scorep_kernel install --sys-prefix``; ``jupyter kernelspec list`` run in
   that environment shows it, naming the venv's Python, and it starts;
4. a ``%%scorep_mpi -n 2`` cell measured by Score-P: the kernel found Score-P through the
   module, and its ranks are the allocation's steps, started by ``srun``.

Skipped with the reason where Slurm, Lmod, Score-P or mpi4py are missing here."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import slurm_cluster
from test_kernel_harness import KernelHandle, wait_files

from scorep_kernel.measure.detect import detect_scorep

LMOD_INIT = Path("/usr/share/lmod/lmod/init/bash")
SCOREP = detect_scorep()
WHY_NOT = (
    slurm_cluster.why_not()
    or ("" if LMOD_INIT.is_file() else f"no Lmod ({LMOD_INIT}; apt-get install lmod)")
    or ("" if SCOREP["available"] else SCOREP["message"])
)
pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(bool(WHY_NOT), reason=f"the cluster recipe cannot run here: {WHY_NOT}"),
]
pytest.importorskip("mpi4py", reason="mpi4py is not installed (the test extra has it)")

SCOREP_CONFIG = Path(str(SCOREP["scorep_config"]))
SCOREP_BIN = SCOREP_CONFIG.parent
MODULEFILE = """help([[Score-P, as a site's module provides it]])
whatis("Name: Score-P")
local root = "{root}"
prepend_path("PATH", pathJoin(root, "bin"))
prepend_path("LD_LIBRARY_PATH", pathJoin(root, "lib"))
setenv("SCOREP_ROOT", root)
"""
CODE = Path(__file__).resolve().parents[2]  # this checkout: kernel/, server_ext/
CELL = (
    "%%scorep_mpi -n 2 --gather job,total,exe\nfrom mpi4py import MPI\nimport os, sys\n"
    "comm = MPI.COMM_WORLD\ntotal = comm.allreduce(base + comm.Get_rank())\n"
    "job = os.environ.get('SLURM_JOB_ID')\nexe = sys.executable\n"
)
SCOREP_CELL = {"scorep": {"backend": "scorep"}}


def user_env(**more: str) -> dict[str, str]:
    """The environment a user's login starts from: no Score-P on PATH, no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join(
        p for p in env["PATH"].split(os.pathsep) if p and Path(p) != SCOREP_BIN
    )
    return {**env, **more}


def login(script: str, modules: Path | None = None) -> str:
    """A login shell's lines before ``script``: Lmod's ``module`` (its init script where
    /etc/profile.d did not define it), then ``module use``/``load scorep`` with ``modules``."""
    lines = [f"type module >/dev/null 2>&1 || . {LMOD_INIT}", "set -e"]
    if modules:
        lines += [f"module use {shlex.quote(str(modules))}", "module load scorep"]
    return "\n".join([*lines, script])


def shell(script: str, modules: Path | None = None) -> str:
    done = subprocess.run(["bash", "-lc", login(script, modules)], env=user_env(),
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with slurm_cluster.running(tmp_path_factory.mktemp("slurm")) as c:
        yield c


@pytest.fixture(scope="module")
def modules(tmp_path_factory) -> Path:
    """A module tree as a site has one: scorep/<version>.lua."""
    tree = tmp_path_factory.mktemp("modulefiles")
    (tree / "scorep").mkdir()
    (tree / "scorep" / "8.4.lua").write_text(MODULEFILE.format(root=SCOREP_BIN.parent))
    return tree


@pytest.fixture(scope="module")
def cluster_env(tmp_path_factory) -> Path:
    """The cluster's environment with the kernel installed into it (step 3): the venv's
    python."""
    venv = tmp_path_factory.mktemp("cluster-env") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    # this checkout's code first, then the packages pip would have brought (no index here)
    (Path(site) / "_cluster_env.pth").write_text(
        "\n".join([str(CODE / "kernel"), str(CODE / "server_ext"), sysconfig.get_path("purelib")])
        + "\n"
    )
    done = subprocess.run([str(python), "-m", "scorep_kernel", "install", "--sys-prefix"],
                          env=user_env(), capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return python


def test_the_module_brings_scorep_into_the_login_shell(modules, cluster_env):
    assert shell("command -v scorep-config || echo none").strip() == "none"
    assert shell("command -v scorep-config", modules).strip() == str(SCOREP_CONFIG)
    detect = "from scorep_kernel.measure.detect import detect_scorep as d; print(d()['message'])"
    without = shell(f"{cluster_env} -c {shlex.quote(detect)}")
    assert "scorep-config is not on PATH" in without
    found = shell(f"{cluster_env} -c {shlex.quote(detect)}", modules)
    assert found.strip() == f"Score-P found: {SCOREP_CONFIG}, Python bindings installed"


def test_the_recipe_runs_a_scorep_mpi_cell_with_srun(cluster, modules, cluster_env, tmp_path):
    # step 3: the spec `jupyter kernelspec list` shows in the cluster's environment
    listed = shell(f"{cluster_env} -m jupyter_client.kernelspecapp list --json", modules)
    spec = json.loads(listed)["kernelspecs"]["scorep-python"]
    venv = cluster_env.parent.parent
    assert spec["resource_dir"] == str(venv / "share" / "jupyter" / "kernels" / "scorep-python")
    assert spec["spec"]["argv"][0] == str(cluster_env)
    # steps 1 and 2: a login shell inside the allocation, the module loaded, starts it
    job = cluster.allocate(2)
    # (KernelHandle starts from this process's environment: its PYTHONPATH is not the user's)
    script = login('unset PYTHONPATH\nexec "$@"', modules)
    kernel = KernelHandle(
        tmp_path,
        env=user_env(SLURM_JOB_ID=job, SLURM_CONF=str(cluster.conf)),
        argv=["bash", "-lc", script, "kernel", *spec["spec"]["argv"]],
    )
    try:
        assert kernel.run("import sys, os, shutil\nbase = 40").status == "ok"
        assert kernel.value("sys.executable") == str(cluster_env)
        assert "PYTHONPATH" not in kernel.value("list(os.environ)")
        assert kernel.value("shutil.which('scorep-config')") == str(SCOREP_CONFIG)
        assert f"Score-P found: {SCOREP_CONFIG}" in kernel.run("%scorep").stdout()
        # step 4: the cell's ranks are the allocation's steps, measured by Score-P
        result = kernel.run(CELL, SCOREP_CELL, timeout=150)
        assert result.status == "ok", result.reply
        assert kernel.value("job") == [job, job]
        assert kernel.value("total") == [81, 81]
        assert kernel.value("exe") == [str(cluster_env)] * 2  # the cluster's environment
        manifest = wait_files(Path(result.bundle()["path"]), 120)
        assert manifest["files_status"] == "ready", manifest["errors"]
        assert manifest["backend"] == "scorep" and manifest["mpi"]["ranks"] == 2
        assert manifest["mpi"]["launcher_kind"] == "srun"
        exp = Path(result.bundle()["path"])
        defs = subprocess.run([str(SCOREP_BIN / "otf2-print"), "-G", str(exp / "traces.otf2")],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert re.findall(r'LOCATION_GROUP .*Name: "MPI Rank (\d)"', defs) == ["0", "1"]
    finally:
        kernel.shutdown()
        cluster.release(job)
