"""The native OTF2 event scanner (server_ext/native/otf2_scan.c) through ctypes: one C
pass over a location's event file, ~10 ms per 1M events against the numpy decoder's
~0.4 s and libotf2's callbacks' ~0.7 s (benchmarks/server_ingest.py).

It reads what the timeline index draws, as libotf2 reads it: Enter/Leave, Metric values,
BufferFlush and MeasurementOnOff records and the first ProgramBegin, with the location's
local definitions applied (``LocalDefinitions``: Score-P's local-to-global id mappings of
regions and metrics, and its clock offsets), and steps over every other record by its
length, as libotf2 does. Same answers as libotf2 (test_otf2_decode.py and
test_scorep_archives.py compare them on the same files); a file it cannot read exactly
gives the reason instead (``scan_or_reason``), and the caller reads that location with
libotf2's callbacks. Where the library is not there (a source install without a C
compiler) ``available()`` is False and the numpy decoder reads the builtin writer's files.

The library is a plain shared object, not a Python extension: one build serves every
Python, and it needs no headers to build. ``LIBRARY`` names it; hatch_build.py and
`make setup` build it next to this module.
"""

from __future__ import annotations

import ctypes
import functools
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .otf2_definitions import Definitions

log = logging.getLogger(__name__)

LIBRARY = "libotf2_scan.so"
ABI = 5  # otf2_scan.c's OTF2_SCAN_ABI: a library of another version is not used
SCAN_OK, SCAN_MALFORMED, SCAN_FULL = 0, 2, 3
HEADER_SIZE = 18
MARK_FLUSH, MARK_ON_OFF = 1, 2
MEASUREMENT_OFF = 2  # OTF2_MEASUREMENT_OFF (ON is 1)

_P = ctypes.c_void_p
_U64 = ctypes.c_uint64


class _ScanIO(ctypes.Structure):
    """otf2_scan.c's otf2_scan_io, field for field."""

    _fields_ = [
        ("region_map", _P),
        ("region_map_size", _U64),
        ("metric_map", _P),
        ("metric_map_size", _U64),
        ("clock_times", _P),
        ("clock_offsets", _P),
        ("n_clock", _U64),
        ("member_table", _P),
        ("member_rows", _U64),
        ("member_width", _U64),
        ("member_scale", _P),
        ("n_members", _U64),
        ("times", _P),
        ("regions", _P),
        ("capacity", _U64),
        ("n_events", _U64),
        ("metric_times", _P),
        ("metric_members", _P),
        ("metric_values", _P),
        ("metric_capacity", _U64),
        ("n_metric_values", _U64),
        ("marks", _P),
        ("mark_capacity", _U64),
        ("n_marks", _U64),
        ("program_begin", ctypes.c_int64),
    ]


@dataclass
class LocalDefinitions:
    """What a location's local definitions change in its events, as libotf2 applies it:
    local -> global ids (uint32 tables of regions, metrics and communicators, an id past a
    table's end stays as recorded) and
    the ClockOffset records (time, offset) in file order."""

    region_map: np.ndarray | None = None
    metric_map: np.ndarray | None = None
    clock_times: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    clock_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    comm_map: np.ndarray | None = None  # communicators (the MPI records': mpi_scan)


@dataclass
class MetricTables:
    """The archive's metrics as the scanner decodes their values: ``members[metric, i]``
    the member ref of value i of a global metric (-1: none, as past a row's end),
    ``scales[member]`` the factor its values are recorded in (base**exponent)."""

    members: np.ndarray  # int32, 2-d
    scales: np.ndarray  # float64
    _io: tuple[int | None, int, int, int | None, int] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def io_fields(self) -> tuple[int | None, int, int, int | None, int]:
        """The scanner's member_table .. n_members fields, worked out once."""
        if self._io is None:
            self.members = np.ascontiguousarray(self.members, np.int32)
            self.scales = np.ascontiguousarray(self.scales, np.float64)
            rows, width = self.members.shape
            self._io = (_ptr(self.members), rows, width, _ptr(self.scales), len(self.scales))
        return self._io

    @classmethod
    def of(cls, defs: Definitions) -> MetricTables:
        classes = defs.metric_classes
        width = max((len(m) for m in classes.values()), default=0)
        members = np.full((max(classes, default=-1) + 1, width), -1, np.int32)
        for metric, refs in classes.items():
            members[metric, : len(refs)] = refs
        scales = np.ones(max(defs.metric_members, default=-1) + 1, np.float64)
        for ref, info in defs.metric_members.items():
            scales[ref] = info["scale"]
        return cls(members, scales)


@dataclass
class ScannedEvents:
    times: np.ndarray  # int64, ticks (clock offsets applied), of each Enter/Leave
    signed_regions: np.ndarray  # int64: global region for Enter, ~region for Leave
    program_begin: int | None
    # one row per metric value: time, member ref (-1: unknown), value (scaled), as the
    # ctypes reader's on_metric gives them
    metric_times: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    metric_members: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    metric_values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    # (Enter/Leave position, time, stop time) per flush; (position, time, off?) per switch
    flushes: list[tuple[int, int, int]] = field(default_factory=list)
    switches: list[tuple[int, int, bool]] = field(default_factory=list)


# otf2_scan_announced's codes for a file it will not size
_REFUSED = {
    -1: "shorter than a chunk header",
    -2: "cut inside a chunk header",
    -3: "not OTF2 chunks of the archive's chunk size (or a big-endian file)",
    -4: "chunk headers with impossible event numbers",
    -5: "more events announced than the bytes can hold (a record is >= 2 bytes)",
}


_NO_LOCAL = LocalDefinitions()
_NO_METRICS = MetricTables(np.zeros((0, 0), np.int32), np.zeros(0, np.float64))


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
    lib.otf2_scan_location.restype = ctypes.c_int
    lib.otf2_scan_location.argtypes = [_P, _U64, _U64, ctypes.POINTER(_ScanIO)]
    lib.otf2_scan_announced.restype = ctypes.c_int64
    lib.otf2_scan_announced.argtypes = [_P, _U64, _U64]
    lib.otf2_scan_mpi.restype = ctypes.c_int
    lib.otf2_scan_mpi.argtypes = [_P, _U64, _U64, _P]  # (mpi_scan's io, by reference)
    return lib


def available() -> bool:
    return _library() is not None


def scan(
    data: bytes | np.ndarray,
    chunk_size: int,
    local: LocalDefinitions | None = None,
    metrics: MetricTables | None = None,
) -> ScannedEvents | None:
    """The drawn events of one location's event file, or None where the scanner cannot
    read it exactly (see ``scan_or_reason``). The library must be ``available()``."""
    result = scan_or_reason(data, chunk_size, local, metrics)
    return None if isinstance(result, str) else result


def _ptr(a: np.ndarray | None) -> int | None:
    return None if a is None else a.ctypes.data


def scan_or_reason(
    data: bytes | np.ndarray,
    chunk_size: int,
    local: LocalDefinitions | None = None,
    metrics: MetricTables | None = None,
) -> ScannedEvents | str:
    """The drawn events of one location's event file, or why the scanner leaves it to
    libotf2's callbacks (a damaged or foreign file, a record it does not know how to read
    exactly). ``metrics``: the archive's (``MetricTables.of(definitions)``); without it
    every metric value's member is -1 and its value unscaled."""
    lib = _library()
    assert lib is not None, "otf2_scan.scan without the library: check available() first"
    buf = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray)) else data
    buf = np.ascontiguousarray(buf, dtype=np.uint8)
    n = len(buf)
    capacity = int(lib.otf2_scan_announced(buf.ctypes.data, n, chunk_size))
    if capacity < 0:
        return _REFUSED[capacity]
    local = local or _NO_LOCAL
    region_map, metric_map = local.region_map, local.metric_map
    n_clock = len(local.clock_times)
    clock_times = np.ascontiguousarray(local.clock_times, np.uint64) if n_clock else None
    clock_offsets = np.ascontiguousarray(local.clock_offsets, np.int64) if n_clock else None
    # A pointer out of numpy costs ~7 us here: the outputs are views of two blocks, and
    # the archive's metric tables are pointed to once (a 1,024-rank read makes 1,024 scans).
    # np.empty leaves pages untouched until written: room for the worst case costs nothing.
    block = np.empty(6 * capacity, np.int64)  # times, regions, marks (4 per mark)
    at = block.ctypes.data
    times, regions, marks = block[:capacity], block[capacity : 2 * capacity], block[2 * capacity :]
    m_capacity = 2 * capacity  # Score-P records two rusage values per Metric record
    while True:
        # metric times (int64), values (float64), members (int32)
        m_block = np.empty(20 * m_capacity, np.uint8)
        m_at = m_block.ctypes.data
        io = _ScanIO(
            _ptr(region_map),
            0 if region_map is None else len(region_map),
            _ptr(metric_map),
            0 if metric_map is None else len(metric_map),
            _ptr(clock_times),
            _ptr(clock_offsets),
            n_clock,
            *(metrics or _NO_METRICS).io_fields(),
            at,
            at + 8 * capacity,
            capacity,
            0,
            m_at,
            m_at + 16 * m_capacity,
            m_at + 8 * m_capacity,
            m_capacity,
            0,
            at + 16 * capacity,
            capacity,
            0,
            -1,
        )
        status = lib.otf2_scan_location(buf.ctypes.data, n, chunk_size, ctypes.byref(io))
        if status != SCAN_FULL:
            break
        m_capacity = int(io.n_metric_values)  # more values than events: read again with room
    m_times = m_block[: 8 * m_capacity].view(np.int64)
    m_values = m_block[8 * m_capacity : 16 * m_capacity].view(np.float64)
    m_members = m_block[16 * m_capacity :].view(np.int32)
    if status != SCAN_OK:
        return "a record the scanner does not read exactly, or a damaged file"
    k, m = int(io.n_events), int(io.n_metric_values)
    rows = marks[: 4 * int(io.n_marks)].reshape(-1, 4).tolist()
    # views, not copies: the pages past what was written were never touched (not resident)
    return ScannedEvents(
        times[:k],
        regions[:k],
        None if io.program_begin < 0 else int(io.program_begin),
        metric_times=m_times[:m],
        metric_members=m_members[:m],
        metric_values=m_values[:m],
        flushes=[(pos, t, v) for kind, pos, t, v in rows if kind == MARK_FLUSH],
        switches=[
            (pos, t, v == MEASUREMENT_OFF) for kind, pos, t, v in rows if kind == MARK_ON_OFF
        ],
    )
