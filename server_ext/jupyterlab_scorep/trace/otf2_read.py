"""Read an OTF2 archive fast: definitions and events through C callbacks registered
directly on the ``otf2`` package's bundled libotf2 (the definitions by otf2_global_defs,
turned into ``Definitions`` by ``otf2_definitions.definitions_of``; the package's own
reader, an object per definition, took 0.25 s of a 1,024-rank archive's 0.55 s read).

The public event iterator builds a Python object per event (~180k events/s here). This
module registers ctypes CFUNCTYPE callbacks for Enter, Leave and Metric on one local event
reader per location, and each callback only appends to ``array('q')``, which reaches
~2M events/s on this machine. Per-location readers (rather than the global reader) hand us
each location's events already separated, so there is no k-way merge and no split pass.

Score-P's traces hold more records; those that change what is drawn are read too (rare,
so their cost does not matter):

- BufferFlush (Score-P ran out of its trace buffer and wrote it to disk) becomes a call of
  its artificial region "TRACE BUFFER FLUSH" from the record's time to its stop time, where
  Score-P's own profile puts it (a sibling before the call whose Enter set off the flush);
  events stamped before the flush ended are moved to its end, so calls never overlap it.
- MeasurementOnOff (``scorep.user.disable_recording()`` ... ``enable_recording()``)
  becomes a call of the artificial region "MEASUREMENT OFF" while recording was off, as in
  Score-P's profile.
- ProgramBegin marks a trace of a whole process (Score-P's): its clock starts when the
  process started, not when the cell did (see index_build).

Before any callback, every location is offered to the fast paths (``otf2_fast``): the
native scanner (otf2_scan, ~100M events/s) reads Score-P's archives and the builtin
writer's alike, applying each location's local definitions (id mappings, clock offsets:
``open_location_files`` collects them), and where it is not built the numpy decoder
(otf2_decode) reads the builtin writer's files. The callbacks here read what those leave
(a damaged file, a record they cannot read exactly; the reason is logged), and every
location when ``decoder="callbacks"``.

THREAD_BEGIN/END, PROGRAM_END, THREAD_CREATE/WAIT and attribute lists change nothing
drawn and are skipped (no callback: libotf2 steps over them).

The library is loaded as a ``ctypes.PyDLL`` so the GIL stays held while libotf2 calls back
into Python (no acquire/release per event). Run this in a worker process, not on the
server's event-loop thread (see ``worker``).

Private parts touched: ``_otf2.Config.lib_path`` (where the bundled library is),
``_otf2.Reader_Open`` and the reader handle of ``otf2.reader.Reader``; pyproject pins ``otf2>=3.2,<3.3`` and
``tests/trace/test_otf2_read.py`` compares this reader with the public one event by event.
"""

from __future__ import annotations

import ctypes
import os
from array import array
from collections.abc import Callable
from typing import Any

import numpy as np

from .otf2_definitions import Definitions, definitions_of, rename_locations, thread_names_of
from .otf2_events import Decoder, LocationEvents, with_artificial_calls
from .otf2_global_defs import read_global_records
from .otf2_scan import LocalDefinitions, MetricTables


class _Raised(Exception):
    """What ``read_trace``'s ``each`` raised, carried past its libotf2 error wrapping."""

    def __init__(self, error: Exception):
        super().__init__(error)
        self.error = error


class TraceReadError(Exception):
    """An OTF2 archive that cannot be read; the message says why and what to do."""


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
# OTF2_EvtReaderCallback_BufferFlush(..., OTF2_TimeStamp stopTime)
_BUFFER_FLUSH = ctypes.CFUNCTYPE(ctypes.c_int, _U64, _U64, _U64, _VP, _VP, _U64)
# OTF2_EvtReaderCallback_MeasurementOnOff(..., OTF2_MeasurementMode measurementMode)
_ON_OFF = ctypes.CFUNCTYPE(ctypes.c_int, _U64, _U64, _U64, _VP, _VP, ctypes.c_uint8)
# OTF2_EvtReaderCallback_ProgramBegin(..., programName, numberOfArguments, programArguments)
_PROGRAM_BEGIN = ctypes.CFUNCTYPE(
    ctypes.c_int, _U64, _U64, _U64, _VP, _VP, ctypes.c_uint32, ctypes.c_uint32, _VP
)
MEASUREMENT_OFF = 2  # OTF2_MEASUREMENT_OFF (ON is 1)
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
        lib.OTF2_EvtReaderCallbacks_SetBufferFlushCallback.argtypes = [_VP, _BUFFER_FLUSH]
        lib.OTF2_EvtReaderCallbacks_SetMeasurementOnOffCallback.argtypes = [_VP, _ON_OFF]
        lib.OTF2_EvtReaderCallbacks_SetProgramBeginCallback.argtypes = [_VP, _PROGRAM_BEGIN]
        lib.OTF2_Reader_RegisterEvtCallbacks.argtypes = [_VP, _VP, _VP, _VP]
        lib.OTF2_Reader_ReadAllLocalEvents.argtypes = [_VP, _VP, ctypes.POINTER(_U64)]
        lib.OTF2_Reader_GetEvtReader.argtypes = [_VP, _U64]
        lib.OTF2_Reader_GetEvtReader.restype = _VP
        lib.OTF2_Reader_CloseEvtReader.argtypes = [_VP, _VP]
        lib.OTF2_Error_GetDescription.argtypes = [ctypes.c_int]
        lib.OTF2_Error_GetDescription.restype = ctypes.c_char_p
        _lib = lib
    return _lib


def read_local_events(reader: ctypes.c_void_p, ref: int, callbacks: dict[str, Any]) -> int | None:
    """Read location ``ref``'s events through ``callbacks`` ({"Enter": CFUNCTYPE object,
    ...}: OTF2_EvtReaderCallbacks_Set<name>Callback each); libotf2's return code. None
    when the location has no event reader (its event file is missing). The caller keeps
    the callback objects alive until this returns."""
    lib = _library()
    evt_reader = lib.OTF2_Reader_GetEvtReader(reader, ref)
    if not evt_reader:
        return None
    cbs = lib.OTF2_EvtReaderCallbacks_New()
    try:
        for name, callback in callbacks.items():
            getattr(lib, f"OTF2_EvtReaderCallbacks_Set{name}Callback")(cbs, callback)
        lib.OTF2_Reader_RegisterEvtCallbacks(reader, evt_reader, cbs, None)
        count = _U64()
        return int(lib.OTF2_Reader_ReadAllLocalEvents(reader, evt_reader, ctypes.byref(count)))
    finally:
        lib.OTF2_EvtReaderCallbacks_Delete(cbs)
        lib.OTF2_Reader_CloseEvtReader(reader, evt_reader)


def _error_text(code: int) -> str:
    text = _library().OTF2_Error_GetDescription(code)
    return text.decode("utf-8", "replace") if text else f"error code {code}"


def _check_anchor(anchor: str) -> None:
    base = anchor[: -len(".otf2")] if anchor.endswith(".otf2") else anchor
    for path in (anchor, base + ".def"):
        if not os.path.isfile(path):
            raise TraceReadError(
                f"the OTF2 archive is incomplete: {os.path.basename(path)} is missing. "
                "Re-run the cell to record it again."
            )


def read_trace(
    anchor: str,
    decoder: Decoder = "auto",
    each: Callable[[LocationEvents], LocationEvents] | None = None,
) -> tuple[Definitions, list[LocationEvents]]:
    """Definitions and all Enter/Leave/Metric events of the archive at ``anchor``.
    ``decoder`` chooses how event files the fast paths can read are read: "auto" (the
    native scanner where built, else numpy), "numpy", or "callbacks" (every location
    through libotf2's callbacks); the benchmarks and tests compare them. ``each``: called
    with each location's events as soon as they are read, its answer kept in their place
    (the index build pairs a location's calls and lets its events go: the next location's
    read reuses their memory); what it raises passes as it is."""
    import _otf2

    from .otf2_fast import fast_location

    _check_anchor(anchor)
    try:
        handle = _otf2.Reader_Open(anchor)
    except Exception as e:  # _otf2.Error, ValueError from bad strings ...
        raise _unopenable(e) from None
    try:
        try:
            _otf2.Reader_SetSerialCollectiveCallbacks(handle)
            records = read_global_records(handle)
            definitions = definitions_of(records)
        except Exception as e:
            raise _unopenable(e) from None
        rename_locations(definitions, thread_names_of(anchor))
        refs = [loc[0] for loc in records.locations]
        local: dict[int, Any] = {}
        raw = open_location_files(handle, refs, local if decoder != "callbacks" else None, anchor)
        chunk_size = int(_otf2.Reader_GetChunkSize(handle)[0])
        metrics = MetricTables.of(definitions)
        events = []
        for ref, info in zip(refs, definitions.locations):
            got = (
                fast_location(
                    anchor, ref, chunk_size, decoder, definitions, local.get(ref), metrics
                )
                if decoder != "callbacks"
                else None
            ) or _read_location(raw, ref, info["events"], definitions)
            if each is not None:
                try:
                    got = each(got)
                except Exception as e:
                    raise _Raised(e) from e
            events.append(got)
        _otf2.Reader_CloseEvtFiles(handle)
    except TraceReadError:
        raise
    except _Raised as e:
        raise e.error from None
    except Exception as e:
        raise TraceReadError(
            f"libotf2 failed while reading this archive ({type(e).__name__}: {e}); "
            "it is truncated or damaged."
        ) from None
    finally:
        _otf2.Reader_Close(handle)
    return definitions, events


def _unopenable(e: Exception) -> TraceReadError:
    return TraceReadError(
        f"libotf2 cannot open this archive ({type(e).__name__}: {e or 'no details'}); "
        "it is truncated, damaged or not OTF2."
    )


def open_event_files(
    trace: Any, local: dict[int, Any] | None = None, anchor: str | None = None
) -> ctypes.c_void_p:
    """``open_location_files`` of an open ``otf2.reader.Reader``'s locations."""
    refs = [loc._ref for loc in trace.definitions.locations]
    return open_location_files(trace.handle, refs, local, anchor)


def open_location_files(
    handle: Any, refs: list[int], local: dict[int, Any] | None = None, anchor: str | None = None
) -> ctypes.c_void_p:
    """Every location ``refs`` of an open reader ``handle`` selected, its local definitions
    read (they carry each location's id mappings and clock offsets) and its event files
    opened; the raw reader handle for ``read_local_events``. Close with
    ``_otf2.Reader_CloseEvtFiles``. With ``local``, each location's mappings and offsets
    go into it as ``otf2_scan.LocalDefinitions`` (or a string: why the native scanner
    cannot apply them), by location ref (otf2_local_defs).

    With the archive's ``anchor``, a location whose local definitions file holds no
    record (the builtin writer's) is not handed to libotf2's definition reader: there is
    nothing to apply, and opening one cost ~0.35 ms a location (a 4 MiB chunk buffer),
    0.35 s of a 1,024-rank read."""
    import _otf2

    from .otf2_local_defs import LocalDefsReader, has_no_records

    base = os.path.splitext(anchor)[0] if anchor else None
    for ref in refs:
        _otf2.Reader_SelectLocation(handle, ref)
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
        for ref in refs:
            if base is not None and has_no_records(os.path.join(base, f"{ref}.def")):
                if local is not None:
                    local[ref] = LocalDefinitions()
                continue
            def_reader = _otf2.Reader_GetDefReader(handle, ref)
            if def_reader:
                collect = LocalDefsReader() if local is not None else None
                try:
                    if collect is not None and collect.register(handle, def_reader) != 0:
                        collect.refused = "libotf2 refused the definition callbacks"
                    _otf2.Reader_ReadAllLocalDefinitions(handle, def_reader)
                finally:
                    _otf2.Reader_CloseDefReader(handle, def_reader)
                if local is not None and collect is not None:
                    local[ref] = collect.refused or collect.result()
        _otf2.Reader_CloseDefFiles(handle)
    elif local is not None:
        local.update({ref: "the local definitions cannot be opened" for ref in refs})
    return ctypes.cast(handle, _VP)


def _read_location(
    reader: ctypes.c_void_p, ref: int, expected: int, defs: Definitions
) -> LocationEvents:
    metric_classes = defs.metric_classes
    scales = {ref: m["scale"] for ref, m in defs.metric_members.items() if m["scale"] != 1.0}
    times, regions = array("q"), array("q")
    m_times, m_members, m_values = array("q"), array("i"), array("d")
    t_add, r_add = times.append, regions.append
    # (position in the Enter/Leave stream, time, stop time) of each flush; (position, time,
    # off?) of each on/off switch; the ProgramBegin's time
    flushes: list[tuple[int, int, int]] = []
    switches: list[tuple[int, int, bool]] = []
    program: list[int] = []

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
            member = members[i] if i < len(members) else -1
            m_times.append(t)
            m_members.append(member)
            m_values.append(value * scales.get(member, 1.0))
        return 0

    def on_flush(_loc, t, _pos, _ud, _attrs, stop):
        flushes.append((len(times), t, stop))
        return 0

    def on_switch(_loc, t, _pos, _ud, _attrs, mode):
        switches.append((len(times), t, mode == MEASUREMENT_OFF))
        return 0

    def on_program(_loc, t, _pos, _ud, _attrs, _name, _n, _args):
        program.append(t)
        return 0

    callbacks = (
        _ENTER_LEAVE(on_enter),
        _ENTER_LEAVE(on_leave),
        _METRIC(on_metric),
        _BUFFER_FLUSH(on_flush),
        _ON_OFF(on_switch),
        _PROGRAM_BEGIN(on_program),
    )
    names = ("Enter", "Leave", "Metric", "BufferFlush", "MeasurementOnOff", "ProgramBegin")
    code = read_local_events(reader, ref, dict(zip(names, callbacks)))
    if code is None:
        raise TraceReadError(f"no event reader for location {ref}: its event file is missing")
    if code != 0:
        raise TraceReadError(
            f"the events of location {ref} end early after {len(times):,} of "
            f"{expected:,} events ({_error_text(code)}): the trace is truncated or damaged."
        )
    # frombuffer keeps the array('q') alive and shares its memory: no copy
    t = np.frombuffer(times, np.int64) if times else np.zeros(0, np.int64)
    r = np.frombuffer(regions, np.int64) if regions else np.zeros(0, np.int64)
    t, r, synthetic = with_artificial_calls(t, r, flushes, switches, defs)
    return LocationEvents(
        ref=ref,
        times=t,
        signed_regions=r,
        metric_times=np.asarray(m_times, np.int64),
        metric_members=np.asarray(m_members, np.int32),
        metric_values=np.asarray(m_values, np.float64),
        program_begin=program[0] if program else None,
        synthetic=synthetic,
    )
