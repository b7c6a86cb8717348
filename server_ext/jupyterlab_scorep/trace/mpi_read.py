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

Run it in the parse worker (``service.in_worker``): libotf2 may crash on a damaged file.
"""

from __future__ import annotations

import ctypes
import re
from typing import Any

from .otf2_read import (
    TraceReadError,
    _check_anchor,
    _error_text,
    _library,
    open_event_files,
    read_local_events,
)

_U8, _U32, _U64, _VP = ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p
_SEND = ctypes.CFUNCTYPE(ctypes.c_int, _U64, _U64, _U64, _VP, _VP, _U32, _U32, _U32, _U64)
_ISEND = ctypes.CFUNCTYPE(ctypes.c_int, _U64, _U64, _U64, _VP, _VP, _U32, _U32, _U32, _U64, _U64)
_COLL_END = ctypes.CFUNCTYPE(ctypes.c_int, _U64, _U64, _U64, _VP, _VP, _U8, _U32, _U32, _U64, _U64)
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


def _processes(defs: Any) -> tuple[list[dict[str, Any]], dict[int, int]]:
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
    processes: list[dict[str, Any]] = [{"rank": rank, "name": g.name or f"Process {rank}", "locations": []}
                 for rank, (_, _, g) in enumerate(ranked)]  # fmt: skip
    rank_of_location: dict[int, int] = {}
    for position, loc in enumerate(defs.locations):
        rank = rank_of_group.get(id(loc.group))
        if rank is None:
            continue
        rank_of_location[loc._ref] = rank
        processes[rank]["locations"].append(position)
    return processes, rank_of_location


def read_traffic(anchor: str) -> dict[str, Any]:
    """The MPI traffic of the archive at ``anchor`` (see the module docstring)."""
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
        handle = trace.handle
        raw = open_event_files(trace, anchor=anchor)
        matrix_bytes = [[0] * n for _ in range(n)]
        matrix_msgs = [[0] * n for _ in range(n)]
        received = [[0, 0] for _ in range(n)]
        collectives = [[0, 0, 0] for _ in range(n)]
        unmatched = 0
        _bind()  # the MPI callbacks' argtypes, once
        for loc in defs.locations:
            me = rank_of_location.get(loc._ref)
            if me is None:
                continue

            def on_send(_l, _t, _p, _u, _a, receiver, comm, _tag, length, me=me):
                nonlocal unmatched
                ranks = members.get(comm)
                peer = ranks[receiver] if ranks is not None and receiver < len(ranks) else -1
                if peer < 0:
                    unmatched += 1
                else:
                    matrix_bytes[me][peer] += int(length)
                    matrix_msgs[me][peer] += 1
                return 0

            def on_isend(_l, _t, _p, _u, _a, receiver, comm, tag, length, _req, me=me):
                return on_send(_l, _t, _p, _u, _a, receiver, comm, tag, length, me)

            def on_recv(_l, _t, _p, _u, _a, _sender, _comm, _tag, length, me=me):
                received[me][0] += int(length)
                received[me][1] += 1
                return 0

            def on_irecv(_l, _t, _p, _u, _a, sender, comm, tag, length, _req, me=me):
                return on_recv(_l, _t, _p, _u, _a, sender, comm, tag, length, me)

            def on_coll(_l, _t, _p, _u, _a, _op, _comm, _root, sent, got, me=me):
                collectives[me][0] += 1
                collectives[me][1] += int(sent)
                collectives[me][2] += int(got)
                return 0

            callbacks = (_SEND(on_send), _ISEND(on_isend), _SEND(on_recv), _ISEND(on_irecv),
                         _COLL_END(on_coll))  # fmt: skip
            names = ("MpiSend", "MpiIsend", "MpiRecv", "MpiIrecv", "MpiCollectiveEnd")
            code = read_local_events(raw, loc._ref, dict(zip(names, callbacks)))
            if code is None:
                continue
            if code != 0:
                raise TraceReadError(
                    f"the events of location {loc._ref} cannot be read ({_error_text(code)})"
                )
        _otf2.Reader_CloseEvtFiles(handle)
    finally:
        trace.close()
    return {
        "processes": processes,
        "bytes": matrix_bytes,
        "messages": matrix_msgs,
        "received": [{"bytes": b, "messages": m} for b, m in received],
        "collectives": [
            {"calls": c, "bytes_sent": s, "bytes_received": r} for c, s, r in collectives
        ],
        "unmatched": unmatched,
    }
