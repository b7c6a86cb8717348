"""JupyterLab's notice of a notebook's profiled cells (profiled_cells_notice, the
jupyterlab-scorep comm): where a cell will run in a subprocess, the spare is ready before
the first such cell runs; otherwise nothing starts, and a bad notice costs nothing."""

from __future__ import annotations

import pytest
from test_spare_worker import kernel_process, spare, workers

from scorep_kernel.profiled_cells_notice import read_notice
from scorep_kernel.settings import Availability, KernelSettings

pytestmark = pytest.mark.timeout(180)
BUILTIN_SUB = {"profile": True, "backend": "builtin", "isolation": "subprocess"}
BUILTIN_IN = {"profile": True, "backend": "builtin", "isolation": "inprocess"}


def test_the_first_subprocess_cell_finds_the_spare_the_notice_prepared(kernel):
    assert kernel.run("import json\nrows = [1, 2, 3]").status == "ok"  # unprofiled setup
    proc = kernel_process(kernel)
    assert workers(proc) == []  # nothing before the notice
    answer = kernel.notice({"version": 1, "profiled_cells": [BUILTIN_IN, BUILTIN_SUB]})
    assert answer["spare"] == "preparing" and "subprocess" in answer["why"]
    # the sender closed the comm: nothing of it is left in the kernel
    assert kernel.value("len(get_ipython().kernel.comm_manager.comms)") == 0
    ready = spare(kernel)
    # the first profiled cell runs in that very process, with the notebook's state
    result = kernel.run("import os\npid = os.getpid()\nn = len(rows)", {"scorep": BUILTIN_SUB})
    assert result.status == "ok", result.messages
    assert kernel.value("pid") == ready.pid
    assert kernel.value("n") == 3
    # a second notice changes nothing: the kernel has its recipe from the run now
    again = kernel.notice({"version": 1, "profiled_cells": [BUILTIN_SUB]})
    assert again["spare"] == "preparing"


def test_no_spare_for_a_notebook_that_profiles_only_in_process(kernel):
    answer = kernel.notice({"version": 1, "profiled_cells": [BUILTIN_IN, {"profile": False}]})
    assert answer == {
        "version": 1,
        "spare": "not needed",
        "why": "no profiled cell runs in a subprocess",
    }
    assert kernel.run("x = 1").status == "ok"
    assert workers(kernel_process(kernel)) == []
    assert "none running" in kernel.run("%scorep").stdout()


def test_spare_worker_off_is_honoured(kernel):
    assert kernel.run("%scorep spare_worker=off").status == "ok"
    answer = kernel.notice({"version": 1, "profiled_cells": [BUILTIN_SUB]})
    assert answer["spare"] == "off" and "spare_worker=off" in answer["why"]
    assert kernel.run("x = 1").status == "ok"
    assert workers(kernel_process(kernel)) == []


@pytest.mark.parametrize(
    "data",
    [None, "prepare", {"version": 99, "profiled_cells": []}, {"version": 1, "profiled_cells": 3}],
)
def test_a_malformed_notice_is_answered_and_changes_nothing(kernel, data):
    answer = kernel.notice(data)
    assert answer["spare"] == "not needed" and answer["why"]
    assert kernel.value("1 + 1") == 2
    assert workers(kernel_process(kernel)) == []


def test_cells_with_settings_that_cannot_run_are_named_not_fatal():
    settings = KernelSettings.from_environ({})
    available = Availability(False, "Score-P is not installed.", True, "")
    bad = {"profile": True, "colour": "red"}
    verdict = read_notice({"version": 1, "profiled_cells": [bad, "x"]}, settings, available)
    assert verdict.spare == "not needed" and "2 with settings that cannot run" in verdict.why
    assert "colour" in verdict.why
    # one runnable subprocess cell among bad ones is enough
    verdict = read_notice({"version": 1, "profiled_cells": [bad, BUILTIN_SUB]}, settings, available)
    assert verdict.spare == "preparing" and verdict.settings is not None
    assert verdict.settings.backend == "builtin"
    # a Score-P cell where Score-P is missing cannot run: no spare for it
    scorep = {"profile": True, "backend": "scorep"}
    verdict = read_notice({"version": 1, "profiled_cells": [scorep]}, settings, available)
    assert verdict.spare == "not needed" and "Score-P is not installed" in verdict.why
