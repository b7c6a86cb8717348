"""The native OTF2 event scanner (server_ext/native/otf2_scan.c) through ctypes: one C
pass over a location's event file, 10 ms per 1M events against the numpy decoder's
~0.4 s (the archive's ingest: 33M against 2.1M events/CPU-s, benchmarks/server_ingest.py).
Same answers as ``otf2_decode.decode`` (test_otf2_decode.py runs both
on the same files); where the library is not there (a source install without a C
compiler) ``available()`` is False and the numpy decoder reads the file instead.

The library is a plain shared object, not a Python extension: one build serves every
Python, and it needs no headers to build. ``LIBRARY`` names it; hatch_build.py and
`make setup` build it next to this module.
"""

from __future__ import annotations

import ctypes
import functools
import logging
from pathlib import Path

import numpy as np

from .otf2_decode import DecodedEvents

log = logging.getLogger(__name__)

LIBRARY = "libotf2_scan.so"
ABI = 1  # otf2_scan.c's OTF2_SCAN_ABI: a library of another version is not used
SCAN_OK, SCAN_ELSEWHERE, SCAN_MALFORMED, SCAN_FULL = 0, 1, 2, 3
HEADER_SIZE = 18

_u64p = ctypes.POINTER(ctypes.c_uint64)
_i64p = ctypes.POINTER(ctypes.c_int64)


@functools.cache
def _library() -> ctypes.CDLL | None:
    path = Path(__file__).with_name(LIBRARY)
    if not path.exists():
        log.info("%s is not built: OTF2 events are read with numpy (slower)", path)
        return None
    try:
        lib = ctypes.CDLL(str(path))
        if lib.otf2_scan_abi() != ABI:
            log.warning(
                "%s is of another version (rebuild it with `make setup` or reinstall): "
                "OTF2 events are read with numpy (slower)",
                path,
            )
            return None
    except OSError as e:
        log.warning("cannot load %s (%s): OTF2 events are read with numpy (slower)", path, e)
        return None
    lib.otf2_scan.restype = ctypes.c_int
    lib.otf2_scan.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint64,
        ctypes.c_uint64,
        _i64p,
        _i64p,
        ctypes.c_uint64,
        _u64p,
        _i64p,
    ]
    return lib


def available() -> bool:
    return _library() is not None


def scan(data: bytes | np.ndarray, chunk_size: int) -> DecodedEvents | None:
    """The Enter/Leave events of one location's event file, or None when the file holds
    something left to the ctypes reader (or is not what the scanner expects), as
    ``otf2_decode.decode``. The library must be ``available()``."""
    lib = _library()
    assert lib is not None, "otf2_scan.scan without the library: check available() first"
    buf = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray)) else data
    buf = np.ascontiguousarray(buf, dtype=np.uint8)
    n = len(buf)
    if n < HEADER_SIZE or chunk_size <= HEADER_SIZE:
        return None
    # Room for every event the chunk headers announce (Enter/Leave are some of them).
    heads = np.arange(0, n, chunk_size)
    if heads[-1] + HEADER_SIZE > n:
        return None
    if not ((buf[heads] == 0x03).all() and (buf[heads + 1] == 0x42).all()):
        return None  # not chunk headers: not an event file, or another chunk size
    numbers = buf[heads[:, None] + np.arange(2, 18)].copy().view("<u8").reshape(-1, 2)
    announced = numbers[:, 1].astype(np.int64) + 1 - numbers[:, 0].astype(np.int64)
    if (announced < 0).any() or (announced > n).any():
        return None
    capacity = int(announced.sum())
    if capacity > n // 2:
        return None  # more events than the bytes can hold (a record is >= 2 bytes): damaged
    times = np.empty(capacity, np.int64)
    regions = np.empty(capacity, np.int64)
    count = ctypes.c_uint64(0)
    program_begin = ctypes.c_int64(-1)
    status = lib.otf2_scan(
        buf.ctypes.data,
        n,
        chunk_size,
        times.ctypes.data_as(_i64p),
        regions.ctypes.data_as(_i64p),
        capacity,
        ctypes.byref(count),
        ctypes.byref(program_begin),
    )
    if status != SCAN_OK:
        return None
    k = int(count.value)
    return DecodedEvents(
        times[:k].copy() if k < capacity // 2 else times[:k],
        regions[:k].copy() if k < capacity // 2 else regions[:k],
        None if program_begin.value < 0 else int(program_begin.value),
    )
