"""Moving out-of-band buffers (large arrays, bytes) between two processes.

Two transports; `choose_transport()` picks one, and the environment variable
``SCOREP_KERNEL_STATE_TRANSPORT`` (``pull`` | ``shm``) overrides the choice:

``pull`` (pull.py; Linux, the default where ptrace rules allow it)
    The receiver copies each buffer straight out of the sender's memory (process_vm_readv):
    one copy per direction at memcpy speed; an array that goes back to where it came from is
    copied into its original memory.
``shm`` (shm.py; the fallback)
    The sender copies each buffer into a memfd segment; the receiver maps it copy-on-write.

Either way the sender must keep the Packet until the receiver's `unpack()` has returned.
"""

from __future__ import annotations

import os
from collections.abc import Set as AbstractSet

from .errors import ENV_TRANSPORT, StateTransferError
from .pull import PullLender, allow_reader, pull_permitted
from .pull import receive as pull_receive
from .shm import SegmentReader, SegmentWriter

__all__ = ["Exporter", "StateTransferError", "allow_reader", "choose_transport", "import_buffers"]


def choose_transport(requested: str | None = None) -> str:
    choice = requested or os.environ.get(ENV_TRANSPORT) or "auto"
    if choice not in ("auto", "pull", "shm"):
        raise ValueError(
            f"unknown state transport {choice!r}: use 'pull', 'shm' or 'auto' ({ENV_TRANSPORT})"
        )
    if choice == "auto":
        return "pull" if pull_permitted() else "shm"
    return choice


class Exporter:
    """The sender's side of one Packet's buffers, held until release()."""

    def __init__(self, transport: str, returnable: AbstractSet[int] = frozenset()):
        """returnable: ids of the objects that may take their data back in place (pull)."""
        self.transport = transport
        self._side: PullLender | SegmentWriter = (
            PullLender(returnable) if transport == "pull" else SegmentWriter()
        )

    def export(self, raw: memoryview) -> tuple:
        """A descriptor for one contiguous buffer (raw: PickleBuffer.raw())."""
        side = self._side  # a PullLender exactly when self.transport == "pull"
        return side.lend(raw) if isinstance(side, PullLender) else side.write(raw)

    def seal(self) -> None:
        if isinstance(self._side, PullLender):
            self._side.seal()

    def release(self) -> None:
        self._side.release()


def import_buffers(descriptors: list[tuple]) -> list:
    """The receiving side: a writable buffer per descriptor, holding the sender's bytes."""
    reader = SegmentReader()
    try:
        buffers = []
        for descriptor in descriptors:
            if descriptor[0] == "pull":
                buffers.append(pull_receive(descriptor))
            elif descriptor[0] == "shm":
                buffers.append(reader.receive(descriptor))
            else:
                raise StateTransferError(
                    f"unknown buffer descriptor {descriptor[0]!r}: the kernel and the "
                    "worker run different versions of scorep_kernel"
                )
        return buffers
    finally:
        reader.close()
