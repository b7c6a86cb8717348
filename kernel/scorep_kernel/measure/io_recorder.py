"""File I/O of a run under the builtin tracer (the setting ``io: posix``): Python's
``open`` (``builtins.open``, ``io.open``, so ``pathlib`` too) gives the file object
wrapped, and each open, read, write and close becomes a region (``open``, ``read``,
``write``, ``close``, group ``io``) holding the OTF2 I/O events Score-P's POSIX adapter
writes: IO_CREATE_HANDLE, IO_OPERATION_BEGIN / _COMPLETE with the bytes asked for and
moved, IO_DESTROY_HANDLE.

IPython's own ``open`` of a cell calls the module global
``IPython.core.interactiveshell.io_open``, replaced for the run as well. Only while the
setting is on, only on threads the run records (a kernel's own threads get
the plain file object), and only for files opened by name. The wrapper's frames are
ours (this package is left out of the trace), so a write costs one region, not the
io module's calls beneath it. Reads by iteration (``for line in f``) count as one
``read`` per line.
"""

from __future__ import annotations

import builtins
import io
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..formats.recording import ROLE_FUNCTION, Marker, Region
from .build import ExtraRegion, MarkerAt

IO_GROUP = "io"
# A cell's ``open`` is IPython's wrapper (``user_ns["open"]``), which calls this module's
# ``io_open``: replaced too while the run records.
_IPYTHON_SHELL = "IPython.core.interactiveshell"
_REGIONS = {
    op: Region(op, IO_GROUP, "", 0, ROLE_FUNCTION) for op in ("open", "read", "write", "close")
}


class IoRecorder:
    def __init__(self, now: Callable[[], float], extras: list[ExtraRegion], markers: list[MarkerAt],
                 skip_tids: set[int]):  # fmt: skip
        self.now = now
        self.extras = extras
        self.markers = markers
        self.skip_tids = skip_tids
        self.handles: list[str] = []
        self._matching = 0
        self._saved: tuple[Any, Any, Any] | None = None

    def install(self) -> None:
        real = builtins.open
        ipython = sys.modules.get(_IPYTHON_SHELL)
        self._saved = (builtins.open, io.open, getattr(ipython, "io_open", None))
        recorder = self

        def open(file, mode="r", *args, **kwargs):
            if (
                threading.get_native_id() in recorder.skip_tids
                or not isinstance(file, (str, bytes, os.PathLike))
                or sys._getframe(1).f_globals.get("__name__", "").startswith("scorep_kernel")
            ):  # a kernel thread's, a descriptor's, our own (the manifest): not the user's
                return real(file, mode, *args, **kwargs)
            t0 = recorder.now()
            f = real(file, mode, *args, **kwargs)
            t1 = recorder.now()
            handle = len(recorder.handles)
            recorder.handles.append(os.path.abspath(os.fsdecode(file)))
            recorder._region("open", t0, t1, [Marker("io_create", str(mode), 0, handle)])
            return _File(f, handle, recorder)

        builtins.open = open
        io.open = open
        if self._saved[2] is not None:  # what IPython's own ``open`` of a cell calls
            ipython.io_open = open  # type: ignore[union-attr]

    def uninstall(self) -> None:
        if self._saved is not None:
            builtins.open, io.open, ipython_open = self._saved
            ipython = sys.modules.get(_IPYTHON_SHELL)
            if ipython_open is not None and ipython is not None:
                ipython.io_open = ipython_open  # type: ignore[attr-defined]
            self._saved = None

    def _region(self, op: str, t0: float, t1: float, marks: list[Marker]) -> None:
        tid = threading.get_native_id()
        t1 = max(t1, t0 + len(marks) + 1.0)
        self.extras.append(ExtraRegion(tid, t0, t1, _REGIONS[op], always=True))
        step = (t1 - t0) / (len(marks) + 1)
        for i, m in enumerate(marks, 1):
            self.markers.append(MarkerAt(tid, t0 + i * step, m))

    def operation(self, op: str, handle: int, asked: int, call: Callable[[], Any]) -> Any:
        self._matching += 1
        matching = self._matching
        t0 = self.now()
        result = call()
        t1 = self.now()
        moved = len(result) if op == "read" and result is not None else (result or 0)
        if op == "write" and not isinstance(moved, int):
            moved = 0
        self._region(
            op, t0, t1,
            [Marker("io_begin", op, matching, handle, asked), Marker("io_complete", op, matching, handle, int(moved))],
        )  # fmt: skip
        return result


class _File:
    """The file object ``open`` returned, its reads, writes and close recorded."""

    def __init__(self, f: Any, handle: int, recorder: IoRecorder):
        self._f, self._handle, self._rec = f, handle, recorder
        self._closed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def read(self, size: int = -1) -> Any:
        return self._rec.operation("read", self._handle, max(size, 0), lambda: self._f.read(size))

    def readline(self, size: int = -1) -> Any:
        return self._rec.operation(
            "read", self._handle, max(size, 0), lambda: self._f.readline(size)
        )

    def readlines(self, hint: int = -1) -> list:
        return list(iter(self.readline, self._f.read(0)))

    def write(self, data: Any) -> Any:
        return self._rec.operation("write", self._handle, len(data), lambda: self._f.write(data))

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def close(self) -> None:
        if self._closed:
            return self._f.close()
        self._closed = True
        t0 = self._rec.now()
        try:
            return self._f.close()
        finally:
            marks = [Marker("io_destroy", "", 0, self._handle)]
            self._rec._region("close", t0, self._rec.now(), marks)

    def __iter__(self) -> _File:
        return self

    def __next__(self) -> Any:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def __enter__(self) -> _File:
        self._f.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
