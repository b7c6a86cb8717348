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
    Each buffer is copied into its own anonymous ``memfd`` (Linux), which the receiver opens
    through ``/proc/<pid>/fd/<fd>`` and maps copy-on-write (MAP_PRIVATE): arrays on the receiving
    side are zero-copy views kept alive by the mapping, and writes stay private to the receiver.
    A memfd has no name in /dev/shm, so nothing is left behind even if a process is killed.
    Where memfd is missing (macOS), a uniquely named file in /dev/shm or the temp directory is
    used and unlinked on release (left behind only if the sender is killed).
    Measured (FORMATS-style, this machine): shmem pages are 4 KiB (shmem THP off), so copying
    into shared memory runs at ~1.3 GiB/s against ~5 GiB/s for a copy into fresh anonymous
    memory; that is why ``pull`` is preferred.

In both, the sender must keep the Packet until the receiver's `unpack()` has returned.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
import tempfile
import uuid
import weakref

import numpy as np

__all__ = ["StateTransferError", "choose_transport", "Exporter", "import_buffers", "allow_reader"]

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


def allow_reader(pid: int) -> bool:
    """Let process `pid` read this one's memory under Yama ptrace_scope=1 (prctl PR_SET_PTRACER).

    Call it in the kernel with the worker's pid before handing over a ``pull`` packet when
    Yama is on; returns False where it cannot be done (then use ``shm``).
    """
    if not sys.platform.startswith("linux"):
        return False
    if _yama_scope() == 0:
        return True
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(_PR_SET_PTRACER, ctypes.c_ulong(pid), 0, 0, 0) == 0


def choose_transport(requested: str | None = None) -> str:
    choice = requested or os.environ.get(ENV_TRANSPORT) or "auto"
    if choice not in ("auto", "pull", "shm"):
        raise ValueError(f"unknown state transport {choice!r}: use 'pull', 'shm' or 'auto' ({ENV_TRANSPORT})")
    if choice == "auto":
        return "pull" if _pull_available() and _yama_scope() == 0 else "shm"
    return choice


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


def _write_all(fd: int, data: memoryview) -> None:
    view = data.cast("B") if data.format != "B" or data.ndim != 1 else data
    done, total = 0, view.nbytes
    while done < total:
        done += os.write(fd, view[done:done + (1 << 30)])


class Exporter:
    """Holds what the receiver needs until release(): the objects (pull) or the files (shm)."""

    def __init__(self, transport: str):
        self.transport = transport
        self._keepalive: list = []
        self._fds: list[int] = []
        self._paths: list[str] = []
        self._finalizer = weakref.finalize(self, _close_fds, self._fds, self._paths)

    def export(self, raw: memoryview) -> tuple:
        """A descriptor for one contiguous buffer (raw: PickleBuffer.raw())."""
        nbytes = raw.nbytes
        if self.transport == "pull":
            self._keepalive.append(raw)
            address = np.frombuffer(raw, dtype=np.uint8).ctypes.data if nbytes else 0
            return ("pull", os.getpid(), address, nbytes)
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create(f"scorep-state-{os.getpid()}", os.MFD_CLOEXEC)
            self._fds.append(fd)
            _write_all(fd, raw)
            return ("memfd", os.getpid(), fd, os.fstat(fd).st_ino, nbytes)
        directory = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
        path = os.path.join(directory, f"scorep-state-{os.getpid()}-{uuid.uuid4().hex}")
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        self._paths.append(path)
        try:
            _write_all(fd, raw)
        finally:
            os.close(fd)
        return ("file", path, nbytes)

    def release(self) -> None:
        self._keepalive.clear()
        self._finalizer()


# --- receiver side ---------------------------------------------------------------------------

def _map_private(fd: int, nbytes: int):
    if nbytes == 0:
        return bytearray()
    return mmap.mmap(fd, nbytes, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)


def import_buffer(descriptor: tuple):
    """The receiving side of one descriptor: a writable buffer holding the sender's bytes."""
    kind = descriptor[0]
    if kind == "pull":
        _, pid, address, nbytes = descriptor
        destination = np.empty(nbytes, dtype=np.uint8)
        if nbytes:
            _read_remote(pid, address, destination)
        return destination
    if kind == "memfd":
        _, pid, fd_number, inode, nbytes = descriptor
        try:
            fd = os.open(f"/proc/{pid}/fd/{fd_number}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise StateTransferError(
                f"shared memory of process {pid} is gone ({exc.strerror}): the sender must keep its "
                "Packet unreleased and stay alive until unpack() returns"
            ) from None
        try:
            if os.fstat(fd).st_ino != inode:
                raise StateTransferError(
                    f"fd {fd_number} of process {pid} is no longer the shared memory that was packed: "
                    "the Packet was released before unpack() finished"
                )
            return _map_private(fd, nbytes)
        finally:
            os.close(fd)
    if kind == "file":
        _, path, nbytes = descriptor
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise StateTransferError(f"shared memory file {path} is gone ({exc.strerror}): the Packet "
                                     "was released before unpack() finished") from None
        try:
            return _map_private(fd, nbytes)
        finally:
            os.close(fd)
    raise StateTransferError(f"unknown buffer descriptor {kind!r}: kernel and worker run different versions")
