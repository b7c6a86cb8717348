"""A kernel that ends (killed, or shut down) while a run's files are still being written:
the experiment is reported as ended, with the reason, never "pending" for ever (the
manifest's "writers", manifest.read_manifest)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_kernel_harness import PROFILE_IN, KernelHandle

from scorep_kernel import experiment
from scorep_kernel import manifest as mf
from scorep_kernel.runs.inprocess_run import _until_written

pytestmark = pytest.mark.timeout(300)


def _raw(path: Path) -> dict:
    return json.loads((path / experiment.MANIFEST).read_text())


def _ended_process() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _pending_run(tmp_path: Path, writers: list[dict], status: str = "ok") -> Path:
    manifest = mf.new_manifest("e1", backend="builtin", isolation="inprocess")
    manifest.update(status=status, writers=writers)
    mf.write_manifest(tmp_path, manifest)
    return tmp_path


def test_a_run_whose_writers_all_ended_is_read_as_ended_with_the_reason(tmp_path):
    gone = mf.process_record(os.getpid())
    gone["pid"] = _ended_process()
    path = _pending_run(tmp_path, [gone])
    manifest = mf.read_manifest(path)
    assert manifest["files_status"] == mf.FILES_FAILED
    assert manifest["status"] == "ok"  # the cell itself had ended well
    assert "ended while this run's files were being written" in manifest["errors"][-1]
    assert _raw(path)["files_status"] == mf.FILES_FAILED  # and written down, once
    assert mf.read_manifest(path)["errors"] == manifest["errors"]


def test_a_run_still_going_when_its_kernel_ended_crashed(tmp_path):
    gone = mf.process_record(os.getpid())
    gone["pid"] = _ended_process()
    manifest = mf.read_manifest(_pending_run(tmp_path, [gone], status="running"))
    assert manifest["status"] == mf.STATUS_CRASHED
    assert "ended while this run was still going" in manifest["errors"][-1]


def test_living_writers_other_hosts_and_reused_pids(tmp_path):
    alive = mf.process_record(os.getpid())
    assert mf.writer_alive(alive) is True
    elsewhere = {**alive, "host": "another-host"}
    other_boot = {**alive, "boot_id": "another-boot"}
    assert mf.writer_alive(elsewhere) is None
    assert mf.writer_alive(other_boot) is None
    reused = {**alive, "start": alive["start"] - 1}  # same pid, a later process
    assert mf.writer_alive(reused) is False
    for writers in ([alive], [elsewhere], [alive, reused], []):
        path = tmp_path / str(len(list(tmp_path.iterdir())))
        path.mkdir()
        assert mf.read_manifest(_pending_run(path, writers))["files_status"] == "pending"


def test_a_shutdown_that_stops_waiting_for_the_writer_says_so(tmp_path):
    path = _pending_run(tmp_path, [mf.process_record(os.getpid())])

    async def scenario() -> None:
        never = asyncio.Event()
        task = asyncio.ensure_future(_until_written(path, never))
        await asyncio.sleep(0)
        task.cancel()  # what BackgroundTasks.drain does at the bound
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    manifest = mf.read_manifest(path)
    assert manifest["files_status"] == mf.FILES_FAILED
    assert "shut down while this run's files were being written" in manifest["errors"][-1]


def test_killing_the_kernel_while_it_writes_the_files(tmp_path):
    kernel = KernelHandle(tmp_path)
    try:
        # ~2M events: writing them takes seconds (measured 4.9 s here), the kill below
        # follows the reply within milliseconds
        cell = kernel.run(
            "def f():\n    pass\nfor _ in range(1_000_000):\n    f()", PROFILE_IN, timeout=240
        )
        assert cell.status == "ok", cell.reply
        path = Path(cell.bundle()["path"])
        process = kernel.km.provisioner.process
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
    finally:
        kernel.shutdown()
    raw = _raw(path)
    assert raw["files_status"] == mf.FILES_PENDING, "killed after the files were done"
    assert [w["pid"] for w in raw["writers"]] == [process.pid]
    manifest = mf.read_manifest(path)
    assert manifest["files_status"] == mf.FILES_FAILED
    assert (
        "ended while this run's files were being written (shut down or killed)"
        in (manifest["errors"][-1])
    )
