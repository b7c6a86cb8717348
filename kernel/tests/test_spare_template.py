"""Builtin spares forked from a preloaded template (worker.template, worker.forking): the
next profiled cells run in forks of it, a forked worker's death and interrupt read as a
fresh worker's, the template goes with the kernel, and it can be turned off; Score-P
workers never come from it."""

from __future__ import annotations

import re
import time

import psutil
import pytest
from test_kernel_harness import KernelHandle

from scorep_kernel.measure.detect import detect_scorep
from scorep_kernel.settings import KernelSettings, SettingsError

pytestmark = pytest.mark.timeout(180)
BUILTIN_SUB = {"scorep": {"profile": True, "backend": "builtin", "isolation": "subprocess"}}
PARENT = "import os\nprint('parent', os.getppid(), flush=True)\n"


def until(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def shown(kernel: KernelHandle) -> tuple[int | None, int | None]:
    """(pid of the ready spare, pid of the template) as %scorep names them."""
    out = kernel.run("%scorep").stdout()
    spare = re.search(r"Spare worker: pid (\d+) \(ready", out)
    template = re.search(r"Spare template: pid (\d+) \(ready", out)
    return (int(spare[1]) if spare else None), (int(template[1]) if template else None)


def ready_spare(kernel: KernelHandle) -> tuple[int, int | None]:
    seen: list = []

    def named() -> bool:
        seen[:] = shown(kernel)
        return seen[0] is not None

    assert until(named), "no spare worker"
    return seen[0], seen[1]


def parent_of_cell(result) -> int:
    assert result.status == "ok", result.reply
    return int(re.search(r"parent (\d+)", result.stdout())[1])


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_profiled_cells_after_the_first_run_in_forks_of_the_template(kernel):
    first = kernel.run(PARENT + "a = 1", BUILTIN_SUB)
    kernel_pid = kernel.value("__import__('os').getpid()")
    assert parent_of_cell(first) == kernel_pid  # fresh: the kernel's child
    spare, template = ready_spare(kernel)
    assert template is not None
    assert psutil.Process(spare).ppid() == template
    # back to back: the second takes the spare, the third the fork made right after it
    second = kernel.run(PARENT + "b = a + 1", BUILTIN_SUB)
    third = kernel.run(PARENT + "c = b + 1", BUILTIN_SUB)
    assert parent_of_cell(second) == template
    assert parent_of_cell(third) == template
    assert "worker_fresh" not in third.manifest()["timings"]
    assert kernel.value("c") == 3
    # what the notebook imports is imported in the template, so in its forks
    kernel.run("import wave")
    assert until(lambda: "wave" in kernel.run("%scorep").stdout().split("Spare template")[1])
    fourth = kernel.run(PARENT + "import sys\nhad = 'wave' in sys.modules", BUILTIN_SUB)
    assert parent_of_cell(fourth) == template
    assert kernel.value("had") is True


def test_a_forked_worker_killed_mid_cell_reads_as_a_fresh_one(kernel):
    assert kernel.run("import os, signal\nvalue = 'before'", BUILTIN_SUB).status == "ok"
    spare, template = ready_spare(kernel)
    assert template is not None
    code = "value = 'changed'\nnew_name = 1\nos.kill(os.getpid(), signal.SIGKILL)"
    result = kernel.run(code, BUILTIN_SUB)
    assert result.status == "error"
    assert result.reply["ename"] == "ProfilingProcessDied"
    assert "SIGKILL" in result.reply["evalue"] and "out of memory" in result.reply["evalue"]
    assert "variables are unchanged" in result.reply["evalue"]
    assert result.manifest()["status"] == "crashed"
    assert kernel.value("value") == "before"
    assert kernel.value("'new_name' in globals()") is False
    assert until(lambda: gone(spare)), "the template reaps its child"
    again = kernel.run(PARENT + "after = value + '!'", BUILTIN_SUB)
    assert parent_of_cell(again) == template
    assert kernel.value("after") == "before!"


def test_interrupt_stops_a_forked_worker_and_keeps_partial_state(kernel):
    assert kernel.run("x = 1", BUILTIN_SUB).status == "ok"
    _, template = ready_spare(kernel)
    msg_id = kernel.send(
        PARENT + "import time\npartial = 'reached'\nprint('asleep', flush=True)\n"
        "time.sleep(600)\npartial = 'finished'", BUILTIN_SUB,
    )  # fmt: skip
    kernel.wait_output(msg_id, "asleep")
    kernel.km.interrupt_kernel()
    result = kernel.collect(msg_id, timeout=120)
    assert result.status == "error" and result.reply["ename"] == "KeyboardInterrupt"
    assert int(re.search(r"parent (\d+)", result.stdout())[1]) == template
    assert result.manifest()["status"] == "interrupted"
    assert kernel.value("partial") == "reached"


def test_a_dead_template_costs_no_cell(kernel):
    assert kernel.run("x = 1", BUILTIN_SUB).status == "ok"
    spare, template = ready_spare(kernel)
    assert template is not None
    psutil.Process(template).kill()
    assert until(lambda: gone(template))
    assert until(lambda: gone(spare)), "its children end with it"
    result = kernel.run(PARENT + "y = x + 1", BUILTIN_SUB)
    assert result.status == "ok", result.reply
    assert kernel.value("y") == 2
    # a new template comes with the next spare
    _, again = ready_spare(kernel)
    assert again is not None and again != template


def test_a_template_closed_mid_run_does_not_end_the_run(kernel):
    """A multi-cell run holds a forked worker across cells; turning the template off (or a
    switch to Score-P) between them closes the template, which must not end that run."""
    assert kernel.run("x = 1", BUILTIN_SUB).status == "ok"
    _, template = ready_spare(kernel)
    assert template is not None
    run = {"scorep": {**BUILTIN_SUB["scorep"], "run": "two"}}
    first = kernel.run(PARENT + "print('pid', os.getpid())\ny = x + 1", run)
    assert parent_of_cell(first) == template
    worker = int(re.search(r"pid (\d+)", first.stdout())[1])
    assert kernel.run("%scorep spare_template=false").status == "ok"
    assert until(lambda: gone(template)), "the template is closed"
    assert until(lambda: psutil.Process(worker).ppid() != template), "the worker orphaned"
    # the worker watches its parent every second: a worker that ended with its template
    # would be gone during this cell's sleep
    last = kernel.run(
        "import time\ntime.sleep(2.5)\nz = y + 1", {"scorep": {**run["scorep"], "last": True}}
    )
    assert last.status == "ok", last.reply
    assert last.manifest()["status"] == "ok"
    assert kernel.value("z") == 3


def test_shutdown_leaves_no_template_and_no_fork(tmp_path):
    kernel = KernelHandle(tmp_path)
    try:
        assert kernel.run("x = 1", BUILTIN_SUB).status == "ok"
        spare, template = ready_spare(kernel)
    finally:
        kernel.shutdown()
    assert template is not None
    assert until(lambda: gone(template) and gone(spare))


def test_spare_template_off_starts_spares_fresh(tmp_path):
    kernel = KernelHandle(tmp_path, env={"SCOREP_KERNEL_SPARE_TEMPLATE": "0"})
    try:
        assert kernel.run("x = 1", BUILTIN_SUB).status == "ok"
        spare, template = ready_spare(kernel)
        assert template is None
        kernel_pid = kernel.value("__import__('os').getpid()")
        assert psutil.Process(spare).ppid() == kernel_pid
        assert parent_of_cell(kernel.run(PARENT + "y = 2", BUILTIN_SUB)) == kernel_pid
        # and on again with %scorep
        assert kernel.run("%scorep spare_template=true").status == "ok"
        assert kernel.run("z = 3", BUILTIN_SUB).status == "ok"

        def templated() -> bool:
            spare, template = shown(kernel)
            return template is not None and spare is not None

        assert until(templated)
        assert "spare template on" in kernel.run("%scorep").stdout()
    finally:
        kernel.shutdown()


SCOREP = detect_scorep()


@pytest.mark.skipif(not SCOREP["available"], reason=SCOREP["message"])
def test_scorep_workers_never_come_from_the_template(kernel):
    scorep = {"scorep": {"profile": True, "backend": "scorep"}}
    assert kernel.run("x = 1", BUILTIN_SUB).status == "ok"
    ready_spare(kernel)  # a template for the builtin backend
    kernel_pid = kernel.value("__import__('os').getpid()")
    first = kernel.run(PARENT + "y = 2", scorep, timeout=120)
    assert parent_of_cell(first) == kernel_pid
    spare, template = ready_spare(kernel)
    assert template is None  # not wanted for Score-P spares
    assert psutil.Process(spare).ppid() == kernel_pid
    assert parent_of_cell(kernel.run(PARENT + "z = 3", scorep, timeout=120)) == kernel_pid


def test_the_setting_and_its_variable():
    assert KernelSettings.from_environ({}).spare_template is True
    off = KernelSettings.from_environ({"SCOREP_KERNEL_SPARE_TEMPLATE": "false"})
    assert off.spare_template is False
    bad = KernelSettings.from_environ({"SCOREP_KERNEL_SPARE_TEMPLATE": "maybe"})
    assert bad.spare_template is True and "SCOREP_KERNEL_SPARE_TEMPLATE" in bad.environ_problem
    settings = KernelSettings()
    assert settings.update_from_line("spare_template=off") == ["spare_template=False"]
    assert settings.spare_template is False
    with pytest.raises(SettingsError, match="true or false"):
        settings.update_from_line("spare_template=sometimes")


def after_the_last_reply(kernel: KernelHandle) -> None:
    """Once the kernel has done what it does after the last cell's reply (it prepares the
    spare then, ScorePKernel.defer): the main shell takes the next message only after
    that, and a kernel_info request runs no cell, so it defers nothing itself."""
    kernel.kc.kernel_info(reply=True, timeout=60)


def test_without_a_spare_the_run_forks_one_at_once(kernel):
    assert kernel.run("x = 1", BUILTIN_SUB).status == "ok"
    spare, template = ready_spare(kernel)
    # The spare is killed only after the kernel's look at it that follows the %scorep
    # cell's reply: killed before it, the death was seen there and a new spare made (a
    # spare_ready run, about 1 in 2 under load). From here on only the next run's own
    # take() looks, and it finds the spare dead.
    after_the_last_reply(kernel)
    psutil.Process(spare).kill()
    assert until(lambda: gone(spare))
    result = kernel.run(PARENT + "y = x + 1", BUILTIN_SUB)
    assert parent_of_cell(result) == template
    assert "worker_forked" in result.manifest()["timings"], sorted(result.manifest()["timings"])


def test_forks_draw_their_own_random_numbers(kernel):
    draw = "import numpy\nnumpy_draw = float(numpy.random.random())"
    # numpy.random imported here is imported in the template too (then forks share its
    # state unless reseeded)
    assert kernel.run(draw, BUILTIN_SUB).status == "ok"
    assert until(lambda: "numpy.random" in kernel.run("%scorep").stdout().split("template")[-1])
    draws = []
    for _ in range(2):
        assert kernel.run(PARENT + draw, BUILTIN_SUB).status == "ok"
        draws.append(kernel.value("numpy_draw"))
    assert draws[0] != draws[1]


def test_a_killed_kernel_leaves_no_template_and_no_fork(kernel):
    assert kernel.run("x = 1", BUILTIN_SUB).status == "ok"
    spare, template = ready_spare(kernel)
    assert template is not None
    kernel_proc = psutil.Process(kernel.value("__import__('os').getpid()"))
    # a cell runs: the template and the spare are paused (SIGSTOP) when the kernel dies
    kernel.send("import time\ntime.sleep(600)")
    assert until(lambda: psutil.Process(template).status() == psutil.STATUS_STOPPED)
    kernel_proc.kill()
    assert until(lambda: gone(template) and gone(spare))


def test_forks_of_the_template_import_the_shim_not_the_installed_bindings(kernel):
    """issue 20.1: the paper's standard cell in every subprocess cell, the template's forks
    included, even where Score-P's real bindings are installed (they would be found first
    by a template that imports the notebook's ``scorep``)."""
    cell = (
        PARENT
        + "import scorep\n"
        + "with scorep.instrumenter.enable():\n"
        + "    total = sum(range(10))\n"
        + "shim = getattr(scorep, 'BUILTIN_SHIM', False)\n"
    )
    first = kernel.run(cell, BUILTIN_SUB)
    assert first.status == "ok", first.reply
    _, template = ready_spare(kernel)
    assert template is not None
    # the notebook imported scorep: the template has it too, so its forks find it there
    assert until(lambda: "scorep" in kernel.run("%scorep").stdout().split("Spare template")[1])
    for _ in range(2):
        later = kernel.run(cell, BUILTIN_SUB)
        assert parent_of_cell(later) == template
        assert later.stderr() == ""
        assert kernel.value("shim") is True
        assert kernel.value("total") == 45


def test_the_next_spare_is_forked_while_a_subprocess_cell_runs(kernel):
    # Run All sends the next cell right after this one's reply: its spare is made while
    # this cell runs in its worker (the kernel is idle then), and it is not paused.
    assert kernel.run("import os, psutil", BUILTIN_SUB).status == "ok"
    assert until(lambda: "psutil" in kernel.run("%scorep").stdout().split("Spare template")[1])
    watch = (
        "template = psutil.Process(os.getppid())\n"
        "deadline = time.monotonic() + 60\n"
        "spare_pid, seen = None, None\n"
        "while spare_pid is None and time.monotonic() < deadline:\n"
        "    for child in template.children():\n"
        "        if child.pid != os.getpid() and child.status() not in ('stopped', 'zombie'):\n"
        "            spare_pid, seen = child.pid, child.status()\n"
        "    time.sleep(0.02)\n"
    )
    during = kernel.run("import time\n" + watch, BUILTIN_SUB)
    assert during.status == "ok", during.reply
    spare_pid = kernel.value("spare_pid")
    assert spare_pid is not None, "no spare forked while the cell ran"
    # the next cell runs in that very process: it was the spare, ready for it
    after = kernel.run("pid = os.getpid()", BUILTIN_SUB)
    assert after.status == "ok", after.reply
    assert kernel.value("pid") == spare_pid
    assert "worker_fresh" not in after.manifest()["timings"]


def test_what_a_running_cell_imports_the_template_imports_for_the_next(kernel):
    assert kernel.run("x = 1", BUILTIN_SUB).status == "ok"
    ready_spare(kernel)
    # `wave` imported by the cell: the template imports it while the cell goes on, and
    # the spare is forked again from it, so the next cell has it without importing it
    code = "import wave, sys, time\ntime.sleep(0.5)\nname = wave.__name__"
    assert kernel.run(code, BUILTIN_SUB).status == "ok"
    assert until(lambda: "wave" in kernel.run("%scorep").stdout().split("Spare template")[1])
    nxt = kernel.run("import sys\nhad = 'wave' in sys.modules", BUILTIN_SUB)
    assert nxt.status == "ok", nxt.reply
    assert kernel.value("had") is True


def test_a_forks_first_cell_finds_ipython_warm(kernel):
    # the template ran a cell in a throwaway shell: a fork's first cell does not record
    # IPython's first-run paths (a cold shell's first cell: ~6,500 calls, all dropped)
    assert kernel.run("x = 1", BUILTIN_SUB).status == "ok"
    spare, template = ready_spare(kernel)
    result = kernel.run(PARENT + "y = 2", BUILTIN_SUB)
    assert parent_of_cell(result) == template
    assert result.manifest()["measurement"]["recorded_calls"] < 3000


def test_an_import_that_fails_in_the_cell_leaves_one_spare(kernel):
    # reported when it began, it never imports: the spare must not be forked for it
    # again and again (it lacked the module for ever)
    code = "try:\n    import no_such_module_for_the_spare\nexcept ImportError:\n    pass\nx = 1"
    assert kernel.run(code, BUILTIN_SUB).status == "ok"
    spare, _template = ready_spare(kernel)

    def forks() -> int:
        return int(re.search(r"(\d+) forks", kernel.run("%scorep").stdout())[1])

    before = forks()
    time.sleep(2.0)  # a refork loop forks every ~0.1 s
    assert forks() == before
    assert shown(kernel)[0] == spare
