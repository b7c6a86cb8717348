"""The MPI records of an OTF2 archive: who sent how much to whom, and the collectives.

Score-P's traces of MPI programs and the builtin tracer's merged MPI runs carry MpiSend /
MpiIsend on the sending location (receiver as a rank of the communicator, tag, bytes),
MpiRecv / MpiIrecv on the receiving one, and MpiCollectiveEnd with the bytes a rank sent
and received in a collective. ``read_traffic`` reads only these (libotf2 steps over every
other record without calling back into Python, so this pass costs a fraction of the
index's) through per-location readers, as ``otf2_read`` does, and sums them per process:

- ``processes``: the trace's location groups of type PROCESS, in rank order ("MPI Rank 3"
  is rank 3; a group not named so takes its place in definition order), with their
  locations (positions in the definitions, as the index numbers them);
- ``bytes`` / ``messages``: N x N, row = sending rank, column = receiving rank, counted on
  the send side (a send whose receiver cannot be resolved is counted in ``unmatched``);
- ``received``: per rank, bytes and messages as its receives saw them (a check of the
  matrix: the column sums agree when every message was received in the trace);
- ``collectives``: per rank, collective calls and the bytes sent and received in them.

How: the native scanner (``mpi_scan``) reads each location's MPI records into numpy
arrays, summed per rank with numpy (~1 s for the 14.7M records of the 100M-event
benchmark archive); a location it cannot read exactly, or without the library, is read
through libotf2's callbacks, a Python call per record (~1M records/s), as ``decoder=
"callbacks"`` reads every location. Both give the same answer, number for number.

Run it in the parse worker (``service.in_worker``): libotf2 may crash on a damaged file.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import numpy as np

from . import otf2_scan
from .mpi_scan import MPI_ISEND, MPI_SEND, MpiRecords, scan_mpi_or_reason
from .otf2_read import (
    TraceReadError,
    _check_anchor,
    _error_text,
    _library,
    open_event_files,
    read_local_events,
)
from .otf2_scan import LocalDefinitions

_U8, _U32, _U64, _VP = ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p
_SEND = ctypes.CFUNCTYPE(ctypes.c_int, _U64, _U64, _U64, _VP, _VP, _U32, _U32, _U32, _U64)
_ISEND = ctypes.CFUNCTYPE(ctypes.c_int, _U64, _U64, _U64, _VP, _VP, _U32, _U32, _U32, _U64, _U64)
_COLL_END = ctypes.CFUNCTYPE(ctypes.c_int, _U64, _U64, _U64, _VP, _VP, _U8, _U32, _U32, _U64, _U64)
log = logging.getLogger(__name__)
Decoder = Literal["auto", "callbacks"]
# Sums of the scanner's byte counts are taken in float64 (np.bincount) and int64: exact
# below these; a location whose bytes reach past them is summed by the callbacks in
# Python's integers.
_FLOAT_EXACT = float(2**52)
_INT_EXACT = 2**62
_RANK_NAME = re.compile(r"(?:rank|Rank|RANK)\s*(\d+)\s*$")
_bound = False


def _bind() -> Any:
    global _bound
    lib = _library()
    if not _bound:
        lib.OTF2_EvtReaderCallbacks_SetMpiSendCallback.argtypes = [_VP, _SEND]
        lib.OTF2_EvtReaderCallbacks_SetMpiIsendCallback.argtypes = [_VP, _ISEND]
        lib.OTF2_EvtReaderCallbacks_SetMpiRecvCallback.argtypes = [_VP, _SEND]
        lib.OTF2_EvtReaderCallbacks_SetMpiIrecvCallback.argtypes = [_VP, _ISEND]
        lib.OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback.argtypes = [_VP, _COLL_END]
        _bound = True
    return lib


class Process(TypedDict):
    rank: int
    name: str
    locations: list[int]  # positions in the definitions' locations


class Received(TypedDict):
    bytes: int
    messages: int


class CollectiveTotals(TypedDict):
    calls: int
    bytes_sent: int
    bytes_received: int


class Traffic(TypedDict):
    """``read_traffic``'s answer (see the module docstring)."""

    processes: list[Process]
    bytes: list[list[int]]
    messages: list[list[int]]
    received: list[Received]
    collectives: list[CollectiveTotals]
    unmatched: int


def _processes(defs: Any) -> tuple[list[Process], dict[int, int]]:
    """The PROCESS location groups in rank order, and location ref -> rank."""
    groups = [g for g in defs.location_groups if "PROCESS" in str(g.location_group_type)]
    if not groups:
        groups = list(defs.location_groups)
    named = []
    for order, g in enumerate(groups):
        m = _RANK_NAME.search(g.name or "")
        named.append((int(m.group(1)) if m else None, order, g))
    taken = {r for r, _, _ in named if r is not None}
    free = (r for r in range(len(named) + len(taken)) if r not in taken)
    ranked = sorted(((r if r is not None else next(free)), o, g) for r, o, g in named)
    rank_of_group = {id(g): rank for rank, (_, _, g) in enumerate(ranked)}
    processes: list[Process] = [{"rank": rank, "name": g.name or f"Process {rank}", "locations": []}
                 for rank, (_, _, g) in enumerate(ranked)]  # fmt: skip
    rank_of_location: dict[int, int] = {}
    for position, loc in enumerate(defs.locations):
        rank = rank_of_group.get(id(loc.group))
        if rank is None:
            continue
        rank_of_location[loc._ref] = rank
        processes[rank]["locations"].append(position)
    return processes, rank_of_location


@dataclass(frozen=True)
class _Communicators:
    """Communicator ref -> its ranks -> process rank (-1: a member that is no process),
    for lookups of whole arrays: ``refs`` sorted, each one's members at
    ``flat[offsets[i] : offsets[i] + sizes[i]]``."""

    members: dict[int, list[int]]
    refs: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray
    flat: np.ndarray

    @classmethod
    def of(cls, members: dict[int, list[int]]) -> _Communicators:
        refs = np.array(sorted(members), np.int64)
        sizes = np.array([len(members[int(r)]) for r in refs], np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        flat = np.array([m for r in refs for m in members[int(r)]], np.int64)
        return cls(members, refs, offsets, sizes, flat)

    def ranks(self, comm: np.ndarray, peer: np.ndarray) -> np.ndarray:
        """The process rank of each (communicator, rank in it); -1 where there is none."""
        out = np.full(comm.size, -1, np.int64)
        if not self.refs.size or not comm.size:
            return out
        comm = comm.astype(np.int64)
        at = np.minimum(np.searchsorted(self.refs, comm), self.refs.size - 1)
        peer = peer.astype(np.int64)
        ok = (self.refs[at] == comm) & (peer < self.sizes[at])
        out[ok] = self.flat[self.offsets[at[ok]] + peer[ok]]
        return out


@dataclass
class _Sums:
    """The traffic of the locations the scanner read, per rank, in int64."""

    bytes: np.ndarray  # N x N
    messages: np.ndarray  # N x N
    received: np.ndarray  # N x 2: bytes, messages
    collectives: np.ndarray  # N x 3: calls, bytes sent, bytes received
    unmatched: int = 0
    total: int = 0  # every byte count added: the int64 sums are exact below _INT_EXACT

    @classmethod
    def zeros(cls, n: int) -> _Sums:
        z = np.zeros
        return cls(
            z((n, n), np.int64), z((n, n), np.int64), z((n, 2), np.int64), z((n, 3), np.int64)
        )

    def add(self, me: int, records: MpiRecords, comms: _Communicators) -> str | None:
        """A location's records of rank ``me`` added; or why not
        (nothing added then): byte counts too large to sum exactly here."""
        p2p, coll = records.p2p, records.collectives
        total = sum(float(a.sum(dtype=np.float64)) for a in (p2p.bytes, coll.sent, coll.received))
        if total >= _FLOAT_EXACT or self.total + int(total) >= _INT_EXACT:
            return f"byte counts summing to {total:.3g}: summed in Python's integers instead"
        self.total += int(total)
        n = self.bytes.shape[0]
        send = (p2p.type == MPI_SEND) | (p2p.type == MPI_ISEND)
        peer = comms.ranks(p2p.comm[send], p2p.peer[send])
        ok = peer >= 0
        self.unmatched += int(ok.size - np.count_nonzero(ok))
        to = peer[ok]
        self.messages[me] += np.bincount(to, minlength=n)
        sent = p2p.bytes[send][ok].astype(np.float64)
        self.bytes[me] += np.bincount(to, weights=sent, minlength=n).astype(np.int64)
        got = p2p.bytes[~send]
        self.received[me] += (int(got.sum(dtype=np.uint64)), got.size)
        self.collectives[me] += (
            coll.op.size,
            int(coll.sent.sum(dtype=np.uint64)),
            int(coll.received.sum(dtype=np.uint64)),
        )
        return None


def _scanned(anchor: str, ref: int, chunk_size: int, local: object) -> MpiRecords | str:
    """Location ``ref``'s MPI records by the native scanner, with its local definitions
    ``local`` (``open_event_files``'), or why libotf2's callbacks read it."""
    if not isinstance(local, LocalDefinitions):
        return local if isinstance(local, str) else "its local definitions were not read"
    base = os.path.splitext(anchor)[0]
    try:
        data = np.fromfile(os.path.join(base, f"{ref}.evt"), np.uint8)
    except OSError as e:
        return f"its event file cannot be read here ({e.strerror})"
    return scan_mpi_or_reason(data, chunk_size, local)


def read_traffic(anchor: str, decoder: Decoder = "auto") -> Traffic:
    """The MPI traffic of the archive at ``anchor`` (see the module docstring).
    ``decoder`` "callbacks": every location through libotf2's callbacks (the tests and
    the benchmark compare the two)."""
    import _otf2  # type: ignore[import-untyped]  # the otf2 package has no types
    import otf2

    _check_anchor(anchor)
    try:
        trace = otf2.reader.Reader(anchor)
    except Exception as e:
        raise TraceReadError(
            f"libotf2 cannot open this archive ({type(e).__name__}: {e})"
        ) from None
    try:
        defs = trace.definitions
        processes, rank_of_location = _processes(defs)
        n = len(processes)
        # communicator ref -> rank in it -> process rank
        members: dict[int, list[int]] = {}
        for comm in defs.comms:
            group = getattr(comm, "group", None)
            locs = list(getattr(group, "members", ()) or ())
            members[comm._ref] = [rank_of_location.get(loc._ref, -1) for loc in locs]
        comms = _Communicators.of(members)
        native = decoder == "auto" and otf2_scan.available()
        local: dict[int, Any] = {}
        raw = open_event_files(trace, local if native else None, anchor=anchor)
        chunk_size = int(_otf2.Reader_GetChunkSize(trace.handle)[0])
        sums = _Sums.zeros(n)
        left: list[tuple[int, int]] = []  # (location ref, rank): for the callbacks
        for loc in defs.locations:
            me = rank_of_location.get(loc._ref)
            if me is None:
                continue
            if not native:
                left.append((loc._ref, me))
                continue
            records = _scanned(anchor, loc._ref, chunk_size, local.get(loc._ref))
            reason = records if isinstance(records, str) else sums.add(me, records, comms)
            if reason is not None:
                log.info("OTF2 location %s: MPI records read with libotf2's callbacks "
                         "(native scanner: %s)", loc._ref, reason)  # fmt: skip
                left.append((loc._ref, me))
        traffic: Traffic = {
            "processes": processes,
            "bytes": sums.bytes.tolist(),
            "messages": sums.messages.tolist(),
            "received": [{"bytes": b, "messages": m} for b, m in sums.received.tolist()],
            "collectives": [
                {"calls": c, "bytes_sent": s, "bytes_received": r}
                for c, s, r in sums.collectives.tolist()
            ],
            "unmatched": sums.unmatched,
        }
        for ref, me in left:
            _read_by_callbacks(raw, ref, me, comms.members, traffic)
        _otf2.Reader_CloseEvtFiles(trace.handle)
    finally:
        trace.close()
    return traffic


def _read_by_callbacks(
    raw: ctypes.c_void_p, ref: int, me: int, members: dict[int, list[int]], traffic: Traffic
) -> None:
    """Location ``ref``'s MPI records (rank ``me``) added to ``traffic`` through libotf2's
    callbacks, in Python's integers."""
    matrix_bytes, matrix_msgs = traffic["bytes"], traffic["messages"]
    received, collectives = traffic["received"][me], traffic["collectives"][me]

    def on_send(_l, _t, _p, _u, _a, receiver, comm, _tag, length):
        ranks = members.get(comm)
        peer = ranks[receiver] if ranks is not None and receiver < len(ranks) else -1
        if peer < 0:
            traffic["unmatched"] += 1
        else:
            matrix_bytes[me][peer] += int(length)
            matrix_msgs[me][peer] += 1
        return 0

    def on_isend(_l, _t, _p, _u, _a, receiver, comm, tag, length, _req):
        return on_send(_l, _t, _p, _u, _a, receiver, comm, tag, length)

    def on_recv(_l, _t, _p, _u, _a, _sender, _comm, _tag, length):
        received["bytes"] += int(length)
        received["messages"] += 1
        return 0

    def on_irecv(_l, _t, _p, _u, _a, sender, comm, tag, length, _req):
        return on_recv(_l, _t, _p, _u, _a, sender, comm, tag, length)

    def on_coll(_l, _t, _p, _u, _a, _op, _comm, _root, sent, got):
        collectives["calls"] += 1
        collectives["bytes_sent"] += int(sent)
        collectives["bytes_received"] += int(got)
        return 0

    _bind()  # the MPI callbacks' argtypes, once
    callbacks = (_SEND(on_send), _ISEND(on_isend), _SEND(on_recv), _ISEND(on_irecv),
                 _COLL_END(on_coll))  # fmt: skip
    names = ("MpiSend", "MpiIsend", "MpiRecv", "MpiIrecv", "MpiCollectiveEnd")
    code = read_local_events(raw, ref, dict(zip(names, callbacks)))
    if code is not None and code != 0:
        raise TraceReadError(f"the events of location {ref} cannot be read ({_error_text(code)})")
