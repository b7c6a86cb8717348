"""After a subprocess run: the worker writes the experiment's files (or Score-P does, as
the process exits); the kernel waits in the background and notes in the manifest how it
ended, so ``files_status`` always leaves "pending"."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scorep_kernel import experiment
from scorep_kernel import manifest as mf
from scorep_kernel.runs import scorep_backend, scorep_threads
from scorep_kernel.runs.faults import describe_exit
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.protocol import ChannelClosed

if TYPE_CHECKING:
    from scorep_kernel.worker.client import WorkerProcess

log = logging.getLogger("scorep_kernel")


@dataclass(frozen=True)
class ScorePRun:
    """What the manifest records of a Score-P run once its process has exited: the Python
    threads (to name Score-P's locations), the tool, the CUDA adapter's choice
    (accel.scorep_cuda), and ``explained``, the run's notes from the process's last words
    (called after it exited)."""

    python_threads: dict[str, str]
    tool: str | None
    cuda: dict[str, Any] | None
    explained: Callable[[], list[str]]


async def await_files(exp_dir: Path, worker: WorkerProcess, scorep: ScorePRun | None) -> None:
    """Note in the manifest how writing the files ended (the worker writes them, or
    Score-P does as the process exits: ``scorep``). Whatever happens here, the manifest
    leaves "pending": the panel would poll it for ever."""
    try:
        await _note_files(exp_dir, worker, scorep)
    except BaseException as e:  # cancelled at shutdown, or a bug of ours
        _files_unknown(exp_dir, f"{type(e).__name__}: {e}")
        raise
    finally:
        await worker.close(graceful=False)


def _files_unknown(exp_dir: Path, why: str) -> None:
    try:
        manifest = mf.read_manifest(exp_dir)
        if manifest.get("files_status") == mf.FILES_PENDING:
            mf.update_manifest(
                exp_dir,
                files_status=mf.FILES_FAILED,
                errors=[f"the kernel stopped waiting for the experiment files ({why})"],
            )
    except experiment.ExperimentError:
        log.warning("could not mark %s's files failed", exp_dir, exc_info=True)


async def _note_files(exp_dir: Path, worker: WorkerProcess, scorep: ScorePRun | None) -> None:
    status, errors = mf.FILES_FAILED, []
    try:
        done = await worker.recv_until(msg.FilesDone, None)
        status, errors = done.status, list(done.errors)
    except (ChannelClosed, asyncio.TimeoutError):
        code = await worker.wait_exit(30.0)
        errors = [describe_exit(code, while_doing="while writing the experiment files")]
    code = await worker.wait_exit(600.0)
    if scorep is not None:  # Score-P writes its files when the process exits
        names = await asyncio.to_thread(scorep_threads.name_threads, exp_dir, scorep.python_threads)
        if names:
            mf.update_manifest(exp_dir, thread_names=names)
        _note_scorep_files(exp_dir, worker, scorep, code, errors)
    elif status != "exit":  # "exit": nothing was measured, finish_manifest said so
        manifest = mf.read_manifest(exp_dir)
        if status == mf.FILES_FAILED or manifest.get("files_status") == mf.FILES_PENDING:
            mf.update_manifest(exp_dir, files_status=status, errors=errors)


def _note_scorep_files(
    exp_dir: Path, worker: WorkerProcess, scorep: ScorePRun, code: int | None, errors: list[str]
) -> None:
    files = scorep_backend.written_files(exp_dir)
    status = mf.FILES_READY if "otf2" in files or "cubex" in files else mf.FILES_FAILED
    if status == mf.FILES_FAILED:
        errors.append(f"Score-P wrote neither a trace nor a profile (exit status {code})")
    elif "otf2" not in files:
        errors.append(
            "Score-P wrote a profile but no trace: tracing was turned off "
            "(SCOREP_ENABLE_TRACING=false); the timeline needs it."
        )
    measurement = {
        "tool": scorep.tool,
        "scorep_config": scorep_backend.read_config(exp_dir),
        "scorep_messages": scorep_backend.scorep_messages(worker.scorep_lines),
        "notes": scorep.explained(),
    }
    if scorep.cuda is not None:  # Score-P's CUDA adapter: on, or why not (accel.scorep_cuda)
        measurement["cuda"] = scorep.cuda
    mf.update_manifest(
        exp_dir, files=files, files_status=status, errors=errors, measurement=measurement
    )
