"""mpi4py's calls as regions and OTF2 MPI events, in a rank the builtin tracer measures.

The tracer does not see mpi4py's calls (methods of Cython extension types, whose frames
it never gets), and Score-P's MPI adapter is not there. So before the rank's first cell
``install`` replaces ``MPI.COMM_WORLD`` and ``MPI.COMM_SELF`` by instances of a Python
subclass of ``MPI.Intracomm`` (mpi4py's types are immutable, but it supports subclasses,
and ``Dup``/``Split``/``Create`` of a subclass instance return the subclass) whose
communication methods time the call, record it as a region ``mpi4py.MPI.Comm:<method>``
(group "MPI", as Score-P's MPI regions colour) and note what it moved:

- point to point (``send``/``Send``, ``ssend``/``Ssend``, ``Bsend``, ``Rsend``,
  ``recv``/``Recv``, ``sendrecv``/``Sendrecv``): an MpiSend at the call's start (peer,
  tag, bytes) and an MpiRecv at its end (source and tag from the status, so ANY_SOURCE
  and ANY_TAG resolve; bytes = the message's length, ``Status.Get_count(MPI.BYTE)``);
- ``isend``/``Isend``/``issend``/``Issend``: MpiIsend at the start and MpiIsendComplete
  at the call's return. The request's real completion (its Wait) is not seen: mpi4py's
  Request type is immutable and wrapping every request would cost each of them; the
  communication matrix counts the sends, so it is exact all the same. Non-blocking
  receives (``irecv``/``Irecv``) are regions only (their source and length are known
  only at the Wait);
- collectives (barrier, bcast, gather, scatter, allgather, alltoall, allreduce, reduce,
  scan, exscan, their buffer forms, the v-forms, Reduce_scatter(_block)): MpiCollective
  Begin/End with the operation, communicator, root and bytes sent / received as the rank
  handed them to MPI (a buffer's size, or a pickle's length), not as they went over the
  wire.

Bytes of the pickle-based (lower-case) methods come from ``MPI.pickle``'s dumps/loads,
which ``install`` wraps (stdlib pickle at mpi4py's protocol, as mpi4py's default; with a
hook installed mpi4py sends every pickle in band, which is what a cell measured here
gets). Communicators are told apart by their members' ranks in MPI_COMM_WORLD and name
(``MPI_COMM_WORLD``, ``MPI_COMM_SELF``, or a user's ``Set_name``); two communicators of
the same members and name (a Dup) share one OTF2 communicator.

This module lives in ``measure/`` on purpose: the tracer drops the frames of its package
and everything they call, so a traced method's own frames, mpi4py's work and the pickling
stay out of the trace, and the call is one leaf region under the cell's function that
made it.

Cost: ~3-5 µs of Python per call on top of mpi4py's own (the binding of the arguments,
two clock readings, a tuple appended), measured by benchmarks/mpi_cell.py. Only calls made
through the traced communicators count: a communicator made by ``MPI.Intracomm(handle)``
or received from another library is not traced.
"""

from __future__ import annotations

import inspect
import itertools
import pickle
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..formats.recording import ROLE_FUNCTION, Region

# event kinds
SEND, RECV, ISEND, ISEND_COMPLETE, IRECV_REQUEST, IRECV, COLL_BEGIN, COLL_END = range(1, 9)
AT_ENTER = frozenset({SEND, ISEND, IRECV_REQUEST, COLL_BEGIN})  # written after the call's Enter
UNDEFINED = 0xFFFFFFFF  # OTF2_UNDEFINED_UINT32: no root
REGION_GROUP = "MPI"
REGION_MODULE = "mpi4py.MPI.Comm"

# OTF2_CollectiveOp values (OTF2 3.0, OTF2_Events.h)
COLLECTIVE_OPS = {
    "barrier": 0, "Barrier": 0,
    "bcast": 1, "Bcast": 1,
    "gather": 2, "Gather": 2, "Gatherv": 3,
    "scatter": 4, "Scatter": 4, "Scatterv": 5,
    "allgather": 6, "Allgather": 6, "Allgatherv": 7,
    "alltoall": 8, "Alltoall": 8, "Alltoallv": 9,
    "allreduce": 11, "Allreduce": 11,
    "reduce": 12, "Reduce": 12,
    "Reduce_scatter": 13,
    "scan": 14, "Scan": 14,
    "exscan": 15, "Exscan": 15,
    "Reduce_scatter_block": 16,
}  # fmt: skip
SENDS = ("send", "ssend", "Send", "Ssend", "Bsend", "Rsend")
RECVS = ("recv", "Recv")
SENDRECVS = ("sendrecv", "Sendrecv")
ISENDS = ("isend", "Isend", "issend", "Issend")
IRECVS = ("irecv", "Irecv")
# the OTF2 region role of each method's region (merge.py writes it)
ROLE_P2P = "point2point"
ROLE_BARRIER = "barrier"
ROLE_ONE2ALL = "coll_one2all"
ROLE_ALL2ONE = "coll_all2one"
ROLE_ALL2ALL = "coll_all2all"
ROLE_OTHER = "coll_other"
_ONE2ALL = ("bcast", "Bcast", "scatter", "Scatter", "Scatterv")
_ALL2ONE = ("gather", "Gather", "Gatherv", "reduce", "Reduce")
_OTHER = ("scan", "Scan", "exscan", "Exscan")


def method_role(method: str) -> str:
    if method in COLLECTIVE_OPS:
        if method in ("barrier", "Barrier"):
            return ROLE_BARRIER
        if method in _ONE2ALL:
            return ROLE_ONE2ALL
        if method in _ALL2ONE:
            return ROLE_ALL2ONE
        if method in _OTHER:
            return ROLE_OTHER
        return ROLE_ALL2ALL
    return ROLE_P2P


def region_name(method: str) -> str:
    return f"{REGION_MODULE}:{method}"


@dataclass
class RankMpi:
    """One rank's mpi4py calls, times mapped to the Recording's clock (perf_counter ns).

    ``calls``: per call its thread (native id), start and end time, and region name index;
    ``events``: per event its call, kind, communicator index, peer (rank in that
    communicator; the root for collectives, UNDEFINED for none), tag, bytes (sent, or the
    message's length), bytes received (collectives), collective op and request id."""

    rank: int
    region_names: list[str]
    comms: list[tuple[str, tuple[int, ...]]]  # (name, members as ranks of MPI_COMM_WORLD)
    call_thread: np.ndarray
    call_t0: np.ndarray
    call_t1: np.ndarray
    call_region: np.ndarray
    ev_call: np.ndarray
    ev_kind: np.ndarray
    ev_comm: np.ndarray
    ev_peer: np.ndarray
    ev_tag: np.ndarray
    ev_bytes: np.ndarray
    ev_bytes_recv: np.ndarray
    ev_op: np.ndarray
    ev_request: np.ndarray
    notes: list[str] = field(default_factory=list)

    @property
    def roles(self) -> dict[str, str]:
        return {name: method_role(name.rsplit(":", 1)[-1]) for name in self.region_names}


def nbytes(MPI: Any, spec: Any) -> int:
    """The bytes a buffer argument describes: a buffer, ``[buf, datatype]``,
    ``[buf, count, datatype]`` or ``[buf, (counts, displs), datatype]``; 0 when unknown."""
    if spec is None or spec is MPI.IN_PLACE:
        return 0
    try:
        return memoryview(spec).nbytes
    except TypeError:
        pass
    if isinstance(spec, (list, tuple)) and spec:
        last = spec[-1]
        if len(spec) >= 3 and isinstance(last, MPI.Datatype):
            count = spec[1]
            if isinstance(count, (list, tuple)) and count:
                count = count[0]
            if isinstance(count, (list, tuple)):
                count = sum(int(c) for c in count)
            try:
                return int(count) * last.Get_size()
            except (TypeError, ValueError):
                return 0
        try:
            return memoryview(spec[0]).nbytes
        except TypeError:
            return 0
    return 0


class Recorder:
    """What the traced communicators record while a measurement runs (one per run)."""

    def __init__(self, measurement: Any, MPI: Any):
        self.m = measurement
        self.MPI = MPI
        self.world = MPI.COMM_WORLD
        self.calls: list[tuple[int, float, float, int]] = []
        self.events: list[tuple[int, int, int, int, int, int, int, int, int]] = []
        self.region_names: list[str] = []
        self.regions: dict[str, tuple[int, Region]] = {}
        self.comms: list[tuple[str, tuple[int, ...]]] = []
        self._comm_index: dict[tuple, int] = {}
        self._handles: dict[tuple[int, int], int] = {}
        self.dumped = 0
        self.loaded = 0
        self._requests = itertools.count(1)
        self.errors = 0

    # --- what a call is ---------------------------------------------------------------
    def region(self, method: str) -> tuple[int, Region]:
        found = self.regions.get(method)
        if found is None:
            region = Region(region_name(method), REGION_GROUP, "", 0, ROLE_FUNCTION)
            found = (len(self.region_names), region)
            self.region_names.append(region.name)
            self.regions[method] = found
        return found

    def comm_index(self, comm: Any) -> int:
        key = (comm.py2f(), comm.Get_size())
        found = self._handles.get(key)
        if found is not None:
            return found
        name = comm.Get_name() or ""
        if comm == self.world:  # the same handle
            members: tuple[int, ...] = tuple(range(comm.Get_size()))
            name = name or "MPI_COMM_WORLD"
        else:
            group, world = comm.Get_group(), self.world.Get_group()
            try:
                ranks = self.MPI.Group.Translate_ranks(group, list(range(group.Get_size())), world)
                members = tuple(int(r) for r in ranks)
            finally:
                group.Free()
                world.Free()
        ident = (name, members)
        index = self._comm_index.get(ident)
        if index is None:
            index = self._comm_index[ident] = len(self.comms)
            self.comms.append(ident)
        self._handles[key] = index
        return index

    # --- one call ---------------------------------------------------------------------
    def call(self, comm: Any, method: str, base: Callable, handler: Callable, status_at: int,
             args: tuple, kwargs: dict, named: dict) -> Any:  # fmt: skip
        status = None
        if status_at >= 0 and named.get("status") is None:
            status = self.MPI.Status()
            if status_at < len(args):
                args = (*args[:status_at], status, *args[status_at + 1 :])
            else:
                kwargs = {**kwargs, "status": status}
        else:
            status = named.get("status")
        index, region = self.region(method)
        m = self.m
        dumped, loaded = self.dumped, self.loaded
        t0 = m.now()
        try:
            return base(comm, *args, **kwargs)
        finally:
            t1 = m.now()
            m.record_region(region, t0, t1)
            call = len(self.calls)
            self.calls.append((threading.get_native_id(), t0, t1, index))
            try:
                events = handler(self, comm, method, named, status,
                                 self.dumped - dumped, self.loaded - loaded)  # fmt: skip
                cix = self.comm_index(comm) if events else 0
                for kind, peer, tag, sent, received, op, request in events:
                    self.events.append((call, kind, cix, peer, tag, sent, received, op, request))
            except Exception:  # what was moved is unknown; the call itself stands
                self.errors += 1

    def result(self, rank: int, to_perf: Callable[[np.ndarray], np.ndarray]) -> RankMpi:
        calls = np.asarray(self.calls, dtype=np.float64).reshape(-1, 4)
        events = np.asarray(self.events, dtype=np.int64).reshape(-1, 9)
        notes = []
        if self.errors:
            notes.append(f"{self.errors} MPI calls' messages could not be described")
        return RankMpi(
            rank=rank,
            region_names=list(self.region_names),
            comms=list(self.comms),
            call_thread=calls[:, 0].astype(np.int64),
            call_t0=np.asarray(to_perf(calls[:, 1]), np.int64),
            call_t1=np.asarray(to_perf(calls[:, 2]), np.int64),
            call_region=calls[:, 3].astype(np.int32),
            ev_call=events[:, 0],
            ev_kind=events[:, 1].astype(np.int8),
            ev_comm=events[:, 2].astype(np.int32),
            ev_peer=events[:, 3],
            ev_tag=events[:, 4],
            ev_bytes=events[:, 5],
            ev_bytes_recv=events[:, 6],
            ev_op=events[:, 7].astype(np.int16),
            ev_request=events[:, 8],
            notes=notes,
        )


# --- what each kind of method moved -------------------------------------------------------
# handler(recorder, comm, method, named args, status, pickled bytes out, pickled bytes in)
# -> [(kind, peer, tag, bytes, bytes received, op, request)]


def _sent(rec: Recorder, method: str, named: dict, key: str, dumped: int) -> int:
    return dumped if method[0].islower() else nbytes(rec.MPI, named.get(key))


def _status_recv(rec: Recorder, status: Any, method: str, loaded: int) -> tuple:
    count = status.Get_count(rec.MPI.BYTE) if status is not None else loaded
    source = status.Get_source() if status is not None else UNDEFINED
    tag = status.Get_tag() if status is not None else 0
    return (RECV, source, tag, count, 0, 0, 0)


def _on_send(rec, comm, method, named, status, dumped, loaded):
    return [(SEND, named["dest"], named.get("tag", 0), _sent(rec, method, named, "buf", dumped),
             0, 0, 0)]  # fmt: skip


def _on_recv(rec, comm, method, named, status, dumped, loaded):
    return [_status_recv(rec, status, method, loaded)]


def _on_sendrecv(rec, comm, method, named, status, dumped, loaded):
    sent = _sent(rec, method, named, "sendbuf", dumped)
    return [
        (SEND, named["dest"], named.get("sendtag", 0), sent, 0, 0, 0),
        _status_recv(rec, status, method, loaded),
    ]


def _on_isend(rec, comm, method, named, status, dumped, loaded):
    request = next(rec._requests)
    sent = _sent(rec, method, named, "buf", dumped)
    return [
        (ISEND, named["dest"], named.get("tag", 0), sent, 0, 0, request),
        (ISEND_COMPLETE, UNDEFINED, 0, 0, 0, 0, request),
    ]


def _on_irecv(rec, comm, method, named, status, dumped, loaded):
    return []


def _on_collective(rec, comm, method, named, status, dumped, loaded):
    root = named.get("root", UNDEFINED)
    MPI = rec.MPI
    if method[0].islower():
        sent, received = dumped, loaded
    elif method == "Bcast":
        size = nbytes(MPI, named.get("buf"))
        me = comm.Get_rank()
        sent, received = (size, 0) if me == root else (0, size)
    else:
        send = named.get("sendbuf")
        recv = named.get("recvbuf")
        received = nbytes(MPI, recv)
        sent = received if send is MPI.IN_PLACE else nbytes(MPI, send)
    op = COLLECTIVE_OPS[method]
    return [
        (COLL_BEGIN, UNDEFINED, 0, 0, 0, 0, 0),
        (COLL_END, root, 0, sent, received, op, 0),
    ]


def _handler(method: str) -> Callable:
    if method in SENDS:
        return _on_send
    if method in RECVS:
        return _on_recv
    if method in SENDRECVS:
        return _on_sendrecv
    if method in ISENDS:
        return _on_isend
    if method in IRECVS:
        return _on_irecv
    return _on_collective


METHODS = (*SENDS, *RECVS, *SENDRECVS, *ISENDS, *IRECVS, *COLLECTIVE_OPS)

_active: Recorder | None = None
_traced_class: type | None = None


def _method(base_cls: type, method: str) -> Callable:
    base = getattr(base_cls, method)
    params = list(inspect.signature(base).parameters)[1:]  # after self
    status_at = params.index("status") if "status" in params else -1
    handler = _handler(method)

    def traced(self, *args, **kwargs):
        rec = _active
        if rec is None:
            return base(self, *args, **kwargs)
        named = dict(zip(params, args))
        named.update(kwargs)
        return rec.call(self, method, base, handler, status_at, args, kwargs, named)

    traced.__name__ = method
    traced.__qualname__ = f"TracedIntracomm.{method}"
    traced.__doc__ = base.__doc__
    return traced


def traced_class(MPI: Any) -> type:
    """``MPI.Intracomm`` with every method of ``METHODS`` traced (made once per process)."""
    global _traced_class
    if _traced_class is None:
        methods = {m: _method(MPI.Intracomm, m) for m in METHODS if hasattr(MPI.Intracomm, m)}
        _traced_class = type("Intracomm", (MPI.Intracomm,), {**methods, "__module__": __name__})
    return _traced_class


def _pickle_hooks(rec: Recorder, MPI: Any) -> None:
    protocol = MPI.pickle.PROTOCOL

    def dumps(obj: Any, protocol: int | None = protocol, *rest: Any) -> bytes:
        data = pickle.dumps(obj, protocol)
        active = _active
        if active is not None:
            active.dumped += len(data)
        return data

    def loads(data: Any, *rest: Any) -> Any:
        active = _active
        if active is not None:
            active.loaded += memoryview(data).nbytes
        return pickle.loads(data)

    MPI.pickle.__init__(dumps, loads, protocol)


def install(measurement: Any) -> Recorder | None:
    """Trace mpi4py's communication in this process from now on (None: mpi4py is not
    imported, so no cell can communicate through it)."""
    global _active
    import sys

    MPI = sys.modules.get("mpi4py.MPI")
    if MPI is None:
        return None
    cls = traced_class(MPI)
    for name in ("COMM_WORLD", "COMM_SELF"):
        comm = getattr(MPI, name)
        if type(comm) is not cls:
            setattr(MPI, name, cls(comm))
    rec = Recorder(measurement, MPI)
    _pickle_hooks(rec, MPI)
    _active = rec
    return rec


def stop() -> Recorder | None:
    """Stop recording (the traced communicators pass calls straight through)."""
    global _active
    rec, _active = _active, None
    return rec


def is_mpi_value(value: Any) -> bool:
    """mpi4py's module and objects (and the traced communicators): they belong to the
    rank's MPI library and never travel to the kernel, which must not initialise MPI."""
    import types

    if isinstance(value, types.ModuleType):
        return value.__name__.split(".")[0] == "mpi4py"
    kind = value if isinstance(value, type) else type(value)
    module = getattr(kind, "__module__", "") or ""
    return module.split(".")[0] == "mpi4py" or module == __name__
