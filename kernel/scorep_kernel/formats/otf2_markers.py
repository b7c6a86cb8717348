"""A thread's events that are no enter or leave, written between its enter/leave runs:
user parameters (PARAMETER_INT / _UNSIGNED_INT / _STRING, as ``SCOREP_User_Parameter*``
writes them) and MEASUREMENT_ON_OFF (a rewound region, as Score-P's rewind writes it),
and the accelerators' callsite parameter after each launch's enter (otf2_devices).

Only threads that have such events take this path; the others stay on the fast writers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from otf2 import MeasurementMode, ParameterType

from .recording import Recording, ThreadEvents

PARAMETER_TYPES = {
    "int": ParameterType.INT64,
    "uint": ParameterType.UINT64,
    "string": ParameterType.STRING,
}


def define(defs: Any, recording: Recording) -> dict[tuple[str, str], Any]:
    """One OTF2 parameter definition per (name, kind) the markers use."""
    out: dict[tuple[str, str], Any] = {}
    for t in recording.threads:
        for m in t.markers.items if t.markers is not None else ():
            key = (m.name, m.kind)
            if m.kind in PARAMETER_TYPES and key not in out:
                out[key] = defs.parameter(m.name, parameter_type=PARAMETER_TYPES[m.kind])
    return out


def _writes(writer: Any, m_kind: str, param: Any, ts: int, value: Any) -> Callable[[], None]:
    if m_kind == "on_off":
        mode = MeasurementMode.ON if value else MeasurementMode.OFF
        return lambda: writer.measurement_on_off(ts, mode)
    if m_kind == "string":
        return lambda: writer.parameter_string(ts, param, str(value))
    if m_kind == "int":
        return lambda: writer.parameter_int(ts, param, int(value))
    return lambda: writer.parameter_unsigned_int(ts, param, int(value))


def has_markers(t: ThreadEvents) -> bool:
    return t.callsites is not None or (t.markers is not None and len(t.markers.items) > 0)


def write_thread(
    writer: Any,
    t: ThreadEvents,
    times: np.ndarray,
    refs: np.ndarray,
    parameters: dict[tuple[str, str], Any],
    callsite_parameter: Any,
    clock_offset_ns: int,
    write_enter_leave: Callable[..., None],
) -> int:
    """The thread's enter/leave events (epoch ``times``, OTF2 ``refs``) in runs through
    ``write_enter_leave``, each marker after its event; the number of events written."""
    entries: list[tuple[int, Callable[[], None]]] = []
    if t.callsites is not None:
        pos = np.asarray(t.callsites.events, np.int64).tolist()
        for p, value in zip(pos, np.asarray(t.callsites.ids, np.int64).tolist()):
            entries.append((p, _writes(writer, "uint", callsite_parameter, int(times[p]), value)))
    if t.markers is not None:
        after = np.asarray(t.markers.after, np.int64).tolist()
        stamps = (np.asarray(t.markers.times, np.int64) + clock_offset_ns).tolist()
        for p, ts, m in zip(after, stamps, t.markers.items):
            if p >= 0:  # never before the event it follows (OTF2's times do not decrease)
                ts = max(ts, int(times[p]))
            if p + 1 < len(times):
                ts = min(ts, int(times[p + 1]))
            entries.append(
                (p, _writes(writer, m.kind, parameters.get((m.name, m.kind)), ts, m.value))
            )
    entries.sort(key=lambda e: e[0])  # stable: callsites first at one position
    kinds = np.asarray(t.kinds)
    lo = 0
    for p, write in entries:
        hi = p + 1
        if hi > lo:
            write_enter_leave(times[lo:hi], refs[lo:hi], kinds[lo:hi])
            lo = hi
        write()
    write_enter_leave(times[lo:], refs[lo:], kinds[lo:])
    return len(t) + len(entries)
