"""How a worker ends with its kernel: never outliving it (a parent-watch thread, and
PR_SET_PDEATHSIG to wake a paused spare when the kernel dies), yet finishing the files of a
run that is over, kernel or not. Used by every worker (entry) and by the spare template
(template), whose forked workers outlive it only while a run holds them."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time

from scorep_kernel.experiment import MANIFEST

writing_files = threading.Event()  # the run is over: its files are being written
in_run = threading.Event()  # a run took this worker (a spare until then)


def watch_parent(parent: int, kernel: int | None = None) -> None:
    # A worker must not outlive its kernel, even when the kernel was killed mid-cell; but
    # once the run is over it finishes writing the experiment, kernel or not. A worker
    # forked from the spare template (``parent``) that a run took outlives the template
    # (closed mid-run by a setting), not the kernel; a spare ends with its template.
    while True:
        time.sleep(1.0)
        if os.getppid() == parent or writing_files.is_set():
            continue
        if kernel is not None and in_run.is_set() and _alive(kernel):
            continue
        remove_unused_experiment()
        os._exit(70)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process has the number now
        return False
    return True


def continue_when_the_kernel_dies() -> None:
    """The kernel pauses a spare (SIGSTOP) while it runs a cell; should the kernel die
    then, Linux sends this process SIGCONT (PR_SET_PDEATHSIG), and watch_parent ends it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGCONT), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # no prctl: the watch thread still ends an orphan
        pass


def remove_unused_experiment() -> None:
    """Score-P made this process's experiment directory at its start (only where its
    measurement starts with the process, see worker.scorep_first_pass); when no run took it
    (no manifest in it), leave nothing behind. (Score-P does not finalize after os._exit,
    so nothing writes there afterwards; the kernel does the same for a spare it closes.)"""
    path = os.environ.get("SCOREP_EXPERIMENT_DIRECTORY")
    if path and os.path.isdir(path) and not os.path.exists(os.path.join(path, MANIFEST)):
        shutil.rmtree(path, ignore_errors=True)
