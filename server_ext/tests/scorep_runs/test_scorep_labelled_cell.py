"""A cell's region found by its group "cell" whatever its name: a script run directly under
``python -m scorep`` begins a region labelled "setup phase" through the helper the Score-P
worker begins its cells with (scorep_kernel.worker.scorep_user_api), and the server's
readers (the trace's definitions, the profile's call tree, Compare's keys) take it for a
cell, while ``cell:f``, a function of a module named ``cell`` (which the bindings also put
in the group "cell"), stays a function. Skipped where Score-P is not installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from scorep_cells import SCOREP

from jupyterlab_scorep.analysis import compare
from jupyterlab_scorep.trace import otf2_read
from jupyterlab_scorep.trace.calltree import from_cubex
from scorep_kernel import experiment as ex
from scorep_kernel import region_words as rw

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not SCOREP["available"], reason=SCOREP["message"]),
]

LABEL = "setup phase"
SCRIPT = f"""
import cell
from scorep_kernel import region_words as rw
from scorep_kernel.worker.scorep_user_api import loaded_user_regions

def step(n):
    return cell.f(n) + 1

regions = loaded_user_regions()
key = regions.key({LABEL!r}, rw.CELL_GROUP, __file__, 1)
for _ in range(2):
    regions.begin(key)
    total = sum(step(i) for i in range(3))
    regions.end(key)
print(total)
"""


@pytest.fixture(scope="module")
def experiment(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("labelled-cell")
    (folder / "cell.py").write_text("def f(n):\n    return n * 2\n")
    (folder / "job.py").write_text(SCRIPT)
    exp = folder / "exp"
    env = {
        **os.environ,
        "SCOREP_EXPERIMENT_DIRECTORY": str(exp),
        "SCOREP_ENABLE_TRACING": "true",
        "SCOREP_ENABLE_PROFILING": "true",
    }
    run = subprocess.run(
        [sys.executable, "-m", "scorep", "job.py"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert run.returncode == 0 and run.stdout == "9\n", run.stderr
    return exp


def test_the_trace_reader_takes_the_labelled_region_for_a_cell(experiment):
    defs, _events = otf2_read.read_trace(str(experiment / ex.OTF2_ANCHOR))
    by_name = {r["name"]: r for r in defs.regions.values()}
    cell = by_name[LABEL]
    assert (cell["role"], cell["group"], cell["paradigm"]) == (rw.ROLE_CELL, "cell", "user")
    assert cell["file"] == str(experiment.parent / "job.py")
    # a function of the module "cell", in the group "cell" too, is no cell
    assert (by_name["cell:f"]["role"], by_name["cell:f"]["group"]) == (rw.ROLE_FUNCTION, "cell")


def test_the_profile_and_compare_take_it_for_a_cell(experiment):
    tree = from_cubex(experiment / "profile.cubex")
    assert [n["group"] for n in tree.nodes if n["name"] == LABEL] == ["cell"]
    functions, _total, _outside = compare.function_summary(tree)
    by_name = {f.name: f for f in functions}
    assert by_name[LABEL].module == "cell" and by_name[LABEL].visits == 2
    assert by_name["cell:f"].module == "cell" and by_name["cell:f"].visits == 6
    assert by_name["__main__:step"].visits == 6
    # two runs of it match the labelled cell by its label
    c = compare.compare_trees(tree, tree)
    assert [f.status for f in c.functions if f.name == LABEL] == ["both"]
