"""What the scorep shim records in a measured run, with the semantics of Score-P's Python
bindings (``scorep.user``, ``scorep.instrumenter``): user regions, the instrumenter's
switch, recording on/off, rewind regions, user parameters, force_finalize.

All of it is per call of the user's API, never per traced event: the tracer records every
call anyway, and the build (``measure.build``) drops what the switches left out.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from scorep_kernel import region_words as rw

from ..formats.recording import ROLE_FUNCTION, ROLE_USER, Marker, Region
from .build import ExtraRegion, MarkerAt

# The bindings' own region and parameter for a region_end without its begin
# (scorepy/events.cpp, region_end_error_handling), and what they print once per process.
ERROR_REGION = Region("error_region", "error", "scorep.cpp", 0, ROLE_USER)
LEAVE_REGION_PARAMETER = "leave-region"
ERROR_LINES = (
    "SCOREP_BINDING_PYTHON ERROR: There was a region exit without an enter!\n"
    'SCOREP_BINDING_PYTHON ERROR: For details look for "error_region" in the trace or profile.\n'
)
_ALL_TIME = (float("-inf"), float("inf"))


@dataclass
class _ThreadState:
    open_user: list[tuple[str, float, Region]] = field(default_factory=list)
    open_rewind: list[tuple[str, float]] = field(default_factory=list)
    instr_off_since: float | None = None
    rec_off_since: float | None = None


class UserRecorder:
    """The shim's entry points for one Measurement. ``now`` reads the tracer's clock (ns);
    ``instrumenter``: whether Python functions are recorded from the start (False under
    the binding argument ``--noinstrumenter``), on every thread."""

    def __init__(self, now: Callable[[], float], instrumenter: bool = True):
        self.now = now
        self.instrumenter_default = instrumenter
        self.threads: dict[int, _ThreadState] = {}
        self.extras: list[ExtraRegion] = []
        self.markers: list[MarkerAt] = []
        self.instr_off: dict[int, list[tuple[float, float]]] = {}
        self.rec_off: dict[int, list[tuple[float, float]]] = {}
        self.finalized_at: float | None = None  # scorep.user.force_finalize()
        self.notes: list[str] = []
        self._error_printed = False

    def state(self, tid: int | None = None) -> _ThreadState:
        tid = threading.get_native_id() if tid is None else tid
        st = self.threads.get(tid)
        if st is None:
            st = self.threads[tid] = _ThreadState()
            if not self.instrumenter_default:
                st.instr_off_since = _ALL_TIME[0]
        return st

    # --- regions -----------------------------------------------------------------------
    def region_begin(
        self, name: str, file: str = "", line: int = 0, module: str = rw.USER_MODULE
    ) -> None:
        region = Region(
            rw.user_region_name(name, module), module, file or "", int(line or 0), ROLE_USER
        )
        self.state().open_user.append((name, self.now(), region))

    def region_end(self, name: str, module: str = rw.USER_MODULE) -> None:
        t1 = self.now()
        tid = threading.get_native_id()
        st = self.state(tid)
        for i in range(len(st.open_user) - 1, -1, -1):
            if st.open_user[i][0] == name and st.open_user[i][2].group == module:
                _n, t0, region = st.open_user.pop(i)
                self.extras.append(ExtraRegion(tid, t0, t1, region))
                return
        self.error_region(rw.user_region_name(name, module), t1)

    def error_region(self, leave_region: str, t: float) -> None:
        """The bindings' answer to an end without a begin: an ``error_region`` with the
        region's name as the ``leave-region`` parameter, two lines on stderr (once)."""
        tid = threading.get_native_id()
        self.extras.append(ExtraRegion(tid, t, t + 2.0, ERROR_REGION))
        self.markers.append(
            MarkerAt(tid, t + 1.0, Marker("string", LEAVE_REGION_PARAMETER, leave_region))
        )
        self.notes.append(f"a region end without its begin: {leave_region!r} (error_region)")
        if not self._error_printed:
            self._error_printed = True
            sys.stderr.write(ERROR_LINES)
            sys.stderr.flush()

    def function_region(self, func, t0: float, t1: float) -> None:
        """A call of ``func`` that ``@scorep.user.region()`` marked while the instrumenter
        was off: the region the bindings make of it (``func.__module__:func.__name__``)."""
        code = getattr(func, "__code__", None)
        module = str(getattr(func, "__module__", None) or "None")
        region = Region(
            rw.function_region_name(module, str(getattr(func, "__name__", "?"))),
            module,
            code.co_filename if code is not None else "",
            int(code.co_firstlineno) if code is not None else 0,
            ROLE_FUNCTION,
        )
        self.extras.append(ExtraRegion(threading.get_native_id(), t0, t1, region, code))

    # --- rewind --------------------------------------------------------------------------
    def rewind_begin(self, name: str) -> None:
        self.state().open_rewind.append((name, self.now()))

    def rewind_end(self, name: str, value: bool) -> None:
        """``value`` true: what was recorded since rewind_begin(name) on this thread is
        dropped, and the trace says so (MEASUREMENT_ON_OFF OFF at the begin, ON here), as
        Score-P's rewind does; false: nothing happened."""
        t1 = self.now()
        tid = threading.get_native_id()
        st = self.state(tid)
        for i in range(len(st.open_rewind) - 1, -1, -1):
            if st.open_rewind[i][0] == name:
                _n, t0 = st.open_rewind.pop(i)
                break
        else:
            self.error_region(name, t1)
            return
        if not value:
            return
        self.rec_off.setdefault(tid, []).append((t0, t1))
        self.markers.append(MarkerAt(tid, t0, Marker("on_off", "", False)))
        self.markers.append(MarkerAt(tid, t1, Marker("on_off", "", True)))

    # --- parameters ------------------------------------------------------------------------
    def parameter(self, kind: str, name: str, value: int | str) -> None:
        """A user parameter (``int``, ``uint`` or ``string``) at this moment on this thread."""
        self.markers.append(
            MarkerAt(threading.get_native_id(), self.now(), Marker(kind, str(name), value))
        )

    # --- switches --------------------------------------------------------------------------
    def set_instrumenter(self, enabled: bool) -> bool:
        """Pause or resume function recording on this thread; returns the previous state."""
        return self._switch("instr_off_since", self.instr_off, enabled)

    def instrumenter_enabled(self) -> bool:
        return self.state().instr_off_since is None

    def set_recording(self, enabled: bool) -> bool:
        """Pause or resume all recording (functions and user regions) on this thread."""
        return self._switch("rec_off_since", self.rec_off, enabled)

    def force_finalize(self) -> None:
        """Nothing after this moment is recorded in this run (on any thread)."""
        if self.finalized_at is None:
            self.finalized_at = self.now()

    def _switch(self, since_attr: str, off_spans: dict, enabled: bool) -> bool:
        tid = threading.get_native_id()
        st = self.state(tid)
        since = getattr(st, since_attr)
        if enabled and since is not None:
            off_spans.setdefault(tid, []).append((since, self.now()))
            setattr(st, since_attr, None)
        elif not enabled and since is None:
            setattr(st, since_attr, self.now())
        return since is None

    # --- the end of a cell, of the run ---------------------------------------------------------
    def close_cell(self, tid: int, t1: float) -> list[str]:
        """Close the user regions the cell left open on its thread, innermost first, at
        its end; their names."""
        st = self.threads.get(tid)
        closed: list[str] = []
        while st is not None and st.open_user:
            name, t0, region = st.open_user.pop()
            self.extras.append(ExtraRegion(tid, t0, t1 - len(st.open_user) - 1, region))
            closed.append(name)
        return closed

    def close_open(self, stop_t: float, tids: list[int]) -> None:
        """Close what is still open at ``stop_t``; threads the shim never saw (``tids``
        recorded by the tracer) were off all along under ``--noinstrumenter``."""
        if not self.instrumenter_default:
            for tid in tids:
                self.state(tid)
        for tid, st in self.threads.items():
            while st.open_user:
                _name, t0, region = st.open_user.pop()
                # Closed just before the stop, innermost first.
                self.extras.append(ExtraRegion(tid, t0, stop_t - len(st.open_user) - 1, region))
                self.notes.append(f"user region {region.name!r} was not closed: closed at stop")
            if st.instr_off_since is not None:
                self.instr_off.setdefault(tid, []).append((st.instr_off_since, _ALL_TIME[1]))
                st.instr_off_since = None
            if st.rec_off_since is not None:
                self.rec_off.setdefault(tid, []).append((st.rec_off_since, _ALL_TIME[1]))
                st.rec_off_since = None
            st.open_rewind.clear()
        if self.finalized_at is not None:
            for tid in set(tids) | set(self.threads):
                self.rec_off.setdefault(tid, []).append((self.finalized_at, _ALL_TIME[1]))
