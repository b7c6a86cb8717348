"""A rank's master thread with its MPI events, as the numpy encoder's records.

``mpi.otf2_ranks`` holds a location's enters and leaves and, apart, its MPI events, each
to go right before event ``before`` of the enter/leave stream. ``encode_location`` merges
the two into one stream of (time, record body) and encodes it with
``formats._otf2_records``, the bytes libotf2 writes for the same calls: a 1,024-rank run
of 100M events in a minute or two instead of libotf2's ~1 us per event. It applies
to every MPI event kind the builtin backend records, on a master thread (no THREAD_BEGIN)
with positive, non-decreasing times and refs up to ``MAX_REF``; elsewhere it answers None
and the caller writes through libotf2.
"""

from __future__ import annotations

import numpy as np

from scorep_kernel.formats import _otf2_records as rec
from scorep_kernel.otf2_layout import MAX_REF

# event kinds (measure.mpi_calls; mpi.otf2_ranks names them too)
SEND, RECV, ISEND, ISEND_COMPLETE, IRECV_REQUEST, IRECV, COLL_BEGIN, COLL_END = range(1, 9)
_ALL64 = 2**64 - 1
_FIELDS = ("kind", "comm", "peer", "tag", "nbytes", "nbytes_recv", "op", "request")


def merged_times(times: np.ndarray, mpi_before: np.ndarray, mpi_times: np.ndarray):
    """Where the enter/leave events and the MPI events go in the merged stream (MPI events
    in ``before`` order, stable), and the merged times."""
    order = np.argsort(mpi_before, kind="stable")
    before = np.asarray(mpi_before, np.int64)[order]
    mpi_at = before + np.arange(before.size)
    n = times.size + before.size
    el_at = np.arange(times.size) + np.searchsorted(before, np.arange(times.size), "right")
    merged = np.empty(n, np.int64)
    merged[el_at] = times
    merged[mpi_at] = np.asarray(mpi_times, np.int64)[order]
    return order, el_at, mpi_at, merged


def _supported(refs: np.ndarray, kinds: np.ndarray, merged: np.ndarray) -> bool:
    if refs.size and (refs.min() < 0 or refs.max() > MAX_REF):
        return False
    if merged.size and (merged[0] <= 0 or (np.diff(merged) < 0).any()):
        return False
    return bool(((kinds >= SEND) & (kinds <= COLL_END)).all())


def _mpi_body(kind: int, comm: int, peer: int, tag: int, size: int, received: int, op: int,
              request: int) -> rec.Body:  # fmt: skip
    peer, tag = peer & 0xFFFFFFFF, tag & 0xFFFFFFFF  # as the ctypes binding passes them
    size, received, request = size & _ALL64, received & _ALL64, request & _ALL64
    if kind == SEND:
        return rec.mpi_send(peer, comm, tag, size)
    if kind == RECV:
        return rec.mpi_recv(peer, comm, tag, size)
    if kind == ISEND:
        return rec.mpi_isend(peer, comm, tag, size, request)
    if kind == ISEND_COMPLETE:
        return rec.mpi_isend_complete(request)
    if kind == IRECV_REQUEST:
        return rec.mpi_irecv_request(request)
    if kind == IRECV:
        return rec.mpi_irecv(peer, comm, tag, size, request)
    if kind == COLL_BEGIN:
        return rec.mpi_collective_begin()
    return rec.mpi_collective_end(op, comm, peer, size, received)


def encode_location(
    times: np.ndarray, refs: np.ndarray, kinds: np.ndarray, ev, comm_refs: list[int],
    chunk_size: int,
) -> np.ndarray | None:  # fmt: skip
    """The event file of a master thread: enters and leaves (epoch ticks, OTF2 region
    refs, nonzero kind for enter) and ``ev`` (``otf2_ranks.MpiEvents`` or None). None
    where the encoder does not cover them (see the module docstring)."""
    times = np.asarray(times, np.int64)
    refs = np.asarray(refs, np.int64)
    enter = np.asarray(kinds) != 0
    if (ev is None or not len(ev)) and not _supported(refs, np.zeros(0, np.int64), times):
        return None
    # enter/leave bodies: 2 * ref + enter, made once per distinct value
    keys = 2 * refs + enter
    el_keys, el_body = np.unique(keys, return_inverse=True)
    bodies = [rec.enter(k >> 1) if k & 1 else rec.leave(k >> 1) for k in el_keys.tolist()]
    if ev is None or not len(ev):
        return rec.encode(times, el_body, rec.BodyTable.of(bodies), chunk_size)
    order, el_at, mpi_at, merged = merged_times(times, ev.before, ev.time)
    if not _supported(refs, np.asarray(ev.kind), merged):
        return None
    columns = np.stack([np.asarray(getattr(ev, f), np.int64)[order] for f in _FIELDS], axis=1)
    columns[:, 1] = np.asarray(comm_refs, np.int64)[columns[:, 1]]  # communicator refs
    mpi_rows, mpi_body = np.unique(columns, axis=0, return_inverse=True)
    bodies += [_mpi_body(*row) for row in mpi_rows.tolist()]
    body = np.empty(merged.size, np.int64)
    body[el_at] = el_body.reshape(-1)
    body[mpi_at] = len(el_keys) + mpi_body.reshape(-1)
    return rec.encode(merged, body, rec.BodyTable.of(bodies), chunk_size)
