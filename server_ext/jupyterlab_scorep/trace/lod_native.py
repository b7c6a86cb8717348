"""The levels' merge in C (server_ext/native/lod_merge.c, built into the scanner's library):
``lod.merge``'s pixel groups and joins in two passes instead of numpy's dozen, with
numpy's results (the C file says how). None where the library lacks it (not built, or
built before it): ``lod`` then merges with numpy."""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

import numpy as np

from . import otf2_scan

EXACT = -(2**31)  # lod_merge.c's LOD_EXACT: the group's dominant region is to be summed
_I64, _D, _P = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p


@dataclass(frozen=True)
class Groups:
    """Per pixel group of a level's items: its first item, largest end, summed count,
    dominant region (EXACT: to be found by summing) and whether its first item is narrow."""

    first: np.ndarray  # int64
    end: np.ndarray  # int64
    count: np.ndarray  # int64
    region: np.ndarray  # int32
    narrow: np.ndarray  # bool


@functools.cache
def _library() -> ctypes.CDLL | None:
    lib = otf2_scan._library()
    if lib is None or not hasattr(lib, "lod_groups"):
        return None
    lib.lod_groups.restype = _I64
    lib.lod_groups.argtypes = [_P, _P, _P, _P, _P, _I64, _D, _I64, _P, _P, _P, _P, _P, _P]
    lib.lod_join.restype = _I64
    lib.lod_join.argtypes = [_P, _P, _P, _P, _P, _P, _I64, _D]
    return lib


def available() -> bool:
    return _library() is not None


def _c(a: np.ndarray, dtype) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=dtype)


def groups(
    start, end, region, count, segment, px: float, origin: int,
    pass_segment: np.ndarray | None = None,
) -> Groups | None:  # fmt: skip
    """The pixel groups of items sorted by (segment, start); None without the library.
    ``pass_segment`` (bool per segment): items of those segments pass as they are."""
    lib = _library()
    if lib is None:
        return None
    n = int(start.shape[0])
    start, end = _c(start, np.int64), _c(end, np.int64)
    region, count, segment = _c(region, np.int32), _c(count, np.int64), _c(segment, np.int64)
    first, g_end = np.empty(n, np.int64), np.empty(n, np.int64)
    g_count, g_region = np.empty(n, np.int64), np.empty(n, np.int32)
    narrow = np.empty(n, np.uint8)
    passing = None if pass_segment is None else _c(pass_segment, np.uint8)
    k = lib.lod_groups(
        start.ctypes.data, end.ctypes.data, region.ctypes.data, count.ctypes.data,
        segment.ctypes.data, n, float(px), int(origin),
        None if passing is None else passing.ctypes.data, first.ctypes.data, g_end.ctypes.data,
        g_count.ctypes.data, g_region.ctypes.data, narrow.ctypes.data,
    )  # fmt: skip
    return Groups(first[:k], g_end[:k], g_count[:k], g_region[:k], narrow[:k].view(bool))


def join(start, end, region, count, segment, narrow, px: float) -> int:
    """Join neighbouring narrow groups in place (the arrays are the groups', contiguous, of
    lod_merge.c's types); the number of spans left at their front."""
    lib = _library()
    assert lib is not None
    for a, dtype in ((start, np.int64), (end, np.int64), (region, np.int32),
                     (count, np.int64), (segment, np.int64)):  # fmt: skip
        assert a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable
    flags = _c(narrow, np.uint8)
    return int(
        lib.lod_join(
            start.ctypes.data, end.ctypes.data, region.ctypes.data, count.ctypes.data,
            segment.ctypes.data, flags.ctypes.data, int(start.shape[0]), float(px),
        )
    )  # fmt: skip
