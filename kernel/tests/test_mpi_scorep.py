"""An MPI cell under real Score-P (``python -m scorep --mpp=mpi`` per rank): one OTF2
archive with a process per rank and Score-P's MPI events, a profile.cubex with Score-P's
MPI metrics, and rank 0's state in the notebook. Skipped where Score-P, mpirun or mpi4py
is missing (`make setup` installs all three here)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_kernel_harness import KernelHandle, wait_files
from test_mpi_cells import THREADED  # a thread on each rank, its native id as tid

from scorep_kernel.measure.detect import detect_scorep

SCOREP = detect_scorep()
pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not SCOREP["available"], reason=SCOREP["message"]),
    pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun on PATH"),
]
pytest.importorskip("mpi4py", reason="mpi4py is not installed (the test extra has it)")

CELL = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
out = np.zeros(10 * ((rank - 1) % size + 1))
comm.Sendrecv(np.full(10 * (rank + 1), 1.0), dest=(rank + 1) % size, recvbuf=out,
              source=(rank - 1) % size, sendtag=3, recvtag=3)
total = comm.allreduce(base + rank)
"""


def scorep_tool(name: str) -> str:
    config = shutil.which("scorep-config")
    assert config
    return str(Path(config).resolve().parent / name)


def _region_ref(defs: str, name: str) -> str:
    """The REGION definition's reference of ``name`` in otf2-print -G's text."""
    m = re.search(rf'^REGION\s+(\d+)\s+Name: "{re.escape(name)}"', defs, re.M)
    assert m, f"no region {name!r}"
    return m.group(1)


def test_two_ranks_under_scorep(tmp_path):
    kernel = KernelHandle(tmp_path)
    try:
        assert kernel.run("base = 40").status == "ok"
        meta = {"scorep": {"profile": True, "backend": "scorep", "mpi": {"ranks": 2}}}
        result = kernel.run(CELL, meta, timeout=240)
        assert result.status == "ok", result.reply
        assert kernel.value("total") == 81 and kernel.value("rank") == 0
        # Score-P needs fresh processes: the cell says its ranks were started for it
        message = result.bundle()["summary"]["message"]
        assert "Score-P measures a process from its start to its end" in message
        assert result.bundle()["mpi"]["kept"] is False
        exp = Path(result.bundle()["path"])
        manifest = wait_files(exp, 180)
        assert manifest["files_status"] == "ready", manifest["errors"]
        assert manifest["backend"] == "scorep" and manifest["mpi"]["ranks"] == 2
        defs = subprocess.run([scorep_tool("otf2-print"), "-G", str(exp / "traces.otf2")],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert re.findall(r'LOCATION_GROUP .*Name: "MPI Rank (\d)"', defs) == ["0", "1"]
        lines = subprocess.run([scorep_tool("otf2-print"), str(exp / "traces.otf2")],
                               capture_output=True, text=True, check=True).stdout.splitlines()  # fmt: skip
        # one cell region, named by its label and in the group "cell", once on each rank
        cell = f"cell [{manifest['cells'][0]['execution_count']}]"
        entered = [line.split()[1] for line in lines if line.startswith("ENTER")
                   and line.endswith(f'Region: "{cell}" <{_region_ref(defs, cell)}>')]  # fmt: skip
        assert len(entered) == 2 and len(set(entered)) == 2, entered
        assert re.search(
            rf'^GROUP .*Name: "cell" <\d+>, Type: REGIONS, .*"{re.escape(cell)}"', defs, re.M
        )
        assert not [line for line in lines if 'Region: ":cell' in line]
        sends = [line for line in lines if line.startswith("MPI_SEND") and "Tag: 3," in line]
        assert len(sends) == 2
        for r in (0, 1):
            line = next(s for s in sends if s.split()[1] == str(r))
            assert f"Receiver: {1 - r} " in line and '"MPI_COMM_WORLD"' in line
            assert line.endswith(f"Length: {80 * (r + 1)}")
        assert sum(1 for line in lines if line.startswith("MPI_RECV") and "Tag: 3," in line) == 2
        from pycubexr import CubexParser

        with CubexParser(str(exp / "profile.cubex")) as cube:
            sent = cube.get_metric_values(cube.get_metric_by_name("bytes_sent"))
            by_region = {
                cube.get_region(c).name: list(sent.cnode_values(c)) for c in cube.all_cnodes()
            }
        assert by_region["MPI_Sendrecv"] == [80, 160]
    finally:
        kernel.shutdown()


def test_each_ranks_thread_is_named_in_its_group(tmp_path):
    """Score-P names a rank's Python thread "Orphan thread 1" on every rank; the manifest's
    group_thread_names, the server's read_trace and profile.cubex say "Thread 1 (work)" in
    each rank's group (OTF2's definitions stay as Score-P wrote them)."""
    from pycubexr import CubexParser

    from jupyterlab_scorep.trace import otf2_read

    kernel = KernelHandle(tmp_path)
    try:
        meta = {"scorep": {"profile": True, "backend": "scorep", "mpi": {"ranks": 2}}}
        result = kernel.run(THREADED, meta, timeout=240)
        assert result.status == "ok", result.reply
        exp = Path(result.bundle()["path"])
        manifest = wait_files(exp, 180)
        assert manifest["files_status"] == "ready", manifest["errors"]
    finally:
        kernel.shutdown()
    defs = subprocess.run([scorep_tool("otf2-print"), "-G", str(exp / "traces.otf2")],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    orphans = re.findall(
        r'^LOCATION .*Name: "Orphan thread 1" .*Group: "(MPI Rank \d)"', defs, re.M
    )
    assert orphans == ["MPI Rank 0", "MPI Rank 1"]
    shown = {"Orphan thread 1": "Thread 1 (work)"}
    assert manifest["group_thread_names"] == {"MPI Rank 0": shown, "MPI Rank 1": shown}
    definitions, _events = otf2_read.read_trace(str(exp / "traces.otf2"))
    names = sorted((x["group"], x["name"]) for x in definitions.locations)
    assert names == [
        (f"MPI Rank {r}", n) for r in (0, 1) for n in ("Master thread", "Thread 1 (work)")
    ]
    with CubexParser(str(exp / "profile.cubex")) as cube:
        assert [loc.name for loc in cube.get_locations()] == [
            "Master thread",
            "Thread 1 (work)",
        ] * 2
    anchor = subprocess.run(["tar", "-xOf", str(exp / "profile.cubex"), "anchor.xml"],
                            capture_output=True, check=True).stdout.decode()  # fmt: skip
    groups = re.findall(
        r"<locationgroup[^>]*>\s*<name>([^<]*)</name>(.*?)</locationgroup>", anchor, re.S
    )
    assert [(g, re.findall(r"<location [^>]*>\s*<name>([^<]*)</name>", body)) for g, body in groups] == [
        (f"MPI Rank {r}", ["Master thread", "Thread 1 (work)"]) for r in (0, 1)
    ]  # fmt: skip
