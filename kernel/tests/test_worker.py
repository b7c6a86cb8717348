"""The worker process on its own, driven through the kernel's client side (no kernel)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from scorep_kernel.background import BackgroundTasks
from scorep_kernel.measure.measure_config import MeasureConfig
from scorep_kernel.runs.worker_recipe import WorkerRecipe
from scorep_kernel.state import transfer
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.client import WorkerKey, WorkerProcess
from scorep_kernel.worker.pool import WorkerPool

pytestmark = pytest.mark.timeout(120)
BUILTIN = WorkerKey("builtin", (), ())


class ChangedKey(WorkerRecipe):
    def key(self) -> WorkerKey:
        return WorkerKey("builtin", (), ("--changed",))


def cell(code: str, state: bytes) -> msg.Cell:
    return msg.Cell(code, "cell [1]", 1, None, state, None, False)


async def _run_cell(worker: WorkerProcess, namespace: dict, code: str):
    packet = transfer.pack(namespace)
    await worker.send(cell(code, packet.header))
    messages = []
    while True:
        message = await worker.recv()
        if isinstance(message, msg.StateReceived):
            packet.release()
        messages.append(message)
        if isinstance(message, msg.CellDone):
            break
    assert message.state is not None
    unpacked = transfer.unpack(message.state)
    await worker.send(msg.StateReceived())
    transfer.apply_in_kernel(namespace, unpacked, packet)
    return messages, message


def test_worker_runs_a_measured_cell_and_writes_the_experiment(tmp_path):
    async def scenario():
        worker = await WorkerProcess.spawn(BUILTIN, dict(os.environ), str(tmp_path))
        ready = await worker.wait_ready()
        assert ready.pid == worker.pid and ready.backend == "builtin"
        await worker.send(msg.Preload(["json", "no_such_module_xyz"]))
        preloaded = await worker.recv_until(msg.Preloaded, 30)
        assert preloaded.failed == ["no_such_module_xyz"]
        exp = tmp_path / "exp"
        exp.mkdir()
        from scorep_kernel import manifest as mf

        mf.write_manifest(exp, mf.new_manifest("x", backend="builtin", isolation="subprocess"))
        await worker.send(msg.StartRun(str(exp), MeasureConfig(), {"SCOREP_X": "1"}))
        started = await worker.recv_until(msg.RunStarted, 30)
        namespace = {"a": 1}
        messages, done = await _run_cell(
            worker, namespace, "import os\nb = a + 1\nprint(os.environ['SCOREP_X'])\nb"
        )
        assert done.status == "ok"
        assert msg.Stream("stdout", "1\n") in messages
        assert any(isinstance(m, msg.ExecuteResult) for m in messages)
        assert namespace["b"] == 2
        await worker.send(msg.FinishRun())
        stopped = await worker.recv_until(msg.RunStopped, 60)
        files = await worker.recv_until(msg.FilesDone, 60)
        code = await worker.wait_exit(10)
        await worker.close()
        return started, stopped, files, code, exp

    started, stopped, files, code, exp = asyncio.run(scenario())
    assert started.error is None and started.measured is True
    assert stopped.measured and stopped.events >= 2
    assert files.status == "ready", files
    assert code == 0
    assert (exp / "traces.otf2").exists() and (exp / "profile.cubex").exists()


def test_worker_ignores_sigint_between_cells(tmp_path):
    async def scenario():
        worker = await WorkerProcess.spawn(BUILTIN, dict(os.environ), str(tmp_path))
        await worker.wait_ready()
        await worker.send(msg.StartRun(str(tmp_path), None, {}))
        await worker.recv_until(msg.RunStarted, 30)
        _, first = await _run_cell(worker, {}, "x = 1")
        worker.interrupt()  # between cells: remembered, stops the next cell before it runs
        await asyncio.sleep(0.2)
        alive = worker.alive()
        _, second = await _run_cell(worker, {}, "y = 2")
        _, third = await _run_cell(worker, {}, "z = 3")
        await worker.close(graceful=False)
        return alive, first, second, third

    alive, first, second, third = asyncio.run(scenario())
    assert alive and first.status == "ok"
    assert second.interrupted and second.ename == "KeyboardInterrupt"
    assert third.status == "ok", "a stale interrupt must not stop later cells"


def test_pool_reuses_a_matching_spare_and_replaces_others(tmp_path):
    async def scenario():
        pool = WorkerPool(BackgroundTasks())
        builtin = WorkerRecipe("builtin")
        pool.prepare(builtin, str(tmp_path), ["json"])
        first, was_spare = await pool.take(builtin, str(tmp_path))
        assert was_spare and first.ready is not None
        pool.prepare(builtin, str(tmp_path), [])
        # a recipe whose key differs (start-time settings changed) gets a fresh process
        other = ChangedKey("builtin")
        assert other.key() != builtin.key()
        second, was_spare_2 = await pool.take(other, str(tmp_path))
        await second.wait_ready()
        for w in (first, second):
            await w.close(graceful=False)
        await pool.close()
        return was_spare_2

    assert asyncio.run(scenario()) is False


def test_worker_exits_when_its_kernel_is_killed(tmp_path):
    parent = textwrap.dedent(
        f"""
        import asyncio, os, sys, time
        sys.path.insert(0, {str(tmp_path)!r})
        from scorep_kernel.worker.client import WorkerKey, WorkerProcess
        async def main():
            w = await WorkerProcess.spawn(WorkerKey("builtin", (), ()), dict(os.environ), {str(tmp_path)!r})
            await w.wait_ready()
            print(w.pid, flush=True)
            time.sleep(60)
        asyncio.run(main())
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    try:
        worker_pid = int(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(worker_pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(worker_pid, signal.SIGKILL)
    pytest.fail("the worker outlived its kernel by 10 s")


def test_unreadable_state_is_an_error_not_a_dead_worker(tmp_path):
    async def scenario():
        worker = await WorkerProcess.spawn(BUILTIN, dict(os.environ), str(tmp_path))
        await worker.wait_ready()
        await worker.send(msg.StartRun(str(tmp_path), None, {}))
        await worker.recv_until(msg.RunStarted, 30)
        await worker.send(cell("ran = 1", b"not a state header"))
        done = await worker.recv_until(msg.CellDone, 30)
        _, after = await _run_cell(worker, {}, "x = 1")
        await worker.close(graceful=False)
        return done, after

    done, after = asyncio.run(scenario())
    assert done.status == "error" and done.ename == "NamespaceTransferError"
    assert done.state is None and "did not run" in done.evalue
    assert after.status == "ok"
