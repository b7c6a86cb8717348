"""The spare worker costs ordinary cells nothing: none runs until the notebook profiles in a
subprocess, it is paused while the kernel runs a cell, it goes when the kernel dies, and
what a profiled cell imports is imported in the kernel while the worker still runs."""

from __future__ import annotations

import re
import time

import psutil
import pytest
from test_kernel_harness import KernelHandle

from scorep_kernel.measure.detect import detect_scorep

pytestmark = pytest.mark.timeout(180)
BUILTIN_SUB = {"scorep": {"profile": True, "backend": "builtin", "isolation": "subprocess"}}


def kernel_process(kernel: KernelHandle) -> psutil.Process:
    pid = kernel.value("__import__('os').getpid()")
    return psutil.Process(pid)


def workers(kernel_proc: psutil.Process) -> list[psutil.Process]:
    # recursive: a builtin spare is a fork of the spare template (a child of the kernel)
    return [
        p for p in kernel_proc.children(recursive=True)
        if "scorep_kernel.worker" in " ".join(p.cmdline())
    ]  # fmt: skip


def spare(kernel: KernelHandle) -> psutil.Process:
    """The spare once ready, as %scorep names it (a run's worker may still be writing its
    files). A spare still starting runs through; a ready one is paused during cells."""
    shown: list[str] = []

    def named() -> bool:
        shown[:] = re.findall(r"Spare worker: pid (\d+) \(ready", kernel.run("%scorep").stdout())
        return bool(shown)

    assert until(named), "no spare worker"
    return psutil.Process(int(shown[0]))


def until(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_no_spare_until_the_notebook_profiles_in_a_subprocess(kernel):
    proc = kernel_process(kernel)
    for code in ("a = 1", "b = a + 1", "import json"):
        assert kernel.run(code).status == "ok"
    inproc = {"scorep": {"profile": True, "backend": "builtin", "isolation": "inprocess"}}
    assert kernel.run("c = b + 1", inproc).status == "ok"
    assert workers(proc) == []
    assert "none running" in kernel.run("%scorep").stdout()
    # the first subprocess run starts one for the next
    assert kernel.run("d = c + 1", BUILTIN_SUB).status == "ok"
    assert spare(kernel).pid in [p.pid for p in workers(proc)]
    assert kernel.value("d") == 4


def test_the_spare_is_paused_while_a_cell_runs(kernel):
    assert kernel.run("x = 1", BUILTIN_SUB).status == "ok"
    waiting = spare(kernel)
    # the cell itself watches the spare: stopped while it runs
    watch = (
        "import psutil, time\n"
        f"p = psutil.Process({waiting.pid})\n"
        "deadline = time.monotonic() + 60\n"
        "while p.status() != psutil.STATUS_STOPPED and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "seen = p.status()"
    )
    assert kernel.run(watch).status == "ok"
    assert kernel.value("seen") == psutil.STATUS_STOPPED
    # and running again once the reply is sent
    assert until(lambda: waiting.status() != psutil.STATUS_STOPPED)


def test_a_paused_spare_ends_when_its_kernel_is_killed(kernel):
    proc = kernel_process(kernel)
    assert kernel.run("x = 1", BUILTIN_SUB).status == "ok"
    waiting = spare(kernel)
    kernel.send("import time\nprint('paused', flush=True)\ntime.sleep(600)")
    assert until(lambda: waiting.status() == psutil.STATUS_STOPPED)
    proc.kill()  # SIGKILL: no shutdown of ours runs

    def ended() -> bool:
        try:
            return waiting.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    assert until(ended)


def test_what_the_worker_imports_the_kernel_imports_meanwhile(kernel):
    # `wave` comes back as nothing but a string: only the import ahead brings it in
    assert kernel.value("'wave' in __import__('sys').modules") is False
    result = kernel.run("import wave\nname = wave.__name__", BUILTIN_SUB)
    assert result.status == "ok", result.reply
    assert until(lambda: kernel.value("'wave' in __import__('sys').modules") is True)
    # the worker's own machinery is never imported ahead
    assert kernel.value("'scorep_kernel.worker.entry' in __import__('sys').modules") is False


def test_only_what_the_cell_itself_imports_is_imported_ahead(kernel, tmp_path):
    """A package that another package's code imports (torch.optim loading torch._dynamo,
    sympy, networkx) is not imported ahead: it holds nothing the namespace refers to, and
    importing it in the kernel and the template beside the cell took the cell's CPU."""
    (tmp_path / "wa_outer.py").write_text("def load():\n    import wa_inner\n    return 1\n")
    (tmp_path / "wa_inner.py").write_text("VALUE = 2\n")
    result = kernel.run("import wa_outer\nv = wa_outer.load()", BUILTIN_SUB)
    assert result.status == "ok", result.reply
    # the kernel handles the worker's ImportStarted messages before the cell's reply
    ahead = "sorted(m for m in get_ipython().kernel.side.imports_ahead if m.startswith('wa_'))"
    assert kernel.value(ahead) == ["wa_outer"]
    assert until(lambda: kernel.value("'wa_outer' in __import__('sys').modules") is True)
    assert kernel.value("'wa_inner' in __import__('sys').modules") is False
    assert kernel.value("v") == 1


SCOREP = detect_scorep()


@pytest.mark.skipif(not SCOREP["available"], reason=SCOREP["message"])
def test_a_scorep_spare_starts_while_the_scorep_cell_runs(kernel):
    """Cells back to back: the next Score-P worker starts while this one's cell runs (the
    kernel is idle then), not after the reply. The cell itself sees it start (the spare
    made after the first run's reply is the one this cell runs in)."""
    scorep = {"scorep": {"profile": True, "backend": "scorep", "isolation": "subprocess"}}
    # the first run's worker may still be writing its files during the second cell
    assert kernel.run("import os\nfirst = os.getpid()", scorep, timeout=120).status == "ok"
    watch = (
        "import os, time, psutil\n"
        "mine = {os.getpid(), first}\n"
        f"kernel_proc = psutil.Process({kernel_process(kernel).pid})\n"
        "def others():\n"
        "    return [p.pid for p in kernel_proc.children()\n"
        "            if p.pid not in mine and 'scorep_kernel' in ' '.join(p.cmdline())]\n"
        "deadline = time.monotonic() + 60\n"
        "while not others() and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "seen = others()"
    )
    result = kernel.run(watch, scorep, timeout=120)
    assert result.status == "ok", result.reply
    seen = kernel.value("seen")
    assert len(seen) == 1, seen
    assert spare(kernel).pid == seen[0]  # the spare the next cell takes
