"""An in-process run's Recording and files, made by a process of their own.

Written in a thread of the kernel (at idle priority), the OTF2 and CUBE4 writers still
take the kernel's interpreter lock in turn with the next cell, which Run All sends at once:
that cell ran up to 20 % slower while the files were written beside it (issue 22). A fork
of the kernel, made once the reply is out, has the Recording already (copy-on-write, no
transfer) and writes the files at idle priority while the kernel runs the next cell on its
own interpreter lock; a thread waits for its exit (``waitpid`` holds no lock) and then
says so. The child touches nothing of the kernel's sockets and threads (only the forking
thread exists in it) and leaves by ``os._exit``. Where fork is not available, or fails,
the caller writes in a thread as before.

The child also builds the Recording from what ``Measurement.halt`` took (issue 22: the reply
does not wait for the build; the paper's training cell built for 95-255 ms in the kernel) and
sends the display's numbers (``DisplaySummary``: events, top regions) back on its pipe as
one JSON text as soon as it has them, before writing the files; ``on_summary`` gets them.

A fork can hang in the child before any of its Python runs: CPython 3.8-3.11 before the
fix of gh-112275 take the runtime's thread-state lock in ``PyOS_AfterFork_Child`` before
resetting it, so a fork made while another thread of the kernel held it deadlocks the
child for ever (seen here in a full test run, Python 3.11.7: the run's files stayed
"pending" and ``jupyter scorep run`` waited for them until killed). So the child says it
is alive (a byte on a pipe) before anything else; a child that has not said so within
``STARTED_WITHIN_S`` is killed, and the files are written by ``instead`` (a thread of the
kernel) after all.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import threading
from collections.abc import Callable
from pathlib import Path

from scorep_kernel import manifest as mf
from scorep_kernel.formats.recording import Recording
from scorep_kernel.measure.files import OnDone, OnSummary, build_and_write
from scorep_kernel.measure.top_regions import DisplaySummary

log = logging.getLogger("scorep_kernel")

# How the child ends when writing raised (write_all itself never raises).
_FAILED = 3
# A healthy child says it is alive right after the fork returns in it (microseconds; under
# load, when it is scheduled): only a child stuck in the fork itself stays silent this long.
STARTED_WITHIN_S = 10.0


def write_in_child(
    exp_dir: Path,
    build: Callable[[], Recording],
    on_summary: OnSummary | None = None,
    on_done: OnDone | None = None,
    instead: Callable[[OnSummary | None, OnDone | None], object] | None = None,
) -> int | None:
    """Fork a process that builds the run's Recording (``build``) and writes its files;
    returns its pid, or None where no fork could be made (the caller does it itself).
    ``on_summary`` and then ``on_done`` are called from a thread of this process, once the
    child has the summary and once it has ended. ``instead(on_summary, on_done)`` does the
    work where the child hung in the fork (module doc)."""
    if not hasattr(os, "fork"):
        return None
    alive_r, alive_w = os.pipe()
    try:
        pid = os.fork()
    except OSError as e:
        os.close(alive_r)
        os.close(alive_w)
        log.info("could not fork a writer for %s (%s): written in a thread", exp_dir, e)
        return None
    if pid == 0:  # the child: build, write, and leave without running the kernel's exit code
        code = _FAILED
        try:
            os.close(alive_r)
            os.write(alive_w, b"1")
            try:
                os.nice(19)
                os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            except (AttributeError, OSError):
                pass

            def say(summary: DisplaySummary) -> None:
                os.write(alive_w, json.dumps(summary.to_json()).encode())
                os.close(alive_w)

            build_and_write(exp_dir, build, say)
            code = 0
        except BaseException:
            pass
        finally:
            os._exit(code)
    os.close(alive_w)
    threading.Thread(
        target=_reap,
        args=(pid, alive_r, exp_dir, on_summary, on_done, instead),
        name="scorep-files-process",
        daemon=True,
    ).start()
    return pid


def _started(pid: int, alive_r: int) -> bool:
    """Whether the child said it is alive within STARTED_WITHIN_S; else it is killed."""
    readable, _, _ = select.select([alive_r], [], [], STARTED_WITHIN_S)
    if readable and os.read(alive_r, 1) == b"1":
        return True
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return False


def _summary(alive_r: int) -> DisplaySummary | None:
    """The child's display summary: its pipe's text up to the end (None if it ended
    without one: it failed before, and the manifest says how)."""
    chunks = []
    while chunk := os.read(alive_r, 65536):
        chunks.append(chunk)
    if not chunks:
        return None
    try:
        return DisplaySummary.from_json(json.loads(b"".join(chunks)))
    except ValueError as e:
        log.warning("the files process's summary could not be read: %s", e)
        return None


def _reap(
    pid: int,
    alive_r: int,
    exp_dir: Path,
    on_summary: OnSummary | None,
    on_done: OnDone | None,
    instead: Callable[[OnSummary | None, OnDone | None], object] | None,
) -> None:
    try:
        started = _started(pid, alive_r)
        summary = _summary(alive_r) if started else None
    finally:
        os.close(alive_r)
    if summary is not None and on_summary is not None:
        on_summary(summary)
    try:
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
    except ChildProcessError:  # reaped by someone else: the manifest says how it went
        code = 0
    if not started:
        log.warning(
            "the process forked to write %s's files hung in the fork (CPython gh-112275): "
            "killed; the files are written in a thread instead",
            exp_dir,
        )
        if instead is not None:
            instead(on_summary, on_done)
            return
        code = -signal.SIGKILL
    if code != 0:
        mf.settle(
            exp_dir,
            f"The process writing this run's files ended with status {code}: they are "
            "missing or incomplete. Run the cell again.",
        )
    if on_done is not None:
        on_done()
