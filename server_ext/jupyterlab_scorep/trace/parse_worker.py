"""A child process that runs the parsers, so a file that crashes or hangs libotf2 or
pycubexr takes down only the child.

``python -m jupyterlab_scorep.trace.parse_worker`` reads jobs from stdin and writes results to stdout,
each a length-prefixed pickle: ``(module, function name, args)`` in, ``(ok, value or
exception)`` out. Only the server writes to that pipe. ``ParseWorker`` is the server's
side: one job at a time, callable from any thread, restarted after a crash or a timeout.
It is a plain subprocess rather than a multiprocessing pool because spawn-mode pools
re-import the server's ``__main__``, which fails under some launchers.
"""

from __future__ import annotations

import importlib
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
from typing import Any

_HEADER = struct.Struct("<Q")


class WorkerCrashed(Exception):
    """The worker died (or was stopped) while running a job."""


class WorkerTimeout(Exception):
    """A job ran longer than allowed; the worker was stopped."""


def _read_exact(stream, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def serve() -> None:
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the channel
    # Imported once, before the first job: the libraries, the index builder and the
    # native scanner's library (the first index build paid ~0.1 s of imports otherwise).
    for name in ("numpy", "otf2", "pycubexr", "jupyterlab_scorep.trace.index_build"):
        importlib.import_module(name)
    importlib.import_module("jupyterlab_scorep.trace.otf2_scan").available()
    while True:
        try:
            (size,) = _HEADER.unpack(_read_exact(inp, _HEADER.size))
            module, function, args = pickle.loads(_read_exact(inp, size))
        except EOFError:
            return
        try:
            reply = (True, getattr(importlib.import_module(module), function)(*args))
        except Exception as e:  # sent back and re-raised in the server
            reply = (False, e)
        try:
            data = pickle.dumps(reply)
        except Exception as e:
            data = pickle.dumps((False, RuntimeError(f"unpicklable result: {e}")))
        out.write(_HEADER.pack(len(data)) + data)
        out.flush()


class ParseWorker:
    def __init__(self):
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "jupyterlab_scorep.trace.parse_worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        return self._proc

    def start(self) -> None:
        with self._lock:
            self._start()

    def stop(self) -> None:
        with self._lock:
            self._kill()

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def call(self, fn, *args, timeout: float | None = None) -> Any:
        """Run ``fn(*args)`` in the worker (blocking; call it from a thread)."""
        request = pickle.dumps((fn.__module__, fn.__name__, args))
        with self._lock:
            proc = self._start()
            stdin, stdout = proc.stdin, proc.stdout
            if stdin is None or stdout is None:  # never: _start opens both pipes
                raise WorkerCrashed("the worker was started without its pipes")
            try:
                stdin.write(_HEADER.pack(len(request)) + request)
                stdin.flush()
                ready, _, _ = select.select([stdout], [], [], timeout)
                if not ready:
                    self._kill()
                    raise WorkerTimeout(f"stopped after {timeout:.0f} s")
                (size,) = _HEADER.unpack(_read_exact(stdout, _HEADER.size))
                ok, value = pickle.loads(_read_exact(stdout, size))
            except (EOFError, BrokenPipeError, OSError) as e:
                code = proc.poll()
                self._kill()
                raise WorkerCrashed(
                    f"the worker died ({e or 'exit status ' + str(code)})"
                ) from None
        if ok:
            return value
        raise value


if __name__ == "__main__":
    serve()
