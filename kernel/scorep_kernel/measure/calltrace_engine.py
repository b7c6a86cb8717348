"""Our recording engine: the C profile function of kernel/native/calltrace.c.

Each thread's recorder writes one row per finished call (start ns, end ns, key, depth; 24
bytes, 12 per event); ``extract`` views each thread's rows as numpy arrays. A key is an
index into the table of what was called (``("py", code)`` or ``("c", module, type,
name)``), so the read-out makes no object per call. See measure.engine for the rules both
engines follow.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import cast

import numpy as np

from .engine import RawCalls, SavedProfiles, clock_pair

try:
    from . import _calltrace  # type: ignore[attr-defined]  # built at install (hatch_build.py)
except ImportError:  # not built for this Python: measure.engine uses VizTracer's tracer
    _calltrace = None

ENGINE_NAME = "calltrace"
ROW_DTYPE = np.dtype([("start", "<i8"), ("end", "<i8"), ("key", "<i4"), ("depth", "<i4")])


def available() -> bool:
    return _calltrace is not None and sys.version_info[:2] == (3, 11)


class CalltraceEngine:
    """One _calltrace.Tracer: records at most ``capacity`` calls, then stops by itself."""

    label = f"{ENGINE_NAME} (the kernel's C profile function, rows read as arrays)"
    overflow_note = (
        "the tracer's buffer filled before the event cap was enforced: recording stopped there"
    )

    def __init__(self, capacity: int):
        assert _calltrace is not None, "calltrace_engine.available() is checked first"
        self.capacity = capacity
        self._tracer = _calltrace.Tracer(capacity)
        self.saved = SavedProfiles()
        self.c_functions = False

    @property
    def collecting(self) -> bool:
        return bool(self._tracer.collecting)

    @property
    def recorded(self) -> int:
        return int(self._tracer.recorded)

    def configure(self, *, ignore_prefix: str, c_functions: bool, exclude_files: list[str]):
        self._tracer.configure([ignore_prefix, *exclude_files], bool(c_functions))
        self.c_functions = bool(c_functions)

    def start(self) -> None:
        """Record on this thread and on threads started from now on."""
        self.saved.save()
        self._tracer.clear()
        threading.setprofile(self._tracer.thread_func)
        self._tracer.start()

    @property
    def install_here(self) -> Callable[[], None]:
        """Record on the calling thread too (a thread that existed before start()), with
        its record kept from before. A C function: no Python frame of ours returns after
        the profile function is in place (its return would come without its call)."""
        return cast("Callable[[], None]", self._tracer.install)

    @property
    def resume_here(self) -> Callable[[], None]:
        """Back on this thread after sys.setprofile(None) (measure.imports), with the
        thread's open calls kept (a C function, as install_here)."""
        return cast("Callable[[], None]", self._tracer.install)

    def owns(self, profile_object: object) -> bool:
        """Whether a sys.getprofile() value is this tracer recording on that thread."""
        return bool(self._tracer.owns(profile_object))

    def halt(self) -> None:
        """Stop recording on every thread now (the event cap); open calls stay open and
        are closed by stop()."""
        self._tracer.halt()

    def stop(self) -> list[str]:
        """Stop recording; calls still open on any thread end now. Other threads lose the
        profile function (a thread started in the run would keep it for its life: slower
        and recorded again by the next run); this one gets back the one found at start(),
        as new threads do. Returns notes on what could not be restored."""
        self._tracer.stop()
        return self.saved.restore()

    def now_ns(self) -> float:
        """The tracer's clock, ns: the time-stamp counter scaled to CLOCK_MONOTONIC."""
        return float(self._tracer.now())

    def clock_pair(self) -> tuple[float, float]:
        """(tracer ns, perf_counter ns) read at the same moment (engine.clock_pair)."""
        return clock_pair(self.now_ns)

    def extract(self, clear: bool = True) -> RawCalls:
        """The finished calls of every thread; the buffer is empty after (``clear`` is
        always so here: the rows leave the threads). The arrays are made on first use
        (RawCalls.deferred), from the rows as they are, without a copy of them."""
        threads, keys, (tick_ns, base_ticks, base_ns) = self._tracer.take()
        if clear:
            self._tracer.clear()
        names = {int(t): str(name) for t, name, _ in threads}
        count = sum(len(rows) for _, _, rows in threads)

        def make() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
            parts = [np.frombuffer(rows, ROW_DTYPE) for _, _, rows in threads]
            if len(parts) == 1:
                table = parts[0]  # a view of the thread's buffer
            else:
                table = np.concatenate(parts) if parts else np.empty(0, ROW_DTYPE)
            tid = np.repeat(
                np.array([t for t, _, _ in threads], np.uint64), [len(p) for p in parts]
            )

            def ns(ticks: np.ndarray) -> np.ndarray:
                out = (ticks - base_ticks).astype(np.float64)
                out *= tick_ns
                out += base_ns
                return out

            return tid, ns(table["start"]), ns(table["end"]), table["key"].copy()

        tids = [int(t) for t, _, rows in threads if len(rows)]
        return RawCalls.deferred(count, make, list(keys), names, tids)
