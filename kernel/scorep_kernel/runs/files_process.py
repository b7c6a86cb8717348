"""An in-process run's files, written by a process of their own.

Written in a thread of the kernel (at idle priority), the OTF2 and CUBE4 writers still
take the kernel's interpreter lock in turn with the next cell, which Run All sends at once:
that cell ran up to 20 % slower while the files were written beside it (issue 22). A fork
of the kernel, made once the reply is out, has the Recording already (copy-on-write, no
transfer) and writes the files at idle priority while the kernel runs the next cell on its
own interpreter lock; a thread waits for its exit (``waitpid`` holds no lock) and then
says so. The child touches nothing of the kernel's sockets and threads (only the forking
thread exists in it) and leaves by ``os._exit``. Where fork is not available, or fails,
the caller writes in a thread as before.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from scorep_kernel import manifest as mf
from scorep_kernel.formats.recording import Recording

log = logging.getLogger("scorep_kernel")

# How the child ends when writing raised (write_all itself never raises).
_FAILED = 3


def write_in_child(
    exp_dir: Path, recording: Recording, on_done: Callable[[], None] | None = None
) -> int | None:
    """Fork a process that writes the run's files; returns its pid, or None where no
    fork could be made (the caller writes them itself). ``on_done`` is called from a
    thread of this process once the child has ended."""
    if not hasattr(os, "fork"):
        return None
    from scorep_kernel.measure.files import write_all  # imported before the fork

    try:
        pid = os.fork()
    except OSError as e:
        log.info("could not fork a writer for %s (%s): written in a thread", exp_dir, e)
        return None
    if pid == 0:  # the child: write, and leave without running the kernel's exit code
        code = _FAILED
        try:
            try:
                os.nice(19)
                os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            except (AttributeError, OSError):
                pass
            write_all(exp_dir, recording)
            code = 0
        except BaseException:
            pass
        finally:
            os._exit(code)
    threading.Thread(
        target=_reap, args=(pid, exp_dir, on_done), name="scorep-files-process", daemon=True
    ).start()
    return pid


def _reap(pid: int, exp_dir: Path, on_done: Callable[[], None] | None) -> None:
    try:
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
    except ChildProcessError:  # reaped by someone else: the manifest says how it went
        code = 0
    if code != 0:
        mf.settle(
            exp_dir,
            f"The process writing this run's files ended with status {code}: they are "
            "missing or incomplete. Run the cell again.",
        )
    if on_done is not None:
        on_done()
