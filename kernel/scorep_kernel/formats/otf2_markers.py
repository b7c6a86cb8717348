"""A thread's events that are no enter or leave, written between its enter/leave runs:
user parameters (PARAMETER_INT / _UNSIGNED_INT / _STRING, as ``SCOREP_User_Parameter*``
writes them), MEASUREMENT_ON_OFF (a rewound region, as Score-P's rewind writes it), file
I/O (IO_CREATE_HANDLE, IO_OPERATION_BEGIN / _COMPLETE, IO_DESTROY_HANDLE, as Score-P's
POSIX I/O adapter writes them) and the accelerators' callsite parameter after each launch's enter (otf2_devices).

Only threads that have such events take this path; the others stay on the fast writers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from otf2 import (
    IoAccessMode,
    IoCreationFlag,
    IoOperationFlag,
    IoOperationMode,
    IoParadigmClass,
    IoParadigmFlag,
    IoStatusFlag,
    MeasurementMode,
    ParameterType,
)

from .recording import Marker, Recording, ThreadEvents

PARAMETER_TYPES = {
    "int": ParameterType.INT64,
    "uint": ParameterType.UINT64,
    "string": ParameterType.STRING,
}


IO_PARADIGM = ("POSIX", "POSIX I/O")  # identification and name, as Score-P's adapter


def define(defs: Any, recording: Recording, node: Any) -> dict[tuple[str, str], Any]:
    """One OTF2 parameter definition per (name, kind) the markers use; the I/O handles of
    ``recording.io_handles`` (a regular file in the ``node``'s scope each) under
    ``("", "handle <i>")``."""
    out: dict[tuple[str, str], Any] = {}
    for t in recording.threads:
        for m in t.markers.items if t.markers is not None else ():
            key = (m.name, m.kind)
            if m.kind in PARAMETER_TYPES and key not in out:
                out[key] = defs.parameter(m.name, parameter_type=PARAMETER_TYPES[m.kind])
    if recording.io_handles:
        paradigm = defs.io_paradigm(
            *IO_PARADIGM, io_paradigm_class=IoParadigmClass.SERIAL,
            io_paradigm_flags=IoParadigmFlag.OS,
        )  # fmt: skip
        files: dict[str, Any] = {}
        for i, path in enumerate(recording.io_handles):
            if path not in files:
                files[path] = defs.io_regular_file(path, scope=node)
            out[("", f"handle {i}")] = defs.io_handle(path, files[path], paradigm)
    return out


def _io_writes(writer: Any, m: Marker, handle: Any, ts: int) -> Callable[[], None]:
    if m.kind == "io_create":
        writes = any(c in m.name for c in "wax+")
        reads = "r" in m.name or "+" in m.name
        access = IoAccessMode.READ_ONLY
        if writes:
            access = IoAccessMode.READ_WRITE if reads else IoAccessMode.WRITE_ONLY
        creation = IoCreationFlag.CREATE if any(c in m.name for c in "wax") else IoCreationFlag.NONE
        return lambda: writer.io_create_handle(ts, handle, access, creation, IoStatusFlag.NONE)
    if m.kind == "io_begin":
        mode = IoOperationMode.READ if m.name == "read" else IoOperationMode.WRITE
        return lambda: writer.io_operation_begin(
            ts, handle, mode, IoOperationFlag.NONE, int(m.nbytes), int(m.value)
        )
    if m.kind == "io_complete":
        return lambda: writer.io_operation_complete(ts, handle, int(m.nbytes), int(m.value))
    return lambda: writer.io_destroy_handle(ts, handle)


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
            if m.kind.startswith("io_"):
                handle = parameters[("", f"handle {m.handle}")]
                entries.append((p, _io_writes(writer, m, handle, ts)))
                continue
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


def write_all(
    writer: Any,
    t: ThreadEvents,
    times: np.ndarray,
    refs: np.ndarray,
    parameters: dict[tuple[str, str], Any],
    callsite_parameter: Any,
    clock_offset_ns: int,
    write_enter_leave: Callable[..., None],
) -> int:
    """All the thread's events: with its markers (``write_thread``) where it has any,
    else its enters and leaves in one run; the number of events written."""
    if has_markers(t):
        return write_thread(
            writer, t, times, refs, parameters, callsite_parameter, clock_offset_ns,
            write_enter_leave,
        )  # fmt: skip
    write_enter_leave(times, refs, np.asarray(t.kinds))
    return len(t)
