"""The namespace's way across the process boundary, as the kernel and the worker use it.

A thin layer over ``scorep_kernel.state`` (which does the work: one pickler, out-of-band
buffers, placeholders for what cannot travel). The handshake both sides follow:

    sender: p = pack(namespace); send p.header; on the receiver's "state_received": p.release()
    receiver: u = unpack(header); reply "state_received"; apply(namespace, u, ...)

Score-P's own environment variables (``SCOREP_*``) describe one process's measurement and
never cross: the worker keeps its experiment directory, the kernel keeps its own.
"""

from __future__ import annotations

from typing import Any

from scorep_kernel import state as _state
from scorep_kernel.shim import SHIM_DIR  # the package; this module is its kernel-facing face
from scorep_kernel.state import Packet, Unpacked, is_bookkeeping

ENVIRON_IGNORE = ("SCOREP_",)
# Each process's own sys.path entries: the scorep shim is first where the builtin tracer
# measures, and absent under Score-P.
KEEP_PATHS = (SHIM_DIR,)
# The worker's last expression value rides in the namespace under this name.
RESULT_NAME = "_scorep_kernel_cell_result"


def user_names(namespace: dict[str, Any]) -> list[str]:
    """The names that travel (the user's, not IPython's bookkeeping)."""
    return [n for n, v in namespace.items() if isinstance(n, str) and not is_bookkeeping(n, v)]


def pack(namespace: dict[str, Any], transport: str | None = None) -> Packet:
    """``transport``: "pull" | "shm" | None (chosen, see state.transport)."""
    return _state.pack(namespace, transport=transport)


def unpack(header: bytes) -> Unpacked:
    return _state.unpack(header)


def apply_in_kernel(
    namespace: dict[str, Any], unpacked: Unpacked, sent: Packet, origin: str = "a profiled cell"
) -> tuple[Any, dict[str, str]]:
    """The worker's namespace after a cell, into the kernel's: names the worker deleted go,
    names the worker held placeholders for keep the kernel's objects, and names the cell
    (``origin``, e.g. "cell [5]") bound to something that cannot come back become
    placeholders saying so (never a stale value, never a missing name). Returns the value
    of the cell's last expression (None when it had none or it could not come), taken out
    of the namespace again, and the lost names with the reason of each."""
    changes = _state.apply(
        namespace,
        unpacked,
        previous_names=sent.names,
        environ_ignore=ENVIRON_IGNORE,
        keep_paths=KEEP_PATHS,
        lost_origin=origin,
    )
    result = namespace.pop(RESULT_NAME, None)
    if RESULT_NAME in changes.lost:
        result = None  # Out[n] shows nothing, as for a value that never came
    return result, {n: r for n, r in changes.lost.items() if n != RESULT_NAME}


def lost_words(lost: dict[str, str]) -> str | None:
    """One sentence for the cell's output about what it could not bring back."""
    if not lost:
        return None
    names = ", ".join(f"{n} ({r})" for n, r in sorted(lost.items()))
    return (
        f"Not brought back from the profiling process: {names}; each is now a placeholder "
        "that says so when used. To keep such objects, run this cell unprofiled or profiled "
        'in-process (cell metadata "isolation": "inprocess", builtin backend).'
    )


def apply_in_worker(
    namespace: dict[str, Any], unpacked: Unpacked, previous: tuple[str, ...]
) -> Any:
    """The kernel's namespace into the worker's; what could not come gets a placeholder that
    explains itself when used."""
    return _state.apply(
        namespace,
        unpacked,
        previous_names=previous,
        bind_placeholders=True,
        placeholder_where="kernel",
        environ_ignore=ENVIRON_IGNORE,
        keep_paths=KEEP_PATHS,
    )


def allow_reader(pid: int) -> bool:
    """Let the worker read the kernel's buffers directly (Yama ptrace scope 1)."""
    return _state.allow_reader(pid)
