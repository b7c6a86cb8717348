"""After a subprocess run: the worker writes the experiment's files (or Score-P does, as
the process exits); the kernel waits in the background and notes in the manifest how it
ended, so ``files_status`` always leaves "pending"."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from scorep_kernel import experiment
from scorep_kernel.runs import scorep_backend, scorep_threads
from scorep_kernel.runs.faults import describe_exit
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.protocol import ChannelClosed

if TYPE_CHECKING:
    from scorep_kernel.runs.subprocess_run import SubprocessRun
    from scorep_kernel.worker.client import WorkerProcess

log = logging.getLogger("scorep_kernel")


async def await_files(run: SubprocessRun, worker: WorkerProcess) -> None:
    """Note in the manifest how writing the files ended (the worker writes them). Whatever
    happens here, the manifest leaves "pending": the panel would poll it for ever."""
    try:
        await _note_files(run, worker)
    except BaseException as e:  # cancelled at shutdown, or a bug of ours
        _files_unknown(run, f"{type(e).__name__}: {e}")
        raise
    finally:
        await worker.close(graceful=False)


def _files_unknown(run: SubprocessRun, why: str) -> None:
    assert run.exp_dir is not None
    try:
        manifest = experiment.read_manifest(run.exp_dir)
        if manifest.get("files_status") == experiment.FILES_PENDING:
            experiment.update_manifest(
                run.exp_dir,
                files_status=experiment.FILES_FAILED,
                errors=[f"the kernel stopped waiting for the experiment files ({why})"],
            )
    except experiment.ExperimentError:
        log.warning("could not mark %s's files failed", run.exp_dir, exc_info=True)


async def _note_files(run: SubprocessRun, worker: WorkerProcess) -> None:
    assert run.exp_dir is not None
    status, errors = experiment.FILES_FAILED, []
    try:
        done = await worker.recv_until(msg.FilesDone, None)
        status, errors = done.status, list(done.errors)
    except (ChannelClosed, asyncio.TimeoutError):
        code = await worker.wait_exit(30.0)
        errors = [describe_exit(code, while_doing="while writing the experiment files")]
    code = await worker.wait_exit(600.0)
    if run.backend == "scorep":  # Score-P writes its files when the process exits
        names = await asyncio.to_thread(
            scorep_threads.name_threads, run.exp_dir, run.python_threads
        )
        if names:
            experiment.update_manifest(run.exp_dir, thread_names=names)
        _note_scorep_files(run, code, errors)
    elif status != "exit":  # "exit": nothing was measured, finish_manifest said so
        manifest = experiment.read_manifest(run.exp_dir)
        if (
            status == experiment.FILES_FAILED
            or manifest.get("files_status") == experiment.FILES_PENDING
        ):
            experiment.update_manifest(run.exp_dir, files_status=status, errors=errors)


def _note_scorep_files(run: SubprocessRun, code: int | None, errors: list[str]) -> None:
    assert run.exp_dir is not None and run.worker is not None
    files = scorep_backend.written_files(run.exp_dir)
    status = (
        experiment.FILES_READY if "otf2" in files or "cubex" in files else experiment.FILES_FAILED
    )
    if status == experiment.FILES_FAILED:
        errors.append(f"Score-P wrote neither a trace nor a profile (exit status {code})")
    elif "otf2" not in files:
        errors.append(
            "Score-P wrote a profile but no trace: tracing was turned off "
            "(SCOREP_ENABLE_TRACING=false); the timeline needs it."
        )
    measurement = {
        "tool": run.tool(),
        "scorep_config": scorep_backend.read_config(run.exp_dir),
        "scorep_messages": scorep_backend.scorep_messages(run.worker.scorep_lines),
        "notes": run._explained(),
    }
    if run.cuda is not None:  # Score-P's CUDA adapter: on, or why not (accel.scorep_cuda)
        measurement["cuda"] = run.cuda
    experiment.update_manifest(
        run.exp_dir, files=files, files_status=status, errors=errors, measurement=measurement
    )
