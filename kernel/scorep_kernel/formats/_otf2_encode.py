"""Encode a location's enter/leave events into OTF2 event-file bytes with numpy.

Calling libotf2 once per event costs ~0.5 us of ctypes overhead per call, which caps the
writer at ~1.5M events/s on an idle core. This module produces the very bytes libotf2
writes for ``OTF2_EvtWriter_Enter`` / ``_Leave`` without attribute lists, for a whole
location at once (tens of millions of events/s). ``otf2_writer`` lets libotf2 create the
archive, the definitions and an (empty) event file per location, then replaces that file
with these bytes. kernel/tests/test_otf2_writer_engines.py checks byte equality with
libotf2's own output, across chunk boundaries.

The bytes are the builtin OTF2 event layout that ``scorep_kernel.otf2_layout`` declares
(the server's decoder reads the same from there).
"""

from __future__ import annotations

import numpy as np

from scorep_kernel.otf2_layout import (
    CHUNK_HEADER,
    CHUNK_SIZE,
    END_OF_BUFFER,
    END_OF_FILE,
    ENTER,
    HEADER_SIZE,
    LEAVE,
    LITTLE_ENDIAN,
    MAX_REF,
    REQUEST_SIZE,
    TIMESTAMP,
    TIMESTAMP_SIZE,
)

BLOCK = 1 << 20  # events encoded per block


def supported(times: np.ndarray, refs: np.ndarray) -> bool:
    """Whether ``encode`` reproduces libotf2 for these events: positive, non-decreasing
    times (a time of 0 makes libotf2 repeat timestamps) and region refs below 2**24."""
    if not len(times):
        return True
    return bool(
        times[0] > 0
        and refs.max(initial=0) <= MAX_REF
        and refs.min(initial=0) >= 0
        and (len(times) < 2 or (np.diff(times) >= 0).all())
    )


def _header(first: int, last: int) -> np.ndarray:
    h = np.zeros(HEADER_SIZE, np.uint8)
    h[0], h[1] = CHUNK_HEADER, LITTLE_ENDIAN
    h[2:18] = np.array([first, last], "<u8").view(np.uint8)
    return h


def encode(times, refs, kinds, chunk_size: int = CHUNK_SIZE, block: int = BLOCK) -> np.ndarray:
    """The bytes of one location's event file: ``times`` epoch ticks (uint64-compatible),
    ``refs`` region refs, ``kinds`` nonzero for enter. Check ``supported`` first."""
    t = np.ascontiguousarray(times, dtype="<u8")
    r = np.ascontiguousarray(refs, dtype="<u4")
    n = int(t.shape[0])
    if n == 0:
        return np.concatenate([_header(1, 0), np.array([END_OF_FILE, END_OF_BUFFER], np.uint8)])

    # Compressed region: one byte for 0, else a count byte and 1-3 value bytes.
    nbytes = (r >= 0x1).astype(np.int64) + (r >= 0x100) + (r >= 0x10000)
    ts = np.empty(n, dtype=bool)
    ts[0] = True
    np.greater(t[1:], t[:-1], out=ts[1:])
    size = 2 + nbytes + TIMESTAMP_SIZE * ts  # record id + region (+ timestamp)
    prefix = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(size, out=prefix[1:])

    # Chunk starts: the first event whose request no longer fits. The first event of a
    # chunk always carries a timestamp (counted as `forced` when it had none).
    starts = [0]
    k = 0
    while True:
        forced = 0 if ts[k] else TIMESTAMP_SIZE
        threshold = chunk_size - REQUEST_SIZE - HEADER_SIZE - forced + prefix[k]
        j = max(int(np.searchsorted(prefix, threshold, side="left")), k + 1)
        if j >= n:
            break
        starts.append(j)
        k = j
    starts_arr = np.asarray(starts, dtype=np.int64)
    ts[starts_arr] = True
    size = 2 + nbytes + TIMESTAMP_SIZE * ts
    np.cumsum(size, out=prefix[1:])

    # Every event as a fixed row [0x05, time (8), record id, region (1-4)], then the bytes
    # each event really uses, in order, with one boolean selection (in blocks, to bound
    # the temporary memory at ~30 MB).
    record_id = np.where(np.asarray(kinds) != 0, ENTER, LEAVE).astype(np.uint8)
    time_bytes = t.view(np.uint8).reshape(n, 8)
    region_bytes = r.view(np.uint8).reshape(n, 4)
    pieces = []
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        rows = np.empty((hi - lo, 14), dtype=np.uint8)
        rows[:, 0] = TIMESTAMP
        rows[:, 1:9] = time_bytes[lo:hi]
        rows[:, 9] = record_id[lo:hi]
        rows[:, 10] = nbytes[lo:hi]  # the count byte; for ref 0 this 0x00 is all of it
        rows[:, 11:14] = region_bytes[lo:hi, :3]
        used = np.empty((hi - lo, 14), dtype=bool)
        used[:, :9] = ts[lo:hi, None]
        used[:, 9:11] = True
        used[:, 11:14] = nbytes[lo:hi, None] > np.arange(3)
        pieces.append(np.compress(used.ravel(), rows.ravel()))  # 4x faster than rows[used]
    stream = np.concatenate(pieces)

    n_chunks = len(starts)
    bounds = prefix[np.append(starts_arr, n)]
    last_len = HEADER_SIZE + int(bounds[-1] - bounds[-2]) + 2
    out = np.zeros((n_chunks - 1) * chunk_size + last_len, dtype=np.uint8)
    ends = np.append(starts_arr[1:], n)
    for c in range(n_chunks):
        base = c * chunk_size
        out[base : base + HEADER_SIZE] = _header(int(starts_arr[c]) + 1, int(ends[c]))
        lo, hi = int(bounds[c]), int(bounds[c + 1])
        out[base + HEADER_SIZE : base + HEADER_SIZE + hi - lo] = stream[lo:hi]
    out[-2] = END_OF_FILE
    out[-1] = END_OF_BUFFER
    return out
