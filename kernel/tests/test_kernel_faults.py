"""Faults in a profiled cell: the kernel survives the worker's death with its namespace
untouched, interrupts stop the cell within about a second and keep partial state, and
values that cannot travel are named and explained."""

from __future__ import annotations

import time

import pytest
from test_kernel_harness import PROFILE_SUB, KernelHandle

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k = KernelHandle(tmp_path_factory.mktemp("faults"))
    assert k.run("import os, signal, ctypes\nvalue = 'before'\nsurvivor = [1, 2]").status == "ok"
    yield k
    k.shutdown()


DEATHS = {
    "segfault": ("ctypes.string_at(0)", "SIGSEGV"),
    "os._exit": ("os._exit(3)", "exited with status 3"),
    "SIGKILL": ("os.kill(os.getpid(), signal.SIGKILL)", "SIGKILL"),
}


@pytest.mark.parametrize("death", list(DEATHS))
def test_worker_death_leaves_namespace_unchanged(kernel, death):
    code, words = DEATHS[death]
    result = kernel.run(f"value = 'changed'\nsurvivor.append(3)\nnew_name = 1\n{code}", PROFILE_SUB)
    assert result.status == "error"
    assert result.reply["ename"] == "ProfilingProcessDied"
    assert words in result.reply["evalue"]
    assert "variables are unchanged" in result.reply["evalue"]
    if death == "SIGKILL":
        assert "out of memory" in result.reply["evalue"]
    assert result.of("error"), "the error is published on iopub"
    assert result.bundle()["status"] == "crashed"
    manifest = result.manifest()
    assert manifest["status"] == "crashed" and manifest["errors"]
    assert manifest["end_ns"] is not None
    # the kernel answers, exactly as before the cell
    assert kernel.value("value") == "before"
    assert kernel.value("survivor") == [1, 2]
    assert kernel.value("'new_name' in globals()") is False
    # and the next profiled cell works
    again = kernel.run("after_crash = value + '!'", PROFILE_SUB)
    assert again.status == "ok", again.reply
    assert kernel.value("after_crash") == "before!"


def test_interrupt_stops_cell_quickly_and_keeps_partial_state(kernel):
    t0 = time.monotonic()
    msg_id = kernel.send(
        "import time\npartial = 'reached'\nprint('asleep', flush=True)\ntime.sleep(30)\n"
        "partial = 'finished'", PROFILE_SUB,
    )  # fmt: skip
    kernel.wait_output(msg_id, "asleep")
    time.sleep(0.3)
    sent = time.monotonic()
    kernel.km.interrupt_kernel()
    result = kernel.collect(msg_id, timeout=30, t0=t0)
    stopped_after = result.messages[-1][0] - (sent - t0)
    assert stopped_after < 1.5, f"the cell took {stopped_after:.2f} s to stop"
    assert result.status == "error" and result.reply["ename"] == "KeyboardInterrupt"
    assert result.manifest()["status"] == "interrupted"
    assert kernel.value("partial") == "reached"
    assert kernel.value("value") == "before"


def test_interrupt_that_cannot_stop_the_cell_kills_the_worker(kernel):
    # The cell blocks SIGINT (as native code stuck in a system call effectively does): the
    # kernel kills the worker after its grace period and keeps the namespace as it was.
    code = (
        "stuck = 'in worker'\nimport signal, time\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])\n"
        "print('blocked', flush=True)\ntime.sleep(30)"
    )
    msg_id = kernel.send(code, PROFILE_SUB)
    kernel.wait_output(msg_id, "blocked")
    sent = time.monotonic()
    kernel.km.interrupt_kernel()
    result = kernel.collect(msg_id, timeout=30)
    assert time.monotonic() - sent < 8
    assert result.status == "error" and result.reply["ename"] == "ProfilingProcessDied"
    assert "did not stop" in result.reply["evalue"]
    assert result.manifest()["status"] == "crashed"
    assert kernel.value("'stuck' in globals()") is False


def test_exception_keeps_state_as_of_the_error(kernel):
    result = kernel.run("step = 1\nstep = 2\n{}['missing']\nstep = 3", PROFILE_SUB)
    assert result.status == "error" and result.reply["ename"] == "KeyError"
    assert "line 3" in "\n".join(result.reply["traceback"])
    assert kernel.value("step") == 2
    assert result.manifest()["status"] == "error"


def test_unpicklable_value_is_named_and_explained(kernel):
    assert kernel.run("def gen():\n    yield 1\n    yield 2\nstream_gen = gen()").status == "ok"
    result = kernel.run("ran = 'yes'", PROFILE_SUB)
    assert result.status == "ok", result.reply
    assert "stream_gen" in result.stderr() and "generator" in result.stderr()
    assert kernel.value("ran") == "yes"
    used = kernel.run("next(stream_gen)", PROFILE_SUB)
    assert used.status == "error"
    assert "stream_gen" in used.reply["evalue"] and "profil" in used.reply["evalue"]
    # the kernel's generator is untouched by all this
    assert kernel.run("print(next(stream_gen))").stdout() == "1\n"


def test_unpicklable_made_in_cell_stays_behind_with_a_warning(kernel):
    result = kernel.run("import threading\nmade_lock = threading.Lock()\nplain = 5", PROFILE_SUB)
    assert result.status == "ok", result.reply
    assert "made_lock" in result.stderr()
    assert kernel.value("plain") == 5


def test_kernel_process_alive_after_all(kernel):
    assert kernel.km.is_alive()
    assert kernel.run("print('still here')").stdout() == "still here\n"


def test_interrupt_while_idle_is_harmless(kernel):
    """An interrupt that arrives while the kernel is idle must not break the next cell."""
    kernel.km.interrupt_kernel()
    time.sleep(0.3)
    result = kernel.run("quiet = 1", PROFILE_SUB)
    assert result.status == "ok", result.reply


def test_interrupt_while_the_worker_starts_cancels_the_cell(kernel):
    assert kernel.run("%scorep spare_worker=false").status == "ok"
    try:
        msg_id = kernel.send("never_ran = 1", PROFILE_SUB)
        time.sleep(0.15)  # the kernel has the request; a fresh interpreter needs ~0.5 s or more
        kernel.km.interrupt_kernel()
        result = kernel.collect(msg_id, timeout=60)
    finally:
        assert kernel.run("%scorep spare_worker=true").status == "ok"
    assert result.status == "error" and result.reply["ename"] == "KeyboardInterrupt"
    assert kernel.value("'never_ran' in globals()") is False
    assert result.manifest()["status"] == "interrupted"
    assert kernel.run("ok_again = 1", PROFILE_SUB).status == "ok"


def test_input_in_a_profiled_cell_is_asked_of_the_notebook(kernel):
    result, asked = kernel.run_answering(
        "answer = input('name? ')\nprint('hi', answer)", PROFILE_SUB, "Ada"
    )
    assert result.status == "ok", result.reply
    assert asked == {"prompt": "name? ", "password": False}
    assert "hi Ada" in result.stdout()
    assert kernel.value("answer") == "Ada"
    # a frontend without stdin gets the stock kernel's error
    refused = kernel.run("answer2 = input('name? ')", PROFILE_SUB)
    assert refused.status == "error" and refused.reply["ename"] == "StdinNotImplementedError"


def test_interrupt_while_input_waits(kernel):
    msg_id = kernel.send("before_input = 1\nnever = input('? ')", PROFILE_SUB, allow_stdin=True)
    kernel.kc.get_stdin_msg(timeout=60)  # the request reached the notebook
    sent = time.monotonic()
    kernel.km.interrupt_kernel()
    result = kernel.collect(msg_id, timeout=30)
    assert time.monotonic() - sent < 5
    assert result.status == "error" and result.reply["ename"] == "KeyboardInterrupt"
    assert kernel.value("before_input") == 1 and kernel.value("'never' in globals()") is False
    assert kernel.run("after_input = 1", PROFILE_SUB).status == "ok"


def test_inprocess_interrupt_and_error_are_recorded(kernel):
    inproc = {"scorep": {"profile": True, "backend": "builtin", "isolation": "inprocess"}}
    msg_id = kernel.send(
        "import time\nin_partial = 1\nprint('asleep', flush=True)\ntime.sleep(30)", inproc
    )
    kernel.wait_output(msg_id, "asleep")
    time.sleep(0.3)
    sent = time.monotonic()
    kernel.km.interrupt_kernel()
    result = kernel.collect(msg_id, timeout=30)
    assert time.monotonic() - sent < 3
    assert result.status == "error" and result.reply["ename"] == "KeyboardInterrupt"
    assert result.manifest()["status"] == "interrupted"
    assert kernel.value("in_partial") == 1
    failed = kernel.run("in_err = 1\nraise RuntimeError('in-process boom')", inproc)
    assert failed.reply["ename"] == "RuntimeError" and failed.manifest()["status"] == "error"
    assert kernel.value("in_err") == 1
