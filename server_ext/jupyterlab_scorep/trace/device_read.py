"""The accelerator records of an OTF2 archive: launch links and copies.

Score-P's CUDA adapter, and the builtin writer after it (``scorep_kernel.formats.
otf2_devices``), write a kernel's link to the call that launched it as the parameter
"callsite id" (ParameterUnsignedInt) right after the Enter of both, and a copy as an
RmaGet (to the device: the remote is the host, rank 0 of the window's communicator; a
device-to-device copy names the stream itself) or RmaPut (to the host) of its bytes,
completed by an RmaOpCompleteBlocking at its end. ``read_device_records`` reads only
these (libotf2 steps over everything else without calling back into Python) through
per-location readers, as ``mpi_read`` does.

Times are the trace's ticks; the index turns them into ns with its ``origin_ticks``.
Run it in the parse worker: libotf2 may crash on a damaged file.
"""

from __future__ import annotations

import ctypes
from typing import Any, TypedDict

from .otf2_read import TraceReadError, _check_anchor, _library, open_event_files, read_local_events

_U32, _U64, _VP = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p
# OTF2_EvtReaderCallback_ParameterUnsignedInt(location, time, pos, userData, attributes,
#                                              parameter, value)
_PARAM = ctypes.CFUNCTYPE(ctypes.c_int, _U64, _U64, _U64, _VP, _VP, _U32, _U64)
# OTF2_EvtReaderCallback_RmaGet/RmaPut(..., win, remote, bytes, matchingId)
_RMA = ctypes.CFUNCTYPE(ctypes.c_int, _U64, _U64, _U64, _VP, _VP, _U32, _U32, _U64, _U64)
# OTF2_EvtReaderCallback_RmaOpCompleteBlocking(..., win, matchingId)
_RMA_DONE = ctypes.CFUNCTYPE(ctypes.c_int, _U64, _U64, _U64, _VP, _VP, _U32, _U64)
CALLSITE_PARAMETER = "callsite id"
_bound = False


class Copy(TypedDict):
    start: int  # ticks
    end: int  # ticks (the start when no completion was recorded)
    bytes: int
    direction: str  # "HtoD" | "DtoH" | "DtoD"


class LocationRecords(TypedDict):
    callsite_times: list[int]  # ticks of the parameter (= the Enter it follows)
    callsite_ids: list[int]
    copies: list[Copy]


class DeviceRecords(TypedDict):
    locations: dict[int, LocationRecords]  # location ref -> its records (only those with some)
    host_rank_location: int | None  # the location of rank 0 in the copy window's comm


def _bind() -> Any:
    global _bound
    lib = _library()
    if not _bound:
        lib.OTF2_EvtReaderCallbacks_SetParameterUnsignedIntCallback.argtypes = [_VP, _PARAM]
        lib.OTF2_EvtReaderCallbacks_SetRmaGetCallback.argtypes = [_VP, _RMA]
        lib.OTF2_EvtReaderCallbacks_SetRmaPutCallback.argtypes = [_VP, _RMA]
        lib.OTF2_EvtReaderCallbacks_SetRmaOpCompleteBlockingCallback.argtypes = [_VP, _RMA_DONE]
        _bound = True
    return lib


def read_device_records(anchor: str) -> DeviceRecords:
    """The launch links and copies of the archive at ``anchor`` (see the module docstring)."""
    import _otf2  # type: ignore[import-untyped]  # the otf2 package has no types
    import otf2

    _check_anchor(anchor)
    try:
        trace = otf2.reader.Reader(anchor)
    except Exception as e:
        raise TraceReadError(
            f"libotf2 cannot open this archive ({type(e).__name__}: {e})"
        ) from None
    out: DeviceRecords = {"locations": {}, "host_rank_location": None}
    try:
        defs = trace.definitions
        callsite = {p._ref for p in defs.parameters if p.name == CALLSITE_PARAMETER}
        windows = list(defs.rma_wins)
        has_gpu = any(
            str(loc.type).rsplit(".", 1)[-1] in ("GPU", "ACCELERATOR_STREAM")
            for loc in defs.locations
        )
        if not callsite and not windows and not has_gpu:
            return out
        # rank r of a window's communicator -> location ref
        rank_location: dict[int, dict[int, int]] = {}
        for w in windows:
            members = list(getattr(getattr(w.comm, "group", None), "members", ()) or ())
            rank_location[w._ref] = {i: m._ref for i, m in enumerate(members)}
        if windows and rank_location.get(windows[0]._ref):
            out["host_rank_location"] = rank_location[windows[0]._ref].get(0)
        handle = trace.handle
        raw = open_event_files(trace, anchor=anchor)
        _bind()
        for loc in defs.locations:
            times: list[int] = []
            ids: list[int] = []
            copies: list[Copy] = []
            me = loc._ref

            def on_param(_l, t, _p, _u, _a, parameter, value, times=times, ids=ids):
                if parameter in callsite:
                    times.append(t)
                    ids.append(value)
                return 0

            def on_get(_l, t, _p, _u, _a, win, remote, nbytes, _m, copies=copies, me=me):
                peer = rank_location.get(win, {}).get(remote)
                direction = "DtoD" if peer == me else "HtoD"
                copies.append({"start": t, "end": t, "bytes": int(nbytes), "direction": direction})
                return 0

            def on_put(_l, t, _p, _u, _a, _win, _remote, nbytes, _m, copies=copies):
                copies.append({"start": t, "end": t, "bytes": int(nbytes), "direction": "DtoH"})
                return 0

            def on_done(_l, t, _p, _u, _a, _win, _m, copies=copies):
                for c in reversed(copies):
                    if c["end"] == c["start"]:
                        c["end"] = t
                        break
                return 0

            callbacks = {
                "ParameterUnsignedInt": _PARAM(on_param),
                "RmaGet": _RMA(on_get),
                "RmaPut": _RMA(on_put),
                "RmaOpCompleteBlocking": _RMA_DONE(on_done),
            }
            code = read_local_events(raw, loc._ref, callbacks)
            if code not in (None, 0):
                raise TraceReadError(
                    f"the events of location {loc._ref} cannot be read (code {code})"
                )
            if times or copies:
                out["locations"][loc._ref] = {
                    "callsite_times": times,
                    "callsite_ids": ids,
                    "copies": copies,
                }
        _otf2.Reader_CloseEvtFiles(handle)
    finally:
        trace.close()
    return out
