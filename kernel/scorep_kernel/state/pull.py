"""The ``pull`` transport: the receiver copies each buffer out of the sender's memory.

``process_vm_readv`` (Linux): one copy, straight into the receiver's fresh memory (which numpy
backs with transparent huge pages), nothing in /dev/shm. The sender only keeps the objects
alive until its Packet is released.

Memory that comes back where it came from: each buffer a process lends carries a token; the
receiver remembers which of its buffers it got under which token, and when such a buffer goes
back unchanged in place and size, the original owner copies the bytes straight into the
original array's memory. That skips faulting in a fresh gigabyte, and it is what running the
cell in the kernel would have done: an in-place change (``arr += 1``) reaches every reference
to the array, also those that did not travel. The kernel's memory is only written once the
cell has finished (never if the worker dies before); a worker killed during that final copy
would leave the array half updated.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import pickle
import sys
import weakref
from collections.abc import Set as AbstractSet

import numpy as np

from .errors import ENV_TRANSPORT, StateTransferError

__all__ = ["PullLender", "allow_reader", "pull_permitted", "receive"]


class _IoVec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


_readv = None
_works: bool | None = None
_readers_allowed = False
_PR_SET_PTRACER = 0x59616D61


def _process_vm_readv():
    global _readv
    if _readv is None:
        fn = ctypes.CDLL(None, use_errno=True).process_vm_readv
        fn.argtypes = [
            ctypes.c_int,
            ctypes.POINTER(_IoVec),
            ctypes.c_ulong,
            ctypes.POINTER(_IoVec),
            ctypes.c_ulong,
            ctypes.c_ulong,
        ]
        fn.restype = ctypes.c_ssize_t
        _readv = fn
    return _readv


def read_remote(pid: int, address: int, destination: np.ndarray) -> None:
    """Copy destination.nbytes bytes at `address` in process `pid` into `destination`."""
    readv = _process_vm_readv()
    total, done, base = destination.nbytes, 0, destination.ctypes.data
    while done < total:
        length = min(1 << 30, total - done)
        local, remote = _IoVec(base + done, length), _IoVec(address + done, length)
        n = readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if n <= 0:
            reason = os.strerror(ctypes.get_errno()) if n < 0 else "no progress"
            raise StateTransferError(
                f"could not read {total} bytes from process {pid} (process_vm_readv: {reason}). The "
                "sending process must stay alive with its Packet unreleased until unpack() returns; "
                "where ptrace is restricted (Yama ptrace_scope, seccomp), call allow_reader(<receiver "
                f"pid>) in the sender or set {ENV_TRANSPORT}=shm."
            )
        done += n


def _yama_scope() -> int:
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 0  # no Yama: classic ptrace rules (the same user may read)


def _works_here() -> bool:
    """process_vm_readv on ourselves works (Linux, not blocked by seccomp)."""
    global _works
    if _works is None:
        _works = False
        if sys.platform.startswith("linux"):
            try:
                probe, out = np.arange(16, dtype=np.uint8), np.zeros(16, dtype=np.uint8)
                read_remote(os.getpid(), probe.ctypes.data, out)
                _works = bool((out == probe).all())
            except (OSError, AttributeError, StateTransferError):
                pass
    return _works


def pull_permitted() -> bool:
    """Whether a receiver may be expected to read this process's memory."""
    scope = _yama_scope()
    return _works_here() and (scope == 0 or (scope == 1 and _readers_allowed))


def allow_reader(pid: int) -> bool:
    """Let process `pid` read this one's memory under Yama ptrace_scope=1 (prctl PR_SET_PTRACER).

    The kernel calls it with the worker's pid, the worker with the kernel's; afterwards ``auto``
    picks ``pull`` in this process. Returns False where it cannot be done (``shm`` is used).
    """
    global _readers_allowed
    if not sys.platform.startswith("linux"):
        return False
    if _yama_scope() == 0:
        return True
    ok = ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PTRACER, ctypes.c_ulong(pid), 0, 0, 0) == 0
    _readers_allowed = _readers_allowed or ok
    return ok


# --- buffers lent and received ---------------------------------------------------------------

_serials = itertools.count()
#: token -> (weakref to the exporting object, address, nbytes): the buffers of the packet this
#: process lent last. Only those may take data back in place: the other side has applied that
#: packet, and an array it still holds from an older one (IPython's Out history, say) may differ
#: from what the same memory got later.
_lent: dict[tuple, tuple] = {}
#: address -> (token, nbytes, weakref to the local copy): buffers this process received.
_received: dict[int, tuple] = {}


class PullLender:
    """The sender's side for one Packet: descriptors, and the objects kept alive until release."""

    def __init__(self, returnable: AbstractSet[int] = frozenset()):
        #: ids of the objects whose memory may take data back in place: the arrays that are names
        #: of the namespace themselves. Arrays inside other objects (pandas blocks, lists) come back
        #: as copies, as with plain pickle: a library may track who shares that memory (pandas'
        #: copy-on-write does) and must not see it change behind its back.
        self._returnable = returnable
        self.serial = next(_serials)
        self._count = 0
        self._keepalive: list = []
        self._ranges: list[tuple[int, int, tuple]] = []
        _lent.clear()

    def lend(self, raw: memoryview) -> tuple:
        nbytes = raw.nbytes
        self._keepalive.append(raw)
        address = np.frombuffer(raw, dtype=np.uint8).ctypes.data if nbytes else 0
        token = (os.getpid(), self.serial, self._count)
        self._count += 1
        if id(raw.obj) in self._returnable and not raw.readonly:

            def forget(_r: object, t: tuple = token) -> None:
                _lent.pop(t, None)

            try:
                ref = weakref.ref(raw.obj, forget)
            except TypeError:
                pass  # not trackable: always comes back into fresh memory
            else:
                _lent[token] = (ref, address, nbytes)
                self._ranges.append((address, address + nbytes, token))
        return ("pull", os.getpid(), address, nbytes, token, _origin_of(address, nbytes))

    def seal(self) -> None:
        """After the last lend: buffers that overlap (a view packed beside its base) must not take
        data back in place, or the later one would overwrite changes made to the other."""
        end, last_token = -1, None
        for start, stop, token in sorted(self._ranges):
            if start < end:
                # end is above -1 only once a range has set last_token (addresses are >= 0)
                assert last_token is not None
                _lent.pop(token, None)
                _lent.pop(last_token, None)
            if stop > end:
                end, last_token = stop, token
        self._ranges.clear()

    def release(self) -> None:
        self._keepalive.clear()


def _origin_of(address: int, nbytes: int):
    entry = _received.get(address)
    if entry is None:
        return None
    token, size, ref = entry
    return token if size == nbytes and ref() is not None else None


def _reusable_memory(token: tuple, nbytes: int):
    """The original memory of a buffer this process lent, if it can take the data back."""
    entry = _lent.get(token)  # twice for two arrays over the same memory: same bytes, kept shared
    if entry is None:
        return None
    ref, address, size = entry
    exporter = ref()
    if exporter is None or size != nbytes:
        return None
    try:
        raw = pickle.PickleBuffer(exporter).raw()
    except (TypeError, BufferError, ValueError):
        return None
    if raw.readonly or raw.nbytes != nbytes:
        return None
    target = np.frombuffer(raw, dtype=np.uint8)
    return (raw, target) if target.ctypes.data == address else None


def receive(descriptor: tuple):
    """The receiving side of a ``pull`` descriptor: a writable buffer with the sender's bytes."""
    _, pid, address, nbytes, token, origin = descriptor
    if origin is not None and origin[0] == os.getpid():
        reusable = _reusable_memory(origin, nbytes)
        if reusable is not None:  # it came from here: the data goes back into its memory
            raw, target = reusable
            read_remote(pid, address, target)
            # a PickleBuffer marks it for arrays.rebuild_array, which hands back the original object
            return pickle.PickleBuffer(raw.obj)
    destination = np.empty(nbytes, dtype=np.uint8)
    if nbytes:
        read_remote(pid, address, destination)
        address_here = destination.ctypes.data

        def forget(_r: object, a: int = address_here) -> None:
            _received.pop(a, None)

        _received[address_here] = (token, nbytes, weakref.ref(destination, forget))
    return destination
