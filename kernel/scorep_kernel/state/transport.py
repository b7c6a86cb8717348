"""Moving out-of-band buffers (large arrays, bytes) between two processes.

Two transports; `choose_transport()` picks one, the environment variable
``SCOREP_KERNEL_STATE_TRANSPORT`` (``pull`` | ``shm``) overrides the choice.

``pull`` (Linux, default where the kernel allows it)
    The sender copies nothing: the header carries (pid, address, length) of each buffer and the
    sender keeps the objects alive until `Packet.release()`. The receiver copies each buffer
    straight out of the sender's memory into its own fresh (transparent-huge-page) memory with
    ``process_vm_readv``: one copy per direction, at memcpy speed, and nothing in /dev/shm.
    Needs ptrace-read permission on the sender: always for the same user without Yama, and with
    Yama ``ptrace_scope=1`` for a parent reading its child (the kernel reading its worker);
    the other direction then needs `allow_reader(pid)` (prctl PR_SET_PTRACER).

``shm``
    Buffers are copied into anonymous ``memfd`` segments (Linux), which the receiver opens
    through ``/proc/<pid>/fd/<fd>`` and maps copy-on-write (MAP_PRIVATE), one mapping per buffer: arrays on the receiving
    side are zero-copy views kept alive by the mapping, and writes stay private to the receiver.
    A memfd has no name in /dev/shm, so nothing is left behind even if a process is killed.
    Where memfd is missing (macOS), a uniquely named file in /dev/shm or the temp directory is
    used and unlinked on release (left behind only if the sender is killed).
    Measured (FORMATS-style, this machine): shmem pages are 4 KiB (shmem THP off), so copying
    into shared memory runs at ~1.3 GiB/s against ~5 GiB/s for a copy into fresh anonymous
    memory; that is why ``pull`` is preferred.

In both, the sender must keep the Packet until the receiver's `unpack()` has returned.

Memory that comes back where it came from (``pull``): each buffer the kernel lends carries a
token; the worker remembers which of its arrays it received under which token, and when such
an array goes back (same memory, same size) the kernel copies the worker's bytes straight into
the original array's memory instead of into fresh memory. That saves the page faults of a
fresh gigabyte, and it is what running the cell in the kernel would have done: an in-place
change (``arr += 1``) reaches every reference to the array, also those that did not travel.
The kernel's memory is only written once the cell has finished (never if the worker dies
before); a worker killed during that final copy would leave the array half updated.
"""

from __future__ import annotations

import ctypes
import itertools
import mmap
import os
import pickle
import sys
import tempfile
import uuid
import weakref

import numpy as np

__all__ = ["StateTransferError", "choose_transport", "Exporter", "import_buffer", "import_buffers", "allow_reader"]

ENV_TRANSPORT = "SCOREP_KERNEL_STATE_TRANSPORT"


class StateTransferError(RuntimeError):
    """A buffer could not be moved between the processes; the message says why and what to do."""


# --- process_vm_readv ------------------------------------------------------------------------

class _IoVec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


_libc = None
_pull_works: bool | None = None


def _process_vm_readv():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        fn = _libc.process_vm_readv
        fn.argtypes = [ctypes.c_int, ctypes.POINTER(_IoVec), ctypes.c_ulong,
                       ctypes.POINTER(_IoVec), ctypes.c_ulong, ctypes.c_ulong]
        fn.restype = ctypes.c_ssize_t
    return _libc.process_vm_readv


def _read_remote(pid: int, address: int, destination: np.ndarray) -> None:
    """Copy len(destination) bytes at `address` in process `pid` into `destination`."""
    read = _process_vm_readv()
    total, done = destination.nbytes, 0
    base = destination.ctypes.data
    chunk = 1 << 30
    while done < total:
        length = min(chunk, total - done)
        local = _IoVec(base + done, length)
        remote = _IoVec(address + done, length)
        n = read(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if n <= 0:
            err = ctypes.get_errno()
            raise StateTransferError(
                f"could not read {total} bytes from process {pid} (process_vm_readv: "
                f"{os.strerror(err) if n < 0 else 'no progress'}). The sending process must stay alive "
                f"with its Packet unreleased until unpack() returns; where ptrace is restricted (Yama "
                f"ptrace_scope, seccomp), call allow_reader(<receiver pid>) in the sender or set "
                f"{ENV_TRANSPORT}=shm."
            )
        done += n


def _pull_available() -> bool:
    """process_vm_readv on ourselves works (not blocked by seccomp, Linux only)."""
    global _pull_works
    if _pull_works is None:
        if not sys.platform.startswith("linux"):
            _pull_works = False
        else:
            try:
                probe = np.arange(16, dtype=np.uint8)
                out = np.zeros(16, dtype=np.uint8)
                _read_remote(os.getpid(), probe.ctypes.data, out)
                _pull_works = bool((out == probe).all())
            except (OSError, AttributeError, StateTransferError):
                _pull_works = False
    return _pull_works


def _yama_scope() -> int:
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 0  # no Yama: classic ptrace rules (same user may read)


_PR_SET_PTRACER = 0x59616D61


_readers_allowed = False


def allow_reader(pid: int) -> bool:
    """Let process `pid` read this one's memory under Yama ptrace_scope=1 (prctl PR_SET_PTRACER).

    Call it in the kernel with the worker's pid before handing over a ``pull`` packet when
    Yama is on; returns False where it cannot be done (then use ``shm``).
    """
    if not sys.platform.startswith("linux"):
        return False
    global _readers_allowed
    if _yama_scope() == 0:
        return True
    libc = ctypes.CDLL(None, use_errno=True)
    ok = libc.prctl(_PR_SET_PTRACER, ctypes.c_ulong(pid), 0, 0, 0) == 0
    _readers_allowed = _readers_allowed or ok
    return ok


def choose_transport(requested: str | None = None) -> str:
    choice = requested or os.environ.get(ENV_TRANSPORT) or "auto"
    if choice not in ("auto", "pull", "shm"):
        raise ValueError(f"unknown state transport {choice!r}: use 'pull', 'shm' or 'auto' ({ENV_TRANSPORT})")
    if choice == "auto":
        scope = _yama_scope()
        return "pull" if _pull_available() and (scope == 0 or (scope == 1 and _readers_allowed)) else "shm"
    return choice


# --- memory that may come back (pull) ---------------------------------------------------------

_serials = itertools.count()
#: token -> (weakref to the exporting object, address, nbytes): buffers this process lent.
_lent: dict[tuple, tuple] = {}
_lent_packets: list[int] = []
_KEEP_LENT_PACKETS = 8
#: address -> (token, nbytes, weakref to the local copy): buffers this process received.
_received: dict[int, tuple] = {}


def _lend(token: tuple, exporter: object, address: int, nbytes: int) -> None:
    try:
        ref = weakref.ref(exporter, lambda _r, t=token: _lent.pop(t, None))
    except TypeError:
        return  # bytes and the like: immutable or not trackable, never reused
    _lent[token] = (ref, address, nbytes)


def _forget_old_packets(serial: int) -> None:
    _lent_packets.append(serial)
    while len(_lent_packets) > _KEEP_LENT_PACKETS:
        old = _lent_packets.pop(0)
        for token in [t for t in _lent if t[1] == old]:
            _lent.pop(token, None)


def _origin_of(address: int, nbytes: int):
    entry = _received.get(address)
    if entry is None:
        return None
    token, size, ref = entry
    return token if size == nbytes and ref() is not None else None


def _remember_received(token: tuple, destination: np.ndarray) -> None:
    address = destination.ctypes.data
    _received[address] = (token, destination.nbytes,
                          weakref.ref(destination, lambda _r, a=address: _received.pop(a, None)))


def _reusable_memory(token: tuple, nbytes: int):
    """The original memory of a buffer this process lent, if it can take the data back."""
    entry = _lent.get(token)
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
    if target.ctypes.data != address:
        return None
    return raw, target


# --- sender side -----------------------------------------------------------------------------

def _close_fds(fds: list[int], paths: list[str]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass
    fds.clear()
    paths.clear()


def _write_all(fd: int, data: memoryview, offset: int) -> None:
    view = data.cast("B") if data.format != "B" or data.ndim != 1 else data
    done, total = 0, view.nbytes
    while done < total:
        done += os.pwrite(fd, view[done:done + (1 << 30)], offset + done)


#: shm: buffers this large get a memfd of their own (freed as soon as their array dies); smaller
#: ones share segments up to _SEGMENT bytes, so a namespace of thousands of arrays does not need
#: thousands of file descriptors. A segment lives until the last array mapped from it dies.
_OWN_SEGMENT = 64 << 20
_SEGMENT = 256 << 20
_PAGE = mmap.PAGESIZE


class Exporter:
    """Holds what the receiver needs until release(): the objects (pull) or the files (shm)."""

    def __init__(self, transport: str):
        self.transport = transport
        self._keepalive: list = []
        self._fds: list[int] = []
        self._paths: list[str] = []
        self._finalizer = weakref.finalize(self, _close_fds, self._fds, self._paths)
        self._serial = next(_serials)
        self._count = 0
        self._lent_ranges: list[tuple[int, int, tuple]] = []
        self._segment: tuple[int, tuple, int] | None = None  # shm: (fd, identity, bytes used)
        if transport == "pull":
            _forget_old_packets(self._serial)

    def export(self, raw: memoryview) -> tuple:
        """A descriptor for one contiguous buffer (raw: PickleBuffer.raw())."""
        nbytes = raw.nbytes
        if self.transport == "pull":
            self._keepalive.append(raw)
            address = np.frombuffer(raw, dtype=np.uint8).ctypes.data if nbytes else 0
            token = (os.getpid(), self._serial, self._count)
            self._count += 1
            if not raw.readonly and not isinstance(raw.obj, np.memmap):  # never write back into a file
                _lend(token, raw.obj, address, nbytes)
                self._lent_ranges.append((address, address + nbytes, token))
            return ("pull", os.getpid(), address, nbytes, token, _origin_of(address, nbytes))
        fd, identity, offset = self._segment_for(nbytes)
        _write_all(fd, raw, offset)
        return ("shm", os.getpid(), fd, identity, offset, nbytes)

    def _segment_for(self, nbytes: int) -> tuple[int, tuple, int]:
        """(fd, what the receiver opens, offset) with room for nbytes at a page-aligned offset."""
        if nbytes < _OWN_SEGMENT and self._segment is not None:
            fd, identity, used = self._segment
            offset = -(-used // _PAGE) * _PAGE
            if offset + nbytes <= _SEGMENT:
                self._segment = (fd, identity, offset + nbytes)
                return fd, identity, offset
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create(f"scorep-state-{os.getpid()}", os.MFD_CLOEXEC)
            self._fds.append(fd)
            identity = ("memfd", fd, os.fstat(fd).st_ino)
        else:
            directory = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
            path = os.path.join(directory, f"scorep-state-{os.getpid()}-{uuid.uuid4().hex}")
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
            self._fds.append(fd)
            self._paths.append(path)
            identity = ("file", path, os.fstat(fd).st_ino)
        if nbytes < _OWN_SEGMENT:
            self._segment = (fd, identity, nbytes)
        return fd, identity, 0

    def seal(self) -> None:
        """After the last export: buffers that overlap (a view packed beside its base) must not
        take data back in place, or the later one would overwrite changes made to the other."""
        ranges = sorted(self._lent_ranges)
        end, last_token = -1, None
        for start, stop, token in ranges:
            if start < end:
                _lent.pop(token, None)
                _lent.pop(last_token, None)
            if stop > end:
                end, last_token = stop, token
        self._lent_ranges.clear()

    def release(self) -> None:
        self._keepalive.clear()
        self._finalizer()


# --- receiver side ---------------------------------------------------------------------------

_mmap_fns = None


def _map_private(fd: int, nbytes: int, offset: int = 0) -> np.ndarray:
    """Map `fd` copy-on-write; the mapping lives as long as the returned array (and its views).

    Through libc rather than the mmap module: mmap.mmap keeps a duplicate of the fd open for
    its lifetime, which would spend one descriptor per received array.
    """
    global _mmap_fns
    if nbytes == 0:
        return np.empty(0, dtype=np.uint8)
    if _mmap_fns is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _mmap_fns = libc.mmap, libc.munmap
    map_fn, unmap_fn = _mmap_fns
    address = map_fn(None, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE, fd, offset)
    if address is None or address == ctypes.c_void_p(-1).value:
        err = ctypes.get_errno()
        raise StateTransferError(f"could not map {nbytes} bytes of shared memory: {os.strerror(err)}")
    memory = (ctypes.c_ubyte * nbytes).from_address(address)
    weakref.finalize(memory, unmap_fn, address, nbytes)
    return np.frombuffer(memory, dtype=np.uint8)


def _open_segment(pid: int, identity: tuple) -> int:
    kind, where, inode = identity
    path = f"/proc/{pid}/fd/{where}" if kind == "memfd" else where
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise StateTransferError(
            f"the shared memory of process {pid} is gone ({exc.strerror}): the sender must keep its "
            "Packet unreleased, and stay alive, until unpack() returns") from None
    if os.fstat(fd).st_ino != inode:
        os.close(fd)
        raise StateTransferError(f"{path} is no longer the shared memory that was packed: the Packet "
                                 "was released before unpack() finished")
    return fd


def import_buffers(descriptors: list[tuple]) -> list:
    """import_buffer for each, opening each shared memory segment once."""
    fds: dict[tuple, int] = {}

    def opened(pid: int, identity: tuple) -> int:
        key = (pid, identity)
        if key not in fds:
            fds[key] = _open_segment(pid, identity)
        return fds[key]

    try:
        return [import_buffer(d, opened) for d in descriptors]
    finally:
        for fd in fds.values():
            os.close(fd)


def import_buffer(descriptor: tuple, opened=None):
    """The receiving side of one descriptor: a writable buffer holding the sender's bytes."""
    kind = descriptor[0]
    if kind == "pull":
        _, pid, address, nbytes, token, origin = descriptor
        if origin is not None and origin[0] == os.getpid():
            reusable = _reusable_memory(origin, nbytes)
            if reusable is not None:  # it came from here: the data goes back into its memory
                raw, target = reusable
                _read_remote(pid, address, target)
                return raw
        destination = np.empty(nbytes, dtype=np.uint8)
        if nbytes:
            _read_remote(pid, address, destination)
            _remember_received(token, destination)
        return destination
    if kind == "shm":
        _, pid, _fd, identity, offset, nbytes = descriptor
        fd = _open_segment(pid, identity) if opened is None else opened(pid, identity)
        try:
            return _map_private(fd, nbytes, offset)
        finally:
            if opened is None:
                os.close(fd)
    raise StateTransferError(f"unknown buffer descriptor {kind!r}: kernel and worker run different versions")
