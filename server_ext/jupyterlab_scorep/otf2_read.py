"""Read an OTF2 archive fast: definitions through the public ``otf2`` API, events through
C callbacks registered directly on the package's bundled libotf2.

The public event iterator builds a Python object per event (~180k events/s here). This
module registers ctypes CFUNCTYPE callbacks for Enter, Leave and Metric on one local event
reader per location, and each callback only appends to ``array('q')``, which reaches
~2M events/s on this machine. Per-location readers (rather than the global reader) hand us
each location's events already separated, so there is no k-way merge and no split pass.

The library is loaded as a ``ctypes.PyDLL`` so the GIL stays held while libotf2 calls back
into Python (no acquire/release per event). Run this in a worker process, not on the
server's event-loop thread (see ``worker``).

Private parts touched: ``_otf2.Config.lib_path`` (where the bundled library is) and the
reader handle of ``otf2.reader.Reader``; pyproject pins ``otf2>=3.2,<3.3`` and
``tests/test_otf2_read.py`` compares this reader with the public one event by event.
"""

from __future__ import annotations

import ctypes
import os
from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scorep_kernel import experiment as ex


class TraceReadError(Exception):
    """An OTF2 archive that cannot be read; the message says why and what to do."""


@dataclass
class LocationEvents:
    ref: int
    times: np.ndarray  # int64, as recorded (not yet relative to the global offset)
    signed_regions: np.ndarray  # int64: region ref for Enter, ~region (negative) for Leave
    metric_times: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    metric_members: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    metric_values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))


@dataclass
class Definitions:
    timer_resolution: int
    global_offset: int
    trace_length: int
    realtime_timestamp: int | None  # ns since the epoch at global_offset, when recorded
    regions: dict[int, dict[str, Any]]
    locations: list[dict[str, Any]]  # [{ref, name, group, kind, events}]
    metric_members: dict[int, dict[str, Any]]  # member ref -> {name, unit, description}
    metric_classes: dict[int, list[int]]  # metric class/instance ref -> member refs


_VP = ctypes.c_void_p
_U64 = ctypes.c_uint64
# OTF2_EvtReaderCallback_Enter/Leave(location, time, eventPosition, userData, attributes, region)
_ENTER_LEAVE = ctypes.CFUNCTYPE(ctypes.c_int, _U64, _U64, _U64, _VP, _VP, ctypes.c_uint32)
# OTF2_EvtReaderCallback_Metric(..., metric, numberOfMetrics, typeIDs, metricValues)
_METRIC = ctypes.CFUNCTYPE(
    ctypes.c_int,
    _U64,
    _U64,
    _U64,
    _VP,
    _VP,
    ctypes.c_uint32,
    ctypes.c_uint8,
    ctypes.POINTER(ctypes.c_uint8),
    ctypes.POINTER(ctypes.c_uint64),
)
_lib = None


def _library():
    """Our own handle on the bundled libotf2, with argtypes set once for the calls we make
    per location (the ``_otf2`` wrappers re-declare them on every call)."""
    global _lib
    if _lib is None:
        import _otf2  # type: ignore[import-untyped]  # the otf2 package has no types

        lib = ctypes.PyDLL(_otf2.Config.lib_path())
        lib.OTF2_EvtReaderCallbacks_New.restype = _VP
        lib.OTF2_EvtReaderCallbacks_New.argtypes = []
        lib.OTF2_EvtReaderCallbacks_Delete.argtypes = [_VP]
        lib.OTF2_EvtReaderCallbacks_SetEnterCallback.argtypes = [_VP, _ENTER_LEAVE]
        lib.OTF2_EvtReaderCallbacks_SetLeaveCallback.argtypes = [_VP, _ENTER_LEAVE]
        lib.OTF2_EvtReaderCallbacks_SetMetricCallback.argtypes = [_VP, _METRIC]
        lib.OTF2_Reader_RegisterEvtCallbacks.argtypes = [_VP, _VP, _VP, _VP]
        lib.OTF2_Reader_ReadAllLocalEvents.argtypes = [_VP, _VP, ctypes.POINTER(_U64)]
        lib.OTF2_Reader_GetEvtReader.argtypes = [_VP, _U64]
        lib.OTF2_Reader_GetEvtReader.restype = _VP
        lib.OTF2_Reader_CloseEvtReader.argtypes = [_VP, _VP]
        lib.OTF2_Error_GetDescription.argtypes = [ctypes.c_int]
        lib.OTF2_Error_GetDescription.restype = ctypes.c_char_p
        _lib = lib
    return _lib


def _error_text(code: int) -> str:
    text = _library().OTF2_Error_GetDescription(code)
    return text.decode("utf-8", "replace") if text else f"error code {code}"


def _enum_name(value: Any) -> str:
    return str(value).rsplit(".", 1)[-1].lower()


def _region_info(region: Any, group: str | None) -> dict[str, Any]:
    name = region.name or ""
    paradigm, role = _enum_name(region.paradigm), _enum_name(region.region_role)
    if group is None:
        # Regions are named "module:function" (the contract's naming rule); the module is
        # the group. Names from other tools fall back to the source file.
        group = ex.region_module(name) or region.source_file or ""
    return {
        "name": name,
        "group": group,
        "file": region.source_file or "",
        "line": int(region.begin_line_number or 0),
        "role": ex.decode_region_role(region.description, role),
        "otf2_role": role,
        "paradigm": paradigm,
    }


def _region_groups(defs: Any) -> dict[int, str]:
    """Region -> name of its REGIONS group (Score-P's region group: the module)."""
    out: dict[int, str] = {}
    for group in getattr(defs, "groups", ()):
        if _enum_name(getattr(group, "group_type", "")) != "regions":
            continue
        for member in getattr(group, "members", ()):
            out.setdefault(id(member), group.name)
    return out


def read_definitions(trace: Any) -> Definitions:
    """Definitions from an open ``otf2.reader.Reader`` (public API only)."""
    defs = trace.definitions
    clock = defs.clock_properties
    groups = _region_groups(defs)
    regions = {i: _region_info(r, groups.get(id(r))) for i, r in enumerate(defs.regions)}
    locations = []
    for i, loc in enumerate(defs.locations):
        group = loc.group
        locations.append(
            {
                "ref": i,
                "name": loc.name or f"Location {i}",
                "group": getattr(group, "name", "") or "",
                "kind": {"cpu_thread": "thread", "gpu": "gpu", "metric": "metric"}.get(
                    _enum_name(loc.type), _enum_name(loc.type)
                ),
                "events": int(loc.number_of_events or 0),
            }
        )
    members = {
        i: {"name": m.name, "unit": m.unit or "", "description": m.description or ""}
        for i, m in enumerate(defs.metric_members)
    }
    member_index = {id(m): i for i, m in enumerate(defs.metric_members)}
    classes: dict[int, list[int]] = {}
    for i, metric in enumerate(defs.metrics):
        cls = getattr(metric, "metric_class", metric)  # MetricInstance -> its class
        classes[i] = [member_index.get(id(m), -1) for m in getattr(cls, "members", ())]
    realtime = clock.realtime_timestamp
    return Definitions(
        timer_resolution=int(clock.timer_resolution),
        global_offset=int(clock.global_offset),
        trace_length=int(clock.trace_length),
        realtime_timestamp=None if realtime >= 2**64 - 1 else int(realtime),
        regions=regions,
        locations=locations,
        metric_members=members,
        metric_classes=classes,
    )


def _check_anchor(anchor: str) -> None:
    base = anchor[: -len(".otf2")] if anchor.endswith(".otf2") else anchor
    for path in (anchor, base + ".def"):
        if not os.path.isfile(path):
            raise TraceReadError(
                f"the OTF2 archive is incomplete: {os.path.basename(path)} is missing. "
                "Re-run the cell to record it again."
            )


def read_trace(anchor: str) -> tuple[Definitions, list[LocationEvents]]:
    """Definitions and all Enter/Leave/Metric events of the archive at ``anchor``."""
    import _otf2
    import otf2

    _check_anchor(anchor)
    try:
        trace = otf2.reader.Reader(anchor)
    except Exception as e:  # _otf2.Error, TraceReaderError, ValueError from bad strings ...
        raise TraceReadError(
            f"libotf2 cannot open this archive ({type(e).__name__}: {e or 'no details'}); "
            "it is truncated, damaged or not OTF2."
        ) from None
    try:
        definitions = read_definitions(trace)
        handle = trace.handle
        for loc in trace.definitions.locations:
            _otf2.Reader_SelectLocation(handle, loc._ref)
        try:
            _otf2.Reader_OpenDefFiles(handle)
            def_files = True
        except _otf2.Error:
            def_files = False
        try:
            _otf2.Reader_OpenEvtFiles(handle)
        except _otf2.Error as e:
            raise TraceReadError(f"cannot open the event files: {e}") from None
        if def_files:
            # Local definitions carry the id mappings of each location; read them first.
            for loc in trace.definitions.locations:
                def_reader = _otf2.Reader_GetDefReader(handle, loc._ref)
                if def_reader:
                    try:
                        _otf2.Reader_ReadAllLocalDefinitions(handle, def_reader)
                    finally:
                        _otf2.Reader_CloseDefReader(handle, def_reader)
            _otf2.Reader_CloseDefFiles(handle)
        raw = ctypes.cast(handle, _VP)
        events = [
            _read_location(raw, loc._ref, info["events"], definitions.metric_classes)
            for loc, info in zip(trace.definitions.locations, definitions.locations)
        ]
        _otf2.Reader_CloseEvtFiles(handle)
    except TraceReadError:
        raise
    except Exception as e:
        raise TraceReadError(
            f"libotf2 failed while reading this archive ({type(e).__name__}: {e}); "
            "it is truncated or damaged."
        ) from None
    finally:
        trace.close()
    return definitions, events


def _read_location(
    reader: ctypes.c_void_p, ref: int, expected: int, metric_classes: dict[int, list[int]]
) -> LocationEvents:
    lib = _library()
    times, regions = array("q"), array("q")
    m_times, m_members, m_values = array("q"), array("i"), array("d")
    t_add, r_add = times.append, regions.append

    def on_enter(_loc, t, _pos, _ud, _attrs, region):
        t_add(t)
        r_add(region)
        return 0

    def on_leave(_loc, t, _pos, _ud, _attrs, region):
        t_add(t)
        r_add(~region)
        return 0

    def on_metric(_loc, t, _pos, _ud, _attrs, metric, n, types, values):
        # Metric events are rare (samples, not calls): decode each value by its type.
        for i in range(n):
            raw = values[i]
            kind = types[i]
            if kind == 10:  # OTF2_TYPE_DOUBLE
                value = ctypes.c_double.from_buffer(ctypes.c_uint64(raw)).value
            elif kind == 8:  # OTF2_TYPE_INT64
                value = float(ctypes.c_int64(raw).value)
            else:
                value = float(raw)
            members = metric_classes.get(metric, ())
            m_times.append(t)
            m_members.append(members[i] if i < len(members) else -1)
            m_values.append(value)
        return 0

    callbacks = (_ENTER_LEAVE(on_enter), _ENTER_LEAVE(on_leave), _METRIC(on_metric))
    evt_reader = lib.OTF2_Reader_GetEvtReader(reader, ref)
    if not evt_reader:
        raise TraceReadError(f"no event reader for location {ref}: its event file is missing")
    cbs = lib.OTF2_EvtReaderCallbacks_New()
    try:
        lib.OTF2_EvtReaderCallbacks_SetEnterCallback(cbs, callbacks[0])
        lib.OTF2_EvtReaderCallbacks_SetLeaveCallback(cbs, callbacks[1])
        lib.OTF2_EvtReaderCallbacks_SetMetricCallback(cbs, callbacks[2])
        lib.OTF2_Reader_RegisterEvtCallbacks(reader, evt_reader, cbs, None)
        count = _U64()
        code = lib.OTF2_Reader_ReadAllLocalEvents(reader, evt_reader, ctypes.byref(count))
    finally:
        lib.OTF2_EvtReaderCallbacks_Delete(cbs)
        lib.OTF2_Reader_CloseEvtReader(reader, evt_reader)
    if code != 0:
        raise TraceReadError(
            f"the events of location {ref} end early after {len(times):,} of "
            f"{expected:,} events ({_error_text(code)}): the trace is truncated or damaged."
        )
    return LocationEvents(
        ref=ref,
        # frombuffer keeps the array('q') alive and shares its memory: no copy
        times=np.frombuffer(times, np.int64) if times else np.zeros(0, np.int64),
        signed_regions=np.frombuffer(regions, np.int64) if regions else np.zeros(0, np.int64),
        metric_times=np.asarray(m_times, np.int64),
        metric_members=np.asarray(m_members, np.int32),
        metric_values=np.asarray(m_values, np.float64),
    )
