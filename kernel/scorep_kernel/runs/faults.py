"""How a run fails: ``RunFailed``, and words for how a worker process ended, for the
error reply and the manifest."""

from __future__ import annotations

import signal

UNCHANGED = "The notebook's variables are unchanged."


class RunFailed(Exception):
    """The run cannot go on; ``message`` is for the user (cause and what to do), ``ename``
    the error name the cell shows. The kernel's namespace is as it was."""

    ename = "ProfilingFailed"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


_HINTS: dict[int, str] = {
    signal.SIGKILL: "possibly out of memory (the kernel's out-of-memory killer sends SIGKILL)",
    signal.SIGSEGV: "a segmentation fault: native code read or wrote memory it does not own",
    signal.SIGBUS: "a bus error in native code",
    signal.SIGABRT: "the process aborted itself (a failed assertion in native code?)",
    signal.SIGFPE: "an arithmetic fault in native code",
    signal.SIGILL: "an illegal instruction in native code",
    signal.SIGTERM: "it was asked to terminate",
}


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def describe_exit(returncode: int | None, *, while_doing: str = "") -> str:
    """A sentence for the user: what ended the profiling process, and that the namespace
    was left alone. ``returncode`` as subprocess reports it (negative: killed by a signal)."""
    doing = f" {while_doing}" if while_doing else ""
    if returncode is None:
        what = f"The profiling process stopped answering{doing}"
    elif returncode < 0:
        signum = -returncode
        name = signal_name(signum)
        hint = _HINTS.get(signum)
        what = f"The profiling process was killed by signal {signum} ({name}){doing}"
        if hint:
            what += f" \u2014 {hint}"
    else:
        what = f"The profiling process exited with status {returncode}{doing}"
        if returncode:
            what += " (the cell or a library called os._exit or sys.exit at C level)"
    return f"{what}. {UNCHANGED}"
