"""Decode a location's OTF2 event file with numpy: the mirror of the builtin writer's fast
encoder (kernel/scorep_kernel/formats/_otf2_encode.py), for the records the timeline index
needs, at tens of millions of events per second instead of the ~2M/s of one Python
callback per event (otf2_read's ctypes reader, which stays the fallback).

The layout is the builtin writer's, declared once in ``scorep_kernel.otf2_layout`` (the
encoder takes it from there too): chunks of ``chunk_size`` bytes, each with a header;
inside, TIMESTAMP, ENTER / LEAVE with a compressed uint32 region, and the end markers;
every other record is its type, a length byte (0xFF: a uint64 length follows) and that
many bytes.

Records are of variable length, so where one begins is only known from the one before.
The file is cut into segments of ``SEGMENT`` bytes and a cursor walks each segment at once
(numpy, in lockstep), from the segment's first byte as if a record began there. A cursor
that started inside a record resynchronises within a few records; the walk of segment i
is then checked against where the walk of segment i-1 really entered it, and the rare
segment whose cursor was not yet in step there is walked again from the true entry. The
result is verified against the chunk headers' event numbers; anything the decoder does
not know how to read exactly returns None, and the caller reads that location with the
ctypes reader.

Only the builtin writer's records are read here (timestamps, Enter, Leave, the end
markers, and a thread's ATTRIBUTE_LIST + THREAD_BEGIN first and THREAD_END last, stepped
over by their length byte within ``WINDOW`` bytes of the file's first record and of its
end, where the writer puts them): a file with any other record on its walk, or with
these elsewhere, returns None and is read by the
native scanner (otf2_scan, which steps over records it does not draw as libotf2 does) or
the ctypes reader. (Counting events alone does not catch a foreign record: an unknown
record type where an Enter was keeps the count and shifts the walk; the fuzz test in
test_otf2_decode.py found that.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scorep_kernel.otf2_layout import (
    ATTRIBUTE_LIST,
    CHUNK_HEADER,
    COMPRESSED_UINT32_MAX,
    END_OF_BUFFER,
    END_OF_CHUNK,
    END_OF_FILE,
    ENTER,
    HEADER_SIZE,
    LEAVE,
    LITTLE_ENDIAN,
    THREAD_BEGIN,
    THREAD_END,
    TIMESTAMP,
)

# The records this decoder reads; a walk that meets any other returns None.
_READ_HERE = np.zeros(256, bool)
_READ_HERE[[END_OF_CHUNK, END_OF_BUFFER, END_OF_FILE, TIMESTAMP, ENTER, LEAVE]] = True
# A thread's records (ATTRIBUTE_LIST + THREAD_BEGIN first, THREAD_END last), stepped over
# by their length byte only within WINDOW bytes of the file's first record and of its end,
# where the builtin writer puts them.
_THREAD_RECORDS = np.zeros(256, bool)
_THREAD_RECORDS[[ATTRIBUTE_LIST, THREAD_BEGIN, THREAD_END]] = True
_READ_HERE |= _THREAD_RECORDS
WINDOW = 64
SEGMENT = 96  # bytes per speculative cursor: ~8 records of ~12 bytes
UINT32_MAX = 0xFFFFFFFF
# the value bytes a compressed uint32's count byte stands for (5: 0xFF, UINT32_MAX)
_COUNT_MASK = np.array([0, 0xFF, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF], np.uint32)


@dataclass
class DecodedEvents:
    times: np.ndarray  # int64, ticks as recorded, of each Enter/Leave
    signed_regions: np.ndarray  # int64: region ref for Enter, ~ref for Leave (otf2_read's form)
    program_begin: int | None


def decode(data: bytes | np.ndarray, chunk_size: int) -> DecodedEvents | None:
    """The Enter/Leave events of one location's event file, or None when the file holds
    something this decoder leaves to the ctypes reader (or is not what it expects)."""
    buf = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray)) else data
    n = len(buf)
    if n < HEADER_SIZE or chunk_size <= HEADER_SIZE:
        return None
    chunk_starts = np.arange(0, n, chunk_size, dtype=np.int64)
    if chunk_starts[-1] + HEADER_SIZE > n:
        return None  # cut inside a chunk header
    if not (
        (buf[chunk_starts] == CHUNK_HEADER).all() and (buf[chunk_starts + 1] == LITTLE_ENDIAN).all()
    ):
        return None
    chunk_ends = np.minimum(chunk_starts + chunk_size, n)
    if chunk_ends[-1] - chunk_starts[-1] < HEADER_SIZE + 2:
        return None  # a file ends with END_OF_FILE, END_OF_BUFFER after a header at least
    starts = _record_starts(buf, chunk_starts, chunk_ends)
    if starts is None:
        return None
    types = buf[starts]
    if not _READ_HERE[types].all():
        return None
    thread_records = starts[_THREAD_RECORDS[types]]
    if len(thread_records) and not _in_windows(thread_records, n).all():
        return None  # where the builtin writer never puts them: not read here
    # One end marker per chunk (END_OF_CHUNK, or END_OF_FILE in the last, whose
    # END_OF_BUFFER the walk jumps over): a zero read as a record elsewhere is damage.
    if int(np.count_nonzero(types <= END_OF_FILE)) != len(chunk_starts):
        return None
    # The chunk headers count the events (every record but timestamps, attribute lists
    # and the end markers): a walk that lost its way cannot match them.
    headers = buf[chunk_starts[:, None] + np.arange(2, 18)].copy().view("<u8").reshape(-1, 2)
    is_event = types > ATTRIBUTE_LIST
    expected = int((headers[:, 1] - headers[:, 0] + 1).sum()) if len(headers) else 0
    if int(is_event.sum()) != expected:
        return None
    return _events(buf, starts, types)


def _sizes(buf: np.ndarray, chunk_starts: np.ndarray, chunk_ends: np.ndarray) -> np.ndarray:
    """For every byte: the offset of the next record if a record began there. Only the
    records of the builtin writer's files are read as such (timestamps, Enter, Leave and
    the end markers, which jump to their chunk's end); any other byte steps one byte on,
    which is what lets a cursor that began inside a record find its way quickly (a random
    byte read as a length would throw it far). A file with other records on its true
    walk fails the event count in ``decode`` and goes to the ctypes reader."""
    n = len(buf)
    index = np.int64 if n >= 2**31 - 16 else np.int32
    nxt = np.arange(1, n + 1, dtype=index)  # default: one byte on
    nxt[buf == TIMESTAMP] += 8
    second = np.empty(n, np.uint8)
    second[:-1] = buf[1:]
    second[-1] = 0
    el = np.flatnonzero((buf == ENTER) | (buf == LEAVE))
    count = second[el]
    ok = (count <= 4) | (count == COMPRESSED_UINT32_MAX)
    el, count = el[ok], count[ok]
    nxt[el] += 1 + np.where(count == COMPRESSED_UINT32_MAX, 0, count).astype(index)
    # The end markers, where they really are: END_OF_CHUNK where only padding zeros
    # follow to the chunk's end, END_OF_FILE + END_OF_BUFFER as the file's last bytes.
    # (A zero inside a timestamp is common; read as an end it would throw a cursor away.)
    for c0, c1 in zip(chunk_starts.tolist(), chunk_ends.tolist()):
        last = _last_nonzero(buf, c0, c1)
        if last + 1 < c1:
            nxt[last + 1 : c1] = c1
    if n >= 2 and buf[-2] == END_OF_FILE and buf[-1] == END_OF_BUFFER:
        nxt[n - 2 :] = n
    # A thread's records, by their length byte, near the file's start and end only (a
    # random byte read as a length elsewhere would throw cursors far and often).
    near = np.union1d(
        np.arange(HEADER_SIZE, min(HEADER_SIZE + WINDOW, n - 1)),
        np.arange(max(n - WINDOW, HEADER_SIZE), n - 1),
    ).astype(np.int64)
    near = near[_THREAD_RECORDS[buf[near]] & (buf[near + 1] != 0xFF)]
    chunk_end = chunk_ends[np.searchsorted(chunk_starts, near, side="right") - 1]
    nxt[near] = np.minimum(near + 2 + buf[near + 1].astype(np.int64), chunk_end).astype(index)
    # never past the chunk's end (a record cut by the end is not a record): only the last
    # few bytes of each chunk can point further
    for c0, c1 in zip(chunk_starts.tolist(), chunk_ends.tolist()):
        tail = slice(max(c0, c1 - 16), c1)
        np.minimum(nxt[tail], c1, out=nxt[tail])
    return nxt


def _in_windows(positions: np.ndarray, n: int) -> np.ndarray:
    return (positions < HEADER_SIZE + WINDOW) | (positions >= n - WINDOW)


def _last_nonzero(buf: np.ndarray, c0: int, c1: int) -> int:
    """Where a chunk's padding begins, minus one: searched from the end in blocks (the
    padding is a few bytes, except in a short last chunk)."""
    hi = c1
    while hi > c0:
        lo = max(c0, hi - 4096)
        nonzero = np.flatnonzero(buf[lo:hi])
        if len(nonzero):
            return lo + int(nonzero[-1])
        hi = lo
    return c0


def _record_starts(
    buf: np.ndarray, chunk_starts: np.ndarray, chunk_ends: np.ndarray
) -> np.ndarray | None:
    n = len(buf)
    nxt = _sizes(buf, chunk_starts, chunk_ends)
    # Segments: the data of each chunk, cut every SEGMENT bytes.
    seg_starts_list, seg_ends_list = [], []
    for c0, c1 in zip(chunk_starts.tolist(), chunk_ends.tolist()):
        s = np.arange(c0 + HEADER_SIZE, c1, SEGMENT, dtype=nxt.dtype)
        seg_starts_list.append(s)
        seg_ends_list.append(np.append(s[1:], c1).astype(nxt.dtype))
    seg_start = np.concatenate(seg_starts_list)
    seg_end = np.concatenate(seg_ends_list)
    first_of_chunk = np.zeros(len(seg_start), bool)
    first_of_chunk[np.cumsum([0] + [len(s) for s in seg_starts_list[:-1]])] = True

    # Walk every segment at once. Cursor i records the positions it visits inside its
    # own segment (segments are disjoint, so one mask holds them all) and where it left.
    visited = np.zeros(n + 1, bool)
    pos = seg_start.copy()
    end = seg_end
    active = np.arange(len(pos), dtype=nxt.dtype)
    exit_at = np.empty(len(pos), nxt.dtype)
    while len(active):
        p = pos[active]
        inside = p < end[active]
        if not inside.all():
            exit_at[active[~inside]] = p[~inside]
            active = active[inside]
            p = p[inside]
        visited[p] = True
        pos[active] = nxt[p]

    # Where the true walk enters each segment: the chunk's first record, else where the
    # previous segment's cursor left; that cursor's walk is true once it was in step, i.e.
    # if it visited its own entry (or the entry lies past its segment).
    entry = np.where(first_of_chunk, seg_start, np.roll(exit_at, 1))
    hit = (entry >= seg_end) | visited[np.minimum(entry, n)]
    for bad in np.flatnonzero(~hit).tolist():
        # Walk again from the true entry (rare); when that moves where the next segment
        # is entered, check that one against its own walk, and so on.
        i = bad
        while True:
            e, stop = int(entry[i]), int(seg_end[i])
            visited[int(seg_start[i]) : stop] = False
            p = e
            while p < stop:
                visited[p] = True
                p = int(nxt[p])
            j = i + 1
            if j >= len(seg_start) or first_of_chunk[j] or p == exit_at[i]:
                break
            exit_at[i] = entry[j] = p
            if p >= seg_end[j] or visited[p]:
                break  # segment j's own walk is in step from there
            i = j
    # Drop what each cursor visited before it was in step: the positions before its entry.
    # (The segment of a position, by arithmetic: chunks are chunk_size apart, segments
    # SEGMENT bytes apart from each chunk's data.)
    starts = np.flatnonzero(visited[:n])
    chunk_size = int(chunk_ends[0] - chunk_starts[0])
    chunk = starts // chunk_size
    first_segment = np.cumsum([0] + [len(s) for s in seg_starts_list[:-1]])
    segment = first_segment[chunk] + (starts - chunk * chunk_size - HEADER_SIZE) // SEGMENT
    return starts[starts >= entry[segment]]


def _events(buf: np.ndarray, starts: np.ndarray, types: np.ndarray) -> DecodedEvents:
    n = len(buf)
    padded = np.zeros(n + 16, np.uint8)  # rows of 9 bytes from any record start
    padded[:n] = buf
    rows = np.lib.stride_tricks.as_strided(padded, (n, 9), (1, 1), writeable=False)
    is_ts = types == TIMESTAMP
    ts_pos = starts[is_ts]
    ts_values = rows[ts_pos][:, 1:9].copy().view("<u8").ravel().astype(np.int64)
    # The time of each record: that of the last timestamp at or before it.
    ts_index = np.cumsum(is_ts) - 1
    el = (types == ENTER) | (types == LEAVE)
    idx = ts_index[el]
    if len(idx) and idx[0] < 0:
        return DecodedEvents(np.zeros(0, np.int64), np.zeros(0, np.int64), None)  # no time
    times = ts_values[idx]
    p = starts[el]
    head = rows[p][:, 1:6].copy()  # the count byte and up to 4 value bytes
    count = head[:, 0]
    value = head[:, 1:5].copy().view("<u4").ravel()
    regions = (value & _COUNT_MASK[np.minimum(count, 5)]).astype(np.int64)
    count_is_max = count == COMPRESSED_UINT32_MAX
    regions[count_is_max] = UINT32_MAX
    signed = np.where(types[el] == ENTER, regions, ~regions)
    return DecodedEvents(times, signed, None)  # ProgramBegin is not read here
