"""A Score-P run prepared ahead (the spare JupyterLab's notice started) describes the cell,
not the wait before it, and Score-P's thread locations carry the Python thread's name.
Real Score-P, a real kernel, the files read with pycubexr and otf2-print, the rest at the
REST API."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
from scorep_cells import SCOREP, KernelHandle, scorep_tool, wait_files

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not SCOREP["available"], reason=SCOREP["message"]),
]
WAIT_S = 10.0  # the notebook open, nobody running a cell yet

CELL = """
import threading, time
stop = False

def beat():
    while not stop:
        time.sleep(0.01)

def score():
    return sum(i * i for i in range(200_000))

h = threading.Thread(target=beat, name="heartbeat")
h.start()
result = score()
time.sleep(0.1)
stop = True
h.join()
heartbeat_tid = h.native_id
"""


def cube_program_time(cubex: Path) -> tuple[str, float, list[str]]:
    """(the root region, its inclusive time on the master thread, the location names)."""
    from pycubexr import CubexParser

    with CubexParser(str(cubex)) as cube:
        metric = cube.get_metric_by_name("time")
        values = cube.get_metric_values(metric)
        root = cube.get_root_cnodes()[0]
        total = float(values.cnode_values(root, convert_to_exclusive=False)[0])
        names = [loc.name for loc in cube.get_locations()]
        return cube.get_region(root).name, total, names


def thread_begin_ids(anchor: Path) -> dict[str, int]:
    """{location id: ThreadId of its THREAD_BEGIN}, by Score-P's own otf2-print."""
    out = subprocess.run(
        [scorep_tool("otf2-print"), str(anchor)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    found = re.findall(
        r"THREAD_BEGIN\s+(\d+)\s+\d+.*\n.*\"ThreadId\" <\d+>; UINT64; (\d+)", out.stdout
    )
    return {loc: int(tid) for loc, tid in found}


@pytest.fixture(scope="module")
def prepared(runs):
    """A kernel told of its profiled cells, left idle WAIT_S, then running CELL."""
    root, _ = runs
    cwd = root / "prepared-ahead"
    cwd.mkdir()
    kernel = KernelHandle(cwd)
    try:
        answer = kernel.notice({"version": 1, "profiled_cells": [{"profile": True}]})
        assert answer["spare"] == "preparing", answer
        time.sleep(WAIT_S)  # a reader of the notebook: no folder may appear meanwhile
        parent = cwd / "scorep-experiments"
        before = sorted(p.name for p in parent.iterdir()) if parent.exists() else []
        result = kernel.run(CELL, {"scorep": {"profile": True}}, timeout=240)
        assert result.status == "ok", result.reply
        exp = Path(result.bundle()["path"])
        manifest = wait_files(exp, 120)
        tid = kernel.value("heartbeat_tid")
    finally:
        kernel.shutdown()
    return before, exp, manifest, tid


def test_no_folder_before_the_cell_and_the_profile_holds_the_cell(prepared):
    before, exp, manifest, _tid = prepared
    assert before == []
    assert manifest["files_status"] == "ready", manifest["errors"]
    assert "worker_spare_ready" in manifest["timings"]  # the prepared spare took the run
    cell_s = manifest["timings"]["cell"]
    region, total, _names = cube_program_time(exp / "profile.cubex")
    assert region.startswith("python")  # Score-P's program region
    assert cell_s <= total < cell_s + 1.0, (cell_s, total)


async def test_outside_the_cells_is_not_the_wait(api, prepared):
    _before, exp, manifest, _tid = prepared
    code, summary = await api("summary", path=str(exp))
    assert code == 200
    assert 0.0 <= summary["outside_s"] < 1.0, summary["outside_s"]


async def test_score_p_threads_carry_the_python_threads_name(api, prepared):
    _before, exp, manifest, tid = prepared
    ids = thread_begin_ids(exp / "traces.otf2")  # Score-P's own record of the thread
    assert tid in ids.values()
    code, tl = await api("timeline", path=str(exp), width=1000)
    assert code == 200
    names = [loc["name"] for loc in tl["locations"]]
    assert names[0] == "Master thread" and "Thread 1 (heartbeat)" in names
    assert not [n for n in names if n.startswith("Orphan")]
    _region, _total, cube_names = cube_program_time(exp / "profile.cubex")
    assert cube_names == names[: len(cube_names)]  # Cube shows the same names
    assert manifest["thread_names"] == {"Orphan thread 1": "Thread 1 (heartbeat)"}
