"""A location's events without a Python call per event: the native scanner (otf2_scan) for
every archive, Score-P's included, or where it is not built, the numpy decoder (otf2_decode)
for the builtin writer's files. The result is what otf2_read's ctypes reader gives for the
same location (test_scorep_archives.py and test_otf2_decode.py compare them); a location
the fast path cannot read exactly returns None with the reason logged, and the ctypes
reader reads it.

Score-P's metric values come out of the scanner as the ctypes reader decodes them (a
DOUBLE's bits as a double, INT64 as signed, anything else as unsigned; scaled by the
member's base**exponent: ``otf2_scan.MetricTables``); its flushes and "recording off" spans become calls of its artificial
regions through the same ``otf2_events.with_artificial_calls``.
"""

from __future__ import annotations

import logging
import os

import numpy as np

from .otf2_definitions import Definitions
from .otf2_events import Decoder, LocationEvents, with_artificial_calls
from .otf2_local_defs import has_no_records
from .otf2_scan import LocalDefinitions, MetricTables, ScannedEvents

log = logging.getLogger(__name__)


def fast_location(
    anchor: str,
    ref: int,
    chunk_size: int,
    decoder: Decoder,
    defs: Definitions,
    local: LocalDefinitions | str | None,
    metrics: MetricTables | None = None,
) -> LocationEvents | None:
    """Location ``ref``'s events by the native scanner ("auto", where built) or the numpy
    decoder, with its local definitions ``local`` (from ``otf2_read.open_event_files``; a
    string: why they cannot be applied here); None where the ctypes reader must read it.
    ``metrics``: ``MetricTables.of(defs)``, made once for all locations (else here)."""
    from . import otf2_scan
    from .otf2_decode import decode

    base = os.path.join(os.path.dirname(anchor), os.path.splitext(os.path.basename(anchor))[0])
    native = decoder == "auto" and otf2_scan.available()
    try:
        if isinstance(local, str):
            _fell_back(ref, local)
            return None
        if not native and not has_no_records(os.path.join(base, f"{ref}.def")):
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
    scanned = otf2_scan.scan_or_reason(data, chunk_size, local, metrics or MetricTables.of(defs))
    if isinstance(scanned, str):
        _fell_back(ref, scanned)
        return None
    return location_events(ref, scanned, defs)


def _fell_back(ref: int, reason: str) -> None:
    log.info("OTF2 location %s: read with libotf2's callbacks (native scanner: %s)", ref, reason)
    return None


def location_events(ref: int, scanned: ScannedEvents, defs: Definitions) -> LocationEvents:
    """The scanner's output as otf2_read's ctypes reader builds it."""
    times, regions, synthetic = with_artificial_calls(
        scanned.times, scanned.signed_regions, scanned.flushes, scanned.switches, defs
    )
    return LocationEvents(
        ref=ref,
        times=times,
        signed_regions=regions,
        metric_times=scanned.metric_times,
        metric_members=scanned.metric_members,
        metric_values=scanned.metric_values,
        program_begin=scanned.program_begin,
        synthetic=synthetic,
    )
