"""A location's events without a Python call per event: the native scanner (otf2_scan) for
every archive, Score-P's included, or where it is not built, the numpy decoder (otf2_decode)
for the builtin writer's files. The result is what otf2_read's ctypes reader gives for the
same location (test_scorep_archives.py and test_otf2_decode.py compare them); a location
the fast path cannot read exactly returns None with the reason logged, and the ctypes
reader reads it.

Score-P's metric values come out as the ctypes reader decodes them (a DOUBLE's bits as a
double, INT64 as signed, anything else as unsigned; scaled by the member's
base**exponent); its flushes and "recording off" spans become calls of its artificial
regions through the same ``otf2_read.with_artificial_calls``.
"""

from __future__ import annotations

import logging
import os

import numpy as np

from .otf2_definitions import Definitions
from .otf2_read import Decoder, LocationEvents, with_artificial_calls
from .otf2_scan import LocalDefinitions, ScannedEvents

log = logging.getLogger(__name__)

TYPE_INT64, TYPE_DOUBLE = 8, 10  # OTF2_Type
# A local definitions file with no records: an 18-byte chunk header, END_OF_FILE, END_OF_BUFFER.
_EMPTY_DEFS_SIZE = 20


def fast_location(
    anchor: str,
    ref: int,
    chunk_size: int,
    decoder: Decoder,
    defs: Definitions,
    local: LocalDefinitions | str | None,
) -> LocationEvents | None:
    """Location ``ref``'s events by the native scanner ("auto", where built) or the numpy
    decoder, with its local definitions ``local`` (from ``otf2_read.open_event_files``; a
    string: why they cannot be applied here); None where the ctypes reader must read it."""
    from . import otf2_scan
    from .otf2_decode import decode

    base = os.path.join(os.path.dirname(anchor), os.path.splitext(os.path.basename(anchor))[0])
    native = decoder == "auto" and otf2_scan.available()
    try:
        if isinstance(local, str):
            _fell_back(ref, local)
            return None
        if not native and not _empty_local_defs(os.path.join(base, f"{ref}.def")):
            return None  # the numpy decoder applies no mappings: Score-P's go to the callbacks
        data = np.fromfile(os.path.join(base, f"{ref}.evt"), np.uint8)
    except OSError as e:
        _fell_back(ref, f"its event file cannot be read here ({e.strerror})")
        return None
    if not native:
        decoded = decode(data, chunk_size)
        if decoded is None:
            return None  # not the builtin writer's records: the callbacks read it
        return LocationEvents(ref, decoded.times, decoded.signed_regions)
    scanned = otf2_scan.scan_or_reason(data, chunk_size, local)
    if isinstance(scanned, str):
        _fell_back(ref, scanned)
        return None
    return location_events(ref, scanned, defs)


def _fell_back(ref: int, reason: str) -> None:
    log.info("OTF2 location %s: read with libotf2's callbacks (native scanner: %s)", ref, reason)
    return None


def _empty_local_defs(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    return len(head) == _EMPTY_DEFS_SIZE and head[-2:] == b"\x02\x01"


def location_events(ref: int, scanned: ScannedEvents, defs: Definitions) -> LocationEvents:
    """The scanner's output as otf2_read's ctypes reader builds it."""
    m_times, m_members, m_values = metric_samples(scanned, defs)
    times, regions, synthetic = with_artificial_calls(
        scanned.times, scanned.signed_regions, scanned.flushes, scanned.switches, defs
    )
    return LocationEvents(
        ref=ref,
        times=times,
        signed_regions=regions,
        metric_times=m_times,
        metric_members=m_members,
        metric_values=m_values,
        program_begin=scanned.program_begin,
        synthetic=synthetic,
    )


def metric_samples(
    scanned: ScannedEvents, defs: Definitions
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times, member refs, values) of the metric values, as otf2_read's on_metric."""
    n = scanned.metric_bits.size
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float64)
    bits = scanned.metric_bits
    types = scanned.metric_types
    values = bits.astype(np.float64)  # unsigned (UINT64 and the rest)
    is_double = types == TYPE_DOUBLE
    values[is_double] = bits[is_double].view(np.float64)
    is_int = types == TYPE_INT64
    values[is_int] = bits[is_int].view(np.int64).astype(np.float64)
    # member = the metric's members[i] (-1 where the metric or the position is unknown)
    classes = defs.metric_classes
    width = max((len(m) for m in classes.values()), default=0)
    top = max(classes, default=-1)
    table = np.full((top + 2, max(width, 1)), -1, np.int32)  # the last row: unknown metrics
    for metric, members in classes.items():
        table[metric, : len(members)] = members
    refs = scanned.metric_refs.astype(np.int64)
    row = np.where(refs <= top, refs, top + 1)
    index = scanned.metric_index.astype(np.int64)
    member = np.where(index < width, table[row, np.minimum(index, max(width, 1) - 1)], -1)
    scale = np.ones(max(defs.metric_members, default=-1) + 2, np.float64)
    for ref, info in defs.metric_members.items():
        if info["scale"] != 1.0:
            scale[ref] = info["scale"]
    scaled = values * scale[np.where(member >= 0, member, scale.size - 1)]
    return scanned.metric_times, member.astype(np.int32), scaled
