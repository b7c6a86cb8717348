"""Faults in a profiled cell: the kernel survives the worker's death with its namespace
untouched, interrupts stop the cell and keep partial state, and values that cannot travel
are named and explained. (How fast an interrupt stops a cell is a benchmark's figure,
benchmarks/kernel_cell_latency.py, not an assert here.)"""

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


def test_interrupt_stops_the_cell_and_keeps_partial_state(kernel):
    # The cell would sleep for 10 minutes: stopped by the interrupt, or the test times out.
    msg_id = kernel.send(
        "import time\npartial = 'reached'\nprint('asleep', flush=True)\ntime.sleep(600)\n"
        "partial = 'finished'", PROFILE_SUB,
    )  # fmt: skip
    kernel.wait_output(msg_id, "asleep")
    kernel.km.interrupt_kernel()
    result = kernel.collect(msg_id, timeout=120)
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
        "print('blocked', flush=True)\ntime.sleep(600)"
    )
    msg_id = kernel.send(code, PROFILE_SUB)
    kernel.wait_output(msg_id, "blocked")
    kernel.km.interrupt_kernel()
    result = kernel.collect(msg_id, timeout=120)
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
    assert result.stderr() == ""  # a cell that never touches it hears nothing of it
    assert kernel.value("ran") == "yes"
    used = kernel.run("next(stream_gen)", PROFILE_SUB)
    assert used.status == "error"
    assert "stream_gen" in used.reply["evalue"] and "profil" in used.reply["evalue"]
    # the kernel's generator is untouched by all this
    assert kernel.run("print(next(stream_gen))").stdout() == "1\n"


def test_unpicklable_made_in_cell_is_said_in_words_and_explains_itself(kernel):
    result = kernel.run("import threading\nmade_lock = threading.Lock()\nplain = 5", PROFILE_SUB)
    assert result.status == "ok", result.reply
    assert result.stderr() == ""
    assert "made_lock (a lock)" in result.bundle()["summary"]["message"]
    assert kernel.value("plain") == 5
    used = kernel.run("made_lock.acquire()")
    assert used.status == "error" and used.reply["ename"] == "NotTransferredError"


def test_kernel_process_alive_after_all(kernel):
    assert kernel.km.is_alive()
    assert kernel.run("print('still here')").stdout() == "still here\n"


def test_interrupt_while_idle_is_harmless(kernel):
    """An interrupt that arrives while the kernel is idle must not break the next cell."""
    kernel.km.interrupt_kernel()
    result = kernel.run("quiet = 1", PROFILE_SUB)
    assert result.status == "ok", result.reply


def test_interrupt_while_the_worker_starts_cancels_the_cell(kernel, tmp_path):
    # A gate in the worker's start (a sitecustomize on its PYTHONPATH): it says when the
    # worker is starting, and waits to be let through. The interrupt lands in that window.
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "sitecustomize.py").write_text(
        "import os, pathlib, time\n"
        f"gate = pathlib.Path({str(gate)!r})\n"
        "(gate / 'starting').touch()\n"
        "while not (gate / 'open').exists():\n"
        "    time.sleep(0.01)\n"
    )
    setup = f"_pp = os.environ.get('PYTHONPATH')\nos.environ['PYTHONPATH'] = {str(gate)!r}"
    assert kernel.run("%scorep spare_worker=false").status == "ok"
    assert kernel.run(setup).status == "ok"
    try:
        msg_id = kernel.send("never_ran = 1", PROFILE_SUB)
        while not (gate / "starting").exists():
            time.sleep(0.01)
        kernel.km.interrupt_kernel()  # while the kernel waits for its worker
        (gate / "open").touch()
        result = kernel.collect(msg_id, timeout=60)
    finally:
        (gate / "open").touch()
        restore = (
            "os.environ.pop('PYTHONPATH') if _pp is None else os.environ.update(PYTHONPATH=_pp)"
        )
        assert kernel.run(restore).status == "ok"
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
    kernel.km.interrupt_kernel()
    result = kernel.collect(msg_id, timeout=60)
    assert result.status == "error" and result.reply["ename"] == "KeyboardInterrupt"
    assert kernel.value("before_input") == 1 and kernel.value("'never' in globals()") is False
    assert kernel.run("after_input = 1", PROFILE_SUB).status == "ok"


def test_inprocess_interrupt_and_error_are_recorded(kernel):
    inproc = {"scorep": {"profile": True, "backend": "builtin", "isolation": "inprocess"}}
    msg_id = kernel.send(
        "import time\nin_partial = 1\nprint('asleep', flush=True)\ntime.sleep(600)", inproc
    )
    kernel.wait_output(msg_id, "asleep")
    kernel.km.interrupt_kernel()
    result = kernel.collect(msg_id, timeout=120)
    assert result.status == "error" and result.reply["ename"] == "KeyboardInterrupt"
    assert result.manifest()["status"] == "interrupted"
    assert kernel.value("in_partial") == 1
    failed = kernel.run("in_err = 1\nraise RuntimeError('in-process boom')", inproc)
    assert failed.reply["ename"] == "RuntimeError" and failed.manifest()["status"] == "error"
    assert kernel.value("in_err") == 1
