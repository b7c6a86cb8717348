"""The recording engine: what records the calls of a measured run, behind one interface.

Two engines give the same ``RawCalls`` (one row per finished call: thread, start, end,
what was called):

- ``calltrace`` (measure.calltrace_engine): our C profile function (kernel/native/
  calltrace.c), built for CPython 3.11 at install time. One clock read per event and a
  table lookup per call; rows read out as one array per thread.
- ``viztracer`` (measure.viztracer_engine): VizTracer's C tracer, its ring buffer read
  directly. Used where ours is not built (Python 3.12+, where VizTracer uses
  sys.monitoring; no C compiler), or when the environment asks for it
  (``SCOREP_KERNEL_TRACER=viztracer``, for comparisons).

Chosen by measurement (``benchmarks/tracer_overhead.py``, fib(25), the same machine and
run): a profile function written in Python costs ~0.2 us per event before it records
anything (18-20x); VizTracer's C tracer 6-7x, plus ~25-50 ms to read 243k calls out of its
buffer (one object reference per call to release); ours about 4.5x with a read-out of a
few ms, under cProfile's 5.2x (which records no events at all).

Both drop a call they are told to ignore *with everything below it*: our own package
directory (the tracer's frames, and the import hook, so the import machinery under
``import x`` costs nothing) and frozen importlib/zipimport.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol

import numpy as np

ENV_ENGINE = "SCOREP_KERNEL_TRACER"  # "viztracer" forces the fallback engine

# Frames whose whole subtree is dropped inside the C tracer.
IMPORT_MACHINERY = ["<frozen importlib", "<frozen zipimport"]


class EngineError(RuntimeError):
    """The recording engine cannot run here; the message says what to install."""


Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # tid, start, end, key


class RawCalls:
    """Finished calls read out of the buffer, one row per call, times in the tracer's ns:
    ``tid`` (uint64 native thread id), ``start``/``end`` (float64 ns on the tracer's clock,
    Tracer.now_ns), ``key`` (int32 index into ``keys``: ``("py", code)`` or ``("c", module,
    type, name)``), ``thread_names`` (tid -> name when first seen).

    ``deferred`` makes them from the engine's rows on first use: ``halt()`` hands the
    rows over without touching them, and the build (after the reply, or in the process
    that writes the files) pays for the arrays."""

    def __init__(
        self,
        tid: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        key: np.ndarray,
        keys: list | None = None,
        thread_names: dict[int, str] | None = None,
    ):
        self._arrays: Arrays | None = (tid, start, end, key)
        self._make: Callable[[], Arrays] | None = None
        self._count = int(tid.shape[0])
        self._tids: list[int] | None = None  # thread_ids(), where the engine knows them
        self.keys = keys if keys is not None else []
        self.thread_names = thread_names if thread_names is not None else {}

    @classmethod
    def deferred(
        cls,
        count: int,
        make: Callable[[], Arrays],
        keys: list,
        thread_names: dict[int, str],
        thread_ids: list[int],
    ) -> RawCalls:
        """``thread_ids``: the threads with rows in what ``make`` returns."""
        empty = np.empty(0, np.float64)
        raw = cls(empty, empty, empty, empty, keys, thread_names)
        raw._arrays, raw._make, raw._count = None, make, count
        raw._tids = sorted(set(thread_ids))
        return raw

    def thread_ids(self) -> list[int]:
        """The threads with calls, ascending (``np.unique(tid)``, known without it where
        the engine said)."""
        if self._tids is None:
            self._tids = [int(t) for t in np.unique(self.tid).tolist()]
        return self._tids

    def arrays(self) -> Arrays:
        if self._arrays is None:
            assert self._make is not None
            self._arrays, self._make = self._make(), None
        return self._arrays

    def keep(self, rows: np.ndarray) -> None:
        """Keep only these rows (a boolean mask or indices)."""
        tid, start, end, key = (a[rows] for a in self.arrays())
        self._arrays, self._count = (tid, start, end, key), int(tid.shape[0])
        self._tids = None

    @property
    def tid(self) -> np.ndarray:
        return self.arrays()[0]

    @property
    def start(self) -> np.ndarray:
        return self.arrays()[1]

    @property
    def end(self) -> np.ndarray:
        return self.arrays()[2]

    @property
    def key(self) -> np.ndarray:
        return self.arrays()[3]

    def __len__(self) -> int:
        return self._count


class Tracer(Protocol):
    """What a Measurement needs of an engine."""

    label: str  # the manifest's measurement.engine
    overflow_note: str  # said when more than ``capacity`` calls were recorded
    capacity: int
    c_functions: bool
    saved: SavedProfiles  # the profile functions found at start(), put back by stop()

    @property
    def collecting(self) -> bool: ...
    @property
    def recorded(self) -> int: ...
    def configure(
        self, *, ignore_prefix: str, c_functions: bool, exclude_files: list[str]
    ) -> None: ...
    def start(self) -> None: ...
    @property
    def install_here(self) -> Callable[[], None]: ...
    def owns(self, profile_object: object) -> bool: ...
    @property
    def resume_here(self) -> Callable[[], None]: ...
    def halt(self) -> None: ...
    def stop(self) -> list[str]: ...
    def now_ns(self) -> float: ...
    def clock_pair(self) -> tuple[float, float]: ...
    def extract(self, clear: bool = True) -> RawCalls: ...


def restore_profile(previous: object) -> list[str]:
    """Put back a thread's profile function as sys.getprofile() reported it; a note where
    it cannot be."""
    note = [f"the previous profiler {previous!r} could not be restored on this thread"]
    if previous is not None and not callable(previous):
        # A C profiler's object (cProfile.Profile): sys.setprofile() would take it as a
        # Python function and fail with TypeError at the next call.
        sys.setprofile(None)
        return note
    try:
        sys.setprofile(previous)
    except Exception:
        sys.setprofile(None)
        return note
    return []


class SavedProfiles:
    """The profile functions a tracer found when it started (this thread's, and the one
    threading gives new threads), put back when it stops."""

    def __init__(self) -> None:
        self._saved: tuple[object, object] | None = None

    def save(self) -> None:
        self._saved = (sys.getprofile(), threading.getprofile())

    def restore(self) -> list[str]:
        """Put them back (once); notes on what could not be."""
        if self._saved is None:
            return []
        prev_sys, prev_thread = self._saved
        self._saved = None
        notes = restore_profile(prev_sys)
        threading.setprofile(prev_thread)  # type: ignore[arg-type]
        return notes


def release_in_child(tracer: Tracer) -> None:
    """In a forked child that inherited a running tracer: stop recording and put back the
    profile functions found at start(), without reading anything."""
    tracer.halt()
    tracer.saved.restore()
    if tracer.owns(sys.getprofile()):  # nothing was saved: the tracer was not started
        sys.setprofile(None)


def clock_pair(now_ns: Callable[[], float]) -> tuple[float, float]:
    """(tracer ns, perf_counter ns) read at the same moment: the reading taken in the
    shortest of a few perf_counter brackets."""
    best: tuple[int, float, float] | None = None
    for _ in range(5):
        a = time.perf_counter_ns()
        v = now_ns()
        b = time.perf_counter_ns()
        if best is None or b - a < best[0]:
            best = (b - a, v, (a + b) / 2.0)
    assert best is not None  # the loop ran
    return best[1], best[2]


_tracers: dict[tuple[str, int], Tracer] = {}
_lock = threading.Lock()


def engine_name() -> str:
    """``calltrace`` where our recorder is built and not declined, else ``viztracer``."""
    if os.environ.get(ENV_ENGINE, "").strip().lower() == "viztracer":
        return "viztracer"
    from . import calltrace_engine

    return "calltrace" if calltrace_engine.available() else "viztracer"


def get_tracer(capacity: int, name: str | None = None) -> Tracer:
    """A tracer with room for ``capacity`` calls. Tracers are kept for the life of the
    process: threads started during a run keep a reference in their thread state, and a
    tracer's deallocation would reset threading.setprofile() at an arbitrary moment."""
    name = name or engine_name()
    with _lock:
        tracer = _tracers.get((name, capacity))
        if tracer is None:
            if name == "calltrace":
                from .calltrace_engine import CalltraceEngine

                tracer = CalltraceEngine(capacity)
            else:
                from .viztracer_engine import VizTracerEngine

                tracer = VizTracerEngine(capacity)
            _tracers[(name, capacity)] = tracer
        return tracer


def package_dir() -> str:
    """Prefix of the files whose frames (and everything below them) the tracer drops."""
    return os.path.dirname(os.path.abspath(__file__)) + os.sep
