"""Event writing straight into the libotf2 that the ``otf2`` package bundles.

The package's ``EventWriter.enter`` builds an event object, re-declares ctypes argtypes
and updates Python bookkeeping on every call (~170k events/s). Here each C function is
bound once, through ``ctypes.PyDLL`` (the call keeps the GIL instead of releasing and
re-taking it around a sub-microsecond C call), and a whole thread's events go through
``map`` so that no Python bytecode runs per event. Still ~0.5 us of ctypes argument
conversion per call: ~1.5M events/s on an idle core, half that on a busy one; the "fast"
engine encodes event files with numpy instead (``_otf2_encode``) and uses this path for
metric events and for what the encoder does not cover.

Private parts of ``otf2`` 3.2 used here (pinned ``otf2>=3.2,<3.3``; the engine test in
kernel/tests/test_otf2_writer_engines.py compares this path with the public one):

- ``_otf2.Config.lib_path()``: where the bundled libotf2 lives;
- ``otf2.writer.Writer._write_global_definitions`` (overridden in otf2_writer.py to write
  Score-P's clock properties) and ``otf2.definition_writer.DefinitionWriter``;
- ``otf2.definitions.Location._number_of_events_written`` (the event count the writer puts
  into the location definition).

``EventWriter.handle`` (the C ``OTF2_EvtWriter*``) is public API.
"""

from __future__ import annotations

import ctypes
import itertools
import sys

import numpy as np
from _otf2.Config import lib_path  # type: ignore[import-untyped]  # the otf2 package has no types

if sys.version_info >= (3, 11):
    from operator import call as _call
else:  # operator.call is new in 3.11; the package supports 3.10

    def _call(fn, *args):
        return fn(*args)


_lib = ctypes.PyDLL(lib_path())

_c_int = ctypes.c_int
_ptr = ctypes.c_void_p


def _bind(name: str, *argtypes):
    fn = getattr(_lib, name)
    fn.argtypes = list(argtypes)
    fn.restype = _c_int  # OTF2_ErrorCode; 0 is OTF2_SUCCESS
    return fn


# OTF2_EvtWriter_Enter(OTF2_EvtWriter*, OTF2_AttributeList*, OTF2_TimeStamp, OTF2_RegionRef)
_enter = _bind("OTF2_EvtWriter_Enter", _ptr, _ptr, ctypes.c_uint64, ctypes.c_uint32)
_leave = _bind("OTF2_EvtWriter_Leave", _ptr, _ptr, ctypes.c_uint64, ctypes.c_uint32)
# OTF2_EvtWriter_Metric(writer, attributes, time, OTF2_MetricRef, uint8_t n,
#                       const OTF2_Type* typeIDs, const OTF2_MetricValue* values)
_metric = _bind(
    "OTF2_EvtWriter_Metric",
    _ptr,
    _ptr,
    ctypes.c_uint64,
    ctypes.c_uint32,
    ctypes.c_uint8,
    _ptr,
    _ptr,
)
_error_name = _lib.OTF2_Error_GetName
_error_name.argtypes = [_c_int]
_error_name.restype = ctypes.c_char_p

OTF2_TYPE_DOUBLE = 10  # OTF2_TYPE_DOUBLE in OTF2 3.0's OTF2_GeneralDefinitions.h
MAX_METRIC_MEMBERS = 255  # numberOfMetrics is a uint8_t


class Otf2WriteError(RuntimeError):
    pass


def _check(codes, what: str) -> None:
    if any(codes):
        code = next(c for c in codes if c)
        name = _error_name(code)
        raise Otf2WriteError(
            f"libotf2 failed while writing {what}: "
            f"{name.decode() if name else 'error ' + str(code)}"
        )


def handle_address(event_writer) -> int:
    """The ``OTF2_EvtWriter*`` of an ``otf2.event_writer.EventWriter`` as an int."""
    address = ctypes.cast(event_writer.handle, ctypes.c_void_p).value
    if address is None:
        raise Otf2WriteError("the event writer is closed (its handle is NULL)")
    return address


def write_enter_leave(writer_addr: int, times, region_refs, kinds, what: str) -> None:
    """Write one location's enters and leaves: ``times`` uint64-compatible epoch ns,
    ``region_refs`` OTF2 region refs, ``kinds`` 1 enter / 0 leave (numpy arrays)."""
    n = len(times)
    if not n:
        return
    functions = list(map((_leave, _enter).__getitem__, (np.asarray(kinds) != 0).tolist()))
    codes = list(
        map(
            _call,
            functions,
            itertools.repeat(writer_addr, n),
            itertools.repeat(None, n),
            np.asarray(times, dtype=np.int64).tolist(),
            np.asarray(region_refs, dtype=np.int64).tolist(),
        )
    )
    _check(codes, what)


def write_enter_leave_as(writer_addr: int, what: str, times, region_refs, kinds) -> None:
    """``write_enter_leave`` with the arguments in the order a partial binds them."""
    write_enter_leave(writer_addr, times, region_refs, kinds, what)


def write_metrics(writer_addr: int, times, metric_ref: int, values: np.ndarray, what: str):
    """One metric event per row of ``values`` (float64 [n, k], k <= 255) for one metric
    class whose members are all DOUBLE."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    n, k = values.shape
    if not n or not k:
        return
    if k > MAX_METRIC_MEMBERS:
        raise ValueError(f"a metric class holds at most {MAX_METRIC_MEMBERS} members, not {k}")
    type_ids = np.full(k, OTF2_TYPE_DOUBLE, dtype=np.uint8)
    types_addr = type_ids.ctypes.data
    row_addrs = (values.ctypes.data + values.strides[0] * np.arange(n)).tolist()
    codes = list(
        map(
            _call,
            itertools.repeat(_metric, n),
            itertools.repeat(writer_addr, n),
            itertools.repeat(None, n),
            np.asarray(times, dtype=np.int64).tolist(),
            itertools.repeat(metric_ref, n),
            itertools.repeat(k, n),
            itertools.repeat(types_addr, n),
            row_addrs,
        )
    )
    # type_ids and values must live until here: the C calls read them.
    del type_ids
    _check(codes, what)
