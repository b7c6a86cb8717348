"""Encode a location's OTF2 event file from a table of record bodies, MPI records among them.

``_otf2_encode`` encodes enters and leaves; an MPI rank's master thread also holds MpiSend,
MpiRecv, MpiCollectiveBegin and MpiCollectiveEnd records (and the non-blocking ones) between a call's Enter and Leave,
which ``mpi.otf2_ranks`` writes through libotf2 once per event (~1 us each: 100M events
would take minutes). Here a location's events are a time and an index into a table of
distinct record bodies (the bytes after the timestamp: record id, length byte where the
record has one, compressed fields), and the event file is assembled with numpy, with
libotf2's timestamps and chunk boundaries: the bytes are libotf2's own
(kernel/tests/test_otf2_records.py compares them with write_otf2_ranks's, across chunks).

A body's ``request`` is what libotf2 asks its buffer for before writing the record (the
record's largest size, every compressed field at its widest, plus a timestamp); a chunk
ends before the event whose request no longer fits (``used + request >= chunk_size``).

The record layouts (OTF2 3.0 trace format 2, as libotf2 writes them; read back by
otf2-print): Enter 0x0C / Leave 0x0D + compressed region (no length byte); MpiSend 0x0E /
MpiRecv 0x12 + length byte + compressed peer, communicator, tag (uint32) and length
(uint64); MpiIsend 0x0F / MpiIrecv 0x13 the same and a compressed request id (uint64);
MpiIsendComplete 0x10 / MpiIrecvRequest 0x11 + compressed request id (no length byte,
like Enter); MpiCollectiveBegin 0x16 + length byte 0; MpiCollectiveEnd 0x17 + length byte +
the operation (one raw byte) + compressed communicator, root (uint32), bytes sent and
received (uint64). Master threads only (no THREAD_BEGIN / THREAD_END).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scorep_kernel.otf2_layout import ENTER, LEAVE, TIMESTAMP, TIMESTAMP_SIZE

from ._otf2_encode import HEADER_SIZE, _chunks, _without_events

MPI_SEND = 0x0E
MPI_ISEND = 0x0F
MPI_ISEND_COMPLETE = 0x10
MPI_IRECV_REQUEST = 0x11
MPI_RECV = 0x12
MPI_IRECV = 0x13
MPI_COLLECTIVE_BEGIN = 0x16
MPI_COLLECTIVE_END = 0x17
UNDEFINED_UINT32 = 0xFFFFFFFF  # OTF2_UNDEFINED_UINT32: a non-rooted collective's root
COLLECTIVE_OP_BARRIER = 0  # OTF2_CollectiveOp (OTF2_Events.h)
COLLECTIVE_OP_ALLREDUCE = 11
_U32, _U64 = 5, 9  # a compressed uint32 / uint64 at its widest: count byte + value bytes


def _compressed(value: int) -> bytes:
    """OTF2's compressed integer: 0x00 for 0, 0xFF for all ones (OTF2's undefined value of
    a uint32 or uint64), else a byte count and the low bytes."""
    if value in (UNDEFINED_UINT32, 2**64 - 1):
        return b"\xff"
    if value == 0:
        return b"\x00"
    raw = int(value).to_bytes(8, "little").rstrip(b"\x00")
    return bytes([len(raw)]) + raw


@dataclass(frozen=True)
class Body:
    """One record after its timestamp, and what libotf2 requests before writing it."""

    data: bytes
    request: int


def _with_length(record: int, fields: bytes, widest: int) -> Body:
    # record id, the length byte (fields under 255 bytes), the fields; + a timestamp
    return Body(bytes([record, len(fields)]) + fields, 2 + widest + TIMESTAMP_SIZE)


def enter(region: int) -> Body:
    return Body(bytes([ENTER]) + _compressed(region), 1 + _U32 + TIMESTAMP_SIZE)


def leave(region: int) -> Body:
    return Body(bytes([LEAVE]) + _compressed(region), 1 + _U32 + TIMESTAMP_SIZE)


def mpi_send(receiver: int, comm: int, tag: int, length: int) -> Body:
    fields = b"".join(_compressed(v) for v in (receiver, comm, tag, length))
    return _with_length(MPI_SEND, fields, 3 * _U32 + _U64)


def mpi_recv(sender: int, comm: int, tag: int, length: int) -> Body:
    fields = b"".join(_compressed(v) for v in (sender, comm, tag, length))
    return _with_length(MPI_RECV, fields, 3 * _U32 + _U64)


def mpi_isend(receiver: int, comm: int, tag: int, length: int, request: int) -> Body:
    fields = b"".join(_compressed(v) for v in (receiver, comm, tag, length, request))
    return _with_length(MPI_ISEND, fields, 3 * _U32 + 2 * _U64)


def mpi_irecv(sender: int, comm: int, tag: int, length: int, request: int) -> Body:
    fields = b"".join(_compressed(v) for v in (sender, comm, tag, length, request))
    return _with_length(MPI_IRECV, fields, 3 * _U32 + 2 * _U64)


def mpi_isend_complete(request: int) -> Body:
    return Body(bytes([MPI_ISEND_COMPLETE]) + _compressed(request), 1 + _U64 + TIMESTAMP_SIZE)


def mpi_irecv_request(request: int) -> Body:
    return Body(bytes([MPI_IRECV_REQUEST]) + _compressed(request), 1 + _U64 + TIMESTAMP_SIZE)


def mpi_collective_begin() -> Body:
    return _with_length(MPI_COLLECTIVE_BEGIN, b"", 0)


def mpi_collective_end(op: int, comm: int, root: int, sent: int, received: int) -> Body:
    fields = bytes([op]) + b"".join(_compressed(v) for v in (comm, root, sent, received))
    return _with_length(MPI_COLLECTIVE_END, fields, 1 + 2 * _U32 + 2 * _U64)


@dataclass(frozen=True)
class BodyTable:
    """Bodies as arrays: ``data`` [n, widest] zero-padded, ``length`` and ``request``."""

    data: np.ndarray  # uint8
    length: np.ndarray  # int64
    request: np.ndarray  # int64

    @classmethod
    def of(cls, bodies: list[Body]) -> BodyTable:
        width = max((len(b.data) for b in bodies), default=1)
        data = np.zeros((len(bodies), width), np.uint8)
        for i, b in enumerate(bodies):
            data[i, : len(b.data)] = np.frombuffer(b.data, np.uint8)
        length = np.array([len(b.data) for b in bodies], np.int64)
        return cls(data, length, np.array([b.request for b in bodies], np.int64))


def encode(times: np.ndarray, body: np.ndarray, table: BodyTable, chunk_size: int) -> np.ndarray:
    """The bytes of a master thread's event file: event i is ``table``'s body ``body[i]``
    at ``times[i]`` (positive, non-decreasing epoch ticks)."""
    t = np.ascontiguousarray(times, dtype="<u8")
    n = int(t.shape[0])
    if n == 0:
        return _without_events(None, chunk_size)
    b = np.asarray(body, np.int64)
    blen, request = table.length[b], table.request[b]
    ts = np.empty(n, dtype=bool)
    ts[0] = True
    np.greater(t[1:], t[:-1], out=ts[1:])
    prefix = np.zeros(n + 1, np.int64)
    np.cumsum(blen + TIMESTAMP_SIZE * ts, out=prefix[1:])
    # The first event whose request no longer fits starts the next chunk, with a timestamp
    # (``forced`` where it had none). prefix + request is not monotone: its running
    # maximum first reaches a threshold where it does.
    reach = np.maximum.accumulate(prefix[:n] + request)
    starts = [0]
    k = 0
    while True:
        forced = 0 if ts[k] else TIMESTAMP_SIZE
        threshold = chunk_size - HEADER_SIZE - forced + prefix[k]
        j = max(int(np.searchsorted(reach, threshold, side="left")), k + 1)
        if j >= n:
            break
        starts.append(j)
        k = j
    starts_arr = np.asarray(starts, np.int64)
    ts[starts_arr] = True
    np.cumsum(blen + TIMESTAMP_SIZE * ts, out=prefix[1:])

    width = TIMESTAMP_SIZE + table.data.shape[1]
    rows = np.empty((n, width), np.uint8)
    rows[:, 0] = TIMESTAMP
    rows[:, 1:TIMESTAMP_SIZE] = t.view(np.uint8).reshape(n, 8)
    rows[:, TIMESTAMP_SIZE:] = table.data[b]
    used = np.empty((n, width), bool)
    used[:, :TIMESTAMP_SIZE] = ts[:, None]
    used[:, TIMESTAMP_SIZE:] = blen[:, None] > np.arange(table.data.shape[1])
    stream = np.compress(used.ravel(), rows.ravel())

    ends = np.append(starts_arr[1:], n)
    bounds = prefix[np.append(starts_arr, n)]
    payloads = [[stream[int(bounds[c]) : int(bounds[c + 1])]] for c in range(len(starts))]
    numbers = [[int(starts_arr[c]) + 1, int(ends[c])] for c in range(len(starts))]
    return _chunks(payloads, numbers, chunk_size)
