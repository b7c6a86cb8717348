"""Encode a location's enter/leave events into OTF2 event-file bytes with numpy.

Calling libotf2 once per event costs ~0.5 us of ctypes overhead per call, which caps the
writer at ~1.5M events/s on an idle core. This module produces the very bytes libotf2
writes for ``OTF2_EvtWriter_Enter`` / ``_Leave`` without attribute lists, for a whole
location at once (tens of millions of events/s), and for a thread other than the master
its ``OTF2_EvtWriter_ThreadBegin`` (with the ThreadId attribute) before them and
``_ThreadEnd`` after them, in a chunk of its own where libotf2 would put it there. ``otf2_writer`` lets libotf2 create the
archive, the definitions and an (empty) event file per location, then replaces that file
with these bytes. kernel/tests/test_otf2_writer_engines.py checks byte equality with
libotf2's own output, across chunk boundaries.

The bytes are the builtin OTF2 event layout that ``scorep_kernel.otf2_layout`` declares
(the server's decoder reads the same from there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scorep_kernel.otf2_layout import (
    ATTRIBUTE_LIST,
    CHUNK_HEADER,
    CHUNK_SIZE,
    COMPRESSED_UINT32_MAX,
    END_OF_BUFFER,
    END_OF_FILE,
    ENTER,
    HEADER_SIZE,
    LEAVE,
    LITTLE_ENDIAN,
    MAX_REF,
    REQUEST_SIZE,
    THREAD_BEGIN,
    THREAD_END,
    THREAD_REQUEST_SIZE,
    TIMESTAMP,
    TIMESTAMP_SIZE,
    TYPE_UINT64,
)

BLOCK = 1 << 20  # events encoded per block


@dataclass(frozen=True)
class ThreadRecords:
    """A thread's THREAD_BEGIN (before its first event, with the ThreadId attribute) and
    THREAD_END (after its last), as Score-P's pthread adapter writes them: epoch ticks,
    the COMM ref of the thread contingent, the ThreadId attribute's ref and value."""

    begin: int
    end: int
    contingent: int
    attribute: int
    thread_id: int


def supported(times: np.ndarray, refs: np.ndarray, thread: ThreadRecords | None = None) -> bool:
    """Whether ``encode`` reproduces libotf2 for these events: positive, non-decreasing
    times (a time of 0 makes libotf2 repeat timestamps) and region refs below 2**24; a
    thread's begin and end around its events."""
    if thread is not None:
        first, last = (int(times[0]), int(times[-1])) if len(times) else (thread.end,) * 2
        if not (0 < thread.begin <= first and last <= thread.end):
            return False
        if not (0 <= thread.contingent <= MAX_REF and 0 <= thread.attribute <= MAX_REF):
            return False
        if not 0 <= thread.thread_id < 2**64 - 1:
            return False
    if not len(times):
        return True
    return bool(
        times[0] > 0
        and refs.max(initial=0) <= MAX_REF
        and refs.min(initial=0) >= 0
        and (len(times) < 2 or (np.diff(times) >= 0).all())
    )


def _compressed(value: int) -> bytes:
    """OTF2's compressed integer: 0x00 for 0, else a byte count and the low bytes (the
    undefined value, all ones, never comes here but as the sequence count's 0xFF)."""
    if value == 0:
        return b"\x00"
    raw = value.to_bytes(8, "little").rstrip(b"\x00")
    return bytes([len(raw)]) + raw


def _timestamp(time: int) -> bytes:
    return bytes([TIMESTAMP]) + int(time).to_bytes(8, "little")


def _record(kind: int, body: bytes) -> bytes:
    return bytes([kind, len(body)]) + body  # bodies here are far below 255 bytes


def _thread_begin(thread: ThreadRecords) -> bytes:
    """TIMESTAMP, ATTRIBUTE_LIST (ThreadId) and THREAD_BEGIN: a chunk's first records."""
    attributes = _compressed(1) + _compressed(thread.attribute) + bytes([TYPE_UINT64])
    attributes += _compressed(thread.thread_id)
    contingent = _compressed(thread.contingent) + bytes([COMPRESSED_UINT32_MAX])
    return (
        _timestamp(thread.begin)
        + _record(ATTRIBUTE_LIST, attributes)
        + _record(THREAD_BEGIN, contingent)
    )


def _thread_end(thread: ThreadRecords) -> bytes:
    return _record(THREAD_END, _compressed(thread.contingent) + bytes([COMPRESSED_UINT32_MAX]))


def _header(first: int, last: int) -> np.ndarray:
    h = np.zeros(HEADER_SIZE, np.uint8)
    h[0], h[1] = CHUNK_HEADER, LITTLE_ENDIAN
    h[2:18] = np.array([first, last], "<u8").view(np.uint8)
    return h


def encode(
    times,
    refs,
    kinds,
    chunk_size: int = CHUNK_SIZE,
    block: int = BLOCK,
    thread: ThreadRecords | None = None,
) -> np.ndarray:
    """The bytes of one location's event file: ``times`` epoch ticks (uint64-compatible),
    ``refs`` region refs, ``kinds`` nonzero for enter; ``thread``: the thread records
    around them. Check ``supported`` first."""
    t = np.ascontiguousarray(times, dtype="<u8")
    r = np.ascontiguousarray(refs, dtype="<u4")
    n = int(t.shape[0])
    head = _thread_begin(thread) if thread is not None else b""
    if n == 0:
        return _without_events(thread, chunk_size)

    # Compressed region: one byte for 0, else a count byte and 1-3 value bytes.
    nbytes = (r >= 0x1).astype(np.int64) + (r >= 0x100) + (r >= 0x10000)
    ts = np.empty(n, dtype=bool)
    # the first event carries a timestamp unless THREAD_BEGIN's, at its time, precedes it
    ts[0] = thread is None or int(t[0]) > thread.begin
    np.greater(t[1:], t[:-1], out=ts[1:])
    size = 2 + nbytes + TIMESTAMP_SIZE * ts  # record id + region (+ timestamp)
    prefix = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(size, out=prefix[1:])

    # Chunk starts: the first event whose request no longer fits. The first event of a
    # chunk always carries a timestamp (counted as `forced` when it had none); the first
    # chunk holds the thread's begin records before its first event.
    starts = [0]
    k = 0
    used0 = HEADER_SIZE + len(head)
    while True:
        forced = 0 if ts[k] or (k == 0 and thread is not None) else TIMESTAMP_SIZE
        threshold = chunk_size - REQUEST_SIZE - used0 - forced + prefix[k]
        j = max(int(np.searchsorted(prefix, threshold, side="left")), k + 1)
        if j >= n:
            break
        starts.append(j)
        k = j
        used0 = HEADER_SIZE
    starts_arr = np.asarray(starts, dtype=np.int64)
    ts[starts_arr[1:] if thread is not None else starts_arr] = True
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

    # The chunks' payloads: [begin records] events [end records], and each chunk's
    # events numbered from 1 (THREAD_BEGIN is the first, THREAD_END the last).
    shift = 0 if thread is None else 1
    ends = np.append(starts_arr[1:], n)
    bounds = prefix[np.append(starts_arr, n)]
    payloads: list[list[bytes | np.ndarray]] = [
        [stream[int(bounds[c]) : int(bounds[c + 1])]] for c in range(len(starts))
    ]
    numbers = [[int(starts_arr[c]) + 1 + shift, int(ends[c]) + shift] for c in range(len(starts))]
    if thread is not None:
        payloads[0].insert(0, np.frombuffer(head, np.uint8))
        numbers[0][0] = 1
        tail = _thread_end(thread)
        filled = HEADER_SIZE + sum(len(p) for p in payloads[-1])
        if filled + THREAD_REQUEST_SIZE >= chunk_size:  # a chunk of its own
            payloads.append([np.frombuffer(_timestamp(thread.end) + tail, np.uint8)])
            numbers.append([n + 2, n + 2])
        else:
            stamp = _timestamp(thread.end) if thread.end > int(t[-1]) else b""
            payloads[-1].append(np.frombuffer(stamp + tail, np.uint8))
            numbers[-1][1] += 1
    return _chunks(payloads, numbers, chunk_size)


def _without_events(thread: ThreadRecords | None, chunk_size: int) -> np.ndarray:
    if thread is None:
        return np.concatenate([_header(1, 0), np.array([END_OF_FILE, END_OF_BUFFER], np.uint8)])
    stamp = _timestamp(thread.end) if thread.end > thread.begin else b""
    body = _thread_begin(thread) + stamp + _thread_end(thread)
    return _chunks([[np.frombuffer(body, np.uint8)]], [[1, 2]], chunk_size)


def _chunks(payloads, numbers, chunk_size: int) -> np.ndarray:
    """Chunks of ``chunk_size`` bytes, each a header and its payload, zero-padded; the
    last cut after END_OF_FILE, END_OF_BUFFER."""
    last_len = HEADER_SIZE + sum(len(p) for p in payloads[-1]) + 2
    out = np.zeros((len(payloads) - 1) * chunk_size + last_len, dtype=np.uint8)
    for c, (parts, (first, last)) in enumerate(zip(payloads, numbers)):
        pos = c * chunk_size
        out[pos : pos + HEADER_SIZE] = _header(first, last)
        pos += HEADER_SIZE
        for part in parts:
            out[pos : pos + len(part)] = part
            pos += len(part)
    out[-2] = END_OF_FILE
    out[-1] = END_OF_BUFFER
    return out
