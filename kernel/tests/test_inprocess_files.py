"""An in-process run's files are written by a process of their own after the reply
(runs.files_process): nothing of the measurement shares the kernel's interpreter with the
next cell, and the files are whole."""

from __future__ import annotations

from pathlib import Path

import otf2
import pytest
from test_kernel_harness import PROFILE_IN, wait_files

pytestmark = pytest.mark.timeout(180)


def test_files_come_from_another_process_and_cells_go_on_meanwhile(kernel):
    kernel_pid = kernel.value("__import__('os').getpid()")
    code = "def f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\nr = f(18)"
    first = kernel.run(code, PROFILE_IN)
    second = kernel.run("s = r + 1", PROFILE_IN)  # back to back, while the first is written
    assert first.status == "ok" and second.status == "ok"
    assert kernel.value("s") == 2585
    for result, called in ((first, ":f"), (second, None)):
        path = Path(result.bundle()["path"])
        manifest = wait_files(path)
        assert manifest["files_status"] == "ready", manifest.get("errors")
        writer = manifest["measurement"]["written_by_pid"]
        assert writer != kernel_pid
        with otf2.reader.open(str(path / "traces.otf2")) as trace:
            names = {region.name for region in trace.definitions.regions}
        assert called is None or any(name.endswith(called) for name in names), names
    # the writers were reaped: no zombie children of the kernel are left
    zombies = "[c.pid for c in __import__('psutil').Process().children() if c.status() == 'zombie']"
    assert kernel.value(zombies) == []


def test_a_writer_stuck_in_its_fork_is_killed_and_a_thread_writes(tmp_path, monkeypatch):
    """CPython before gh-112275's fix can hang a forked child in os.fork itself (another
    thread held the runtime's lock at the fork): the child never says it is alive, so it is
    killed and the files are written in a thread of this process, whole, once."""
    import os
    import threading

    from test_tracer_util import run_cell

    from scorep_kernel import experiment
    from scorep_kernel import manifest as mf
    from scorep_kernel.measure.files import build_and_write
    from scorep_kernel.measure.measure_config import MeasureConfig
    from scorep_kernel.measure.session import Measurement
    from scorep_kernel.runs import files_process

    exp_id, exp = experiment.create_experiment_dir(explicit=tmp_path / "exp")
    mf.write_manifest(exp, mf.new_manifest(exp_id, backend="builtin", isolation="inprocess"))
    m = Measurement(exp, MeasureConfig())
    m.start()
    run_cell(m, "cell [1]", "def f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\nf(12)\n")
    recording = m.stop()

    real_fork = os.fork
    children: list[int] = []

    def fork_that_hangs_in_the_child() -> int:
        pid = real_fork()
        if pid == 0:  # as PyOS_AfterFork_Child blocked on a lock: never back in Python
            threading.Event().wait()
        children.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork_that_hangs_in_the_child)
    monkeypatch.setattr(files_process, "STARTED_WITHIN_S", 0.5)
    done = threading.Event()
    writers: list[int] = []

    summaries = []

    def instead(on_summary, on_done):
        writers.append(threading.get_native_id())
        build_and_write(exp, lambda: recording, on_summary)
        on_done()

    pid = files_process.write_in_child(exp, lambda: recording, summaries.append, done.set, instead)
    assert pid == children[0]
    assert done.wait(60), "the files were never written"
    manifest = mf.read_manifest(exp)
    assert manifest["files_status"] == "ready", manifest.get("errors")
    assert manifest["measurement"]["written_by_pid"] == os.getpid()
    assert len(writers) == 1
    assert [s.events for s in summaries] == [recording.event_count]
    with otf2.reader.open(str(exp / "traces.otf2")) as trace:
        assert any(r.name == "__main__:f" for r in trace.definitions.regions)
    with pytest.raises(ChildProcessError):  # killed and reaped: nothing left behind
        os.waitpid(pid, os.WNOHANG)
