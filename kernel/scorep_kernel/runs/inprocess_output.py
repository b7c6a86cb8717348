"""While a cell is traced in the kernel, what it prints costs a C call, not ipykernel's
stream machinery under the tracer.

A print goes to ipykernel's ``OutStream.write``: a dozen Python calls (the parent header,
the buffer lock, scheduling a flush) that the tracer would record and the build would then
exclude (a 100,000-line cell: 2.5M events recorded and dropped, the event cap reached in
2 s). For the cell's duration the kernel's own streams write with ``list.append`` instead
(an instance attribute over the method, as the worker's streams do): every writer (print,
a logging handler holding the stream, a thread of the cell) appends to one list in the
order it wrote, and the text reaches the real ``write`` in one piece per interval, from a
thread that existed before the measurement (so never traced), or at once when anything
flushes (a display, an error, the displayhook, tqdm's ``flush``; that flush is this
package's code, which the tracer drops with everything below it). At the cell's end
everything is handed over before the reply and the streams are as they were.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

# As the worker's streams (worker.shell): a progress bar still moves while the cell runs.
FLUSH_INTERVAL_S = 0.05


_MISSING = object()


class _Batch:
    """One stream's pending writes, and what it took over from the stream: its write and
    flush as they were (IPython's history tee sets its own ``write`` on the instance for
    the cell: the text reaches it, in one piece per drain)."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.parts: list[Any] = []
        self.lock = threading.Lock()
        d = stream.__dict__
        self.saved = (d.get("write", _MISSING), d.get("flush", _MISSING))
        self.real_write = stream.write
        self.real_flush = stream.flush
        stream.write = self.parts.append
        stream.flush = self.flush

    def restore(self) -> None:
        self.drain()
        d = self.stream.__dict__
        for name, value in zip(("write", "flush"), self.saved):
            if value is _MISSING:
                d.pop(name, None)
            else:
                d[name] = value
        self.drain()  # what a thread of the cell appended in between

    def drain(self) -> None:
        """Hand what was written so far to the stream's own write, in order."""
        with self.lock:
            parts = self.parts
            n = len(parts)
            if not n:
                return
            chunk = parts[:n]  # write() may append meanwhile: take the first n only
            del parts[:n]
            try:
                text = "".join(chunk)
            except TypeError:  # not str: the stream's own write says why, in order
                for part in chunk:
                    self._write(part)
                return
            self._write(text)

    def _write(self, text: Any) -> None:
        try:
            self.real_write(text)
        except Exception:  # a stream closed or unable to take it: as a plain write would
            pass

    def flush(self) -> None:
        self.drain()
        self.real_flush()


class _Flusher:
    """One thread for the kernel's life, started before any measurement (a thread started
    while tracing would be traced), draining the batches in use."""

    def __init__(self) -> None:
        self.batches: list[_Batch] = []
        self._started = False
        self._lock = threading.Lock()

    def ensure_started(self) -> None:
        with self._lock:
            if not self._started:
                self._started = True
                threading.Thread(target=self._loop, name="scorep-cell-output", daemon=True).start()

    def _loop(self) -> None:
        while True:
            time.sleep(FLUSH_INTERVAL_S)
            for batch in list(self.batches):
                batch.drain()


_flusher = _Flusher()


def prepare() -> None:
    """Start the flusher thread now, before a measurement starts."""
    _flusher.ensure_started()


def _batchable(stream: Any) -> bool:
    """ipykernel's OutStream, or any stream object with a __dict__, write and flush."""
    return (
        isinstance(getattr(stream, "__dict__", None), dict)
        and callable(getattr(stream, "write", None))
        and callable(getattr(stream, "flush", None))
    )


class BatchedStreams:
    """For one cell run by IPython in the kernel: from IPython's ``pre_run_cell`` (inside
    its history tee) to ``post_run_cell``, sys.stdout and sys.stderr write by
    ``list.append``; everything reaches them, in order, before the cell's reply."""

    def __init__(self, shell: Any):
        self.shell = shell
        self.batches: list[_Batch] = []

    def __enter__(self) -> BatchedStreams:
        _flusher.ensure_started()
        events = self.shell.events
        events.register("pre_run_cell", self._install)
        events.register("post_run_cell", self._restore)
        return self

    def __exit__(self, *exc: object) -> None:
        events = self.shell.events
        for name, callback in (("pre_run_cell", self._install), ("post_run_cell", self._restore)):
            try:
                events.unregister(name, callback)
            except ValueError:
                pass
        self._restore()

    def _install(self, info: Any = None) -> None:
        if self.batches:
            return
        streams = {id(s): s for s in (sys.stdout, sys.stderr) if _batchable(s)}
        self.batches = [_Batch(s) for s in streams.values()]
        _flusher.batches.extend(self.batches)

    def _restore(self, result: Any = None) -> None:
        batches, self.batches = self.batches, []
        for batch in reversed(batches):
            _flusher.batches.remove(batch)
            batch.restore()
