"""The writer side for N ranks: one OTF2 archive of an MPI run's processes, with MPI events,
and the CUBE4 system tree of its processes.

``write_otf2_ranks(locations, regions, comms, exp_dir)`` writes what ``otf2_writer`` writes
for one process, laid out as Score-P lays out an MPI run:

- system tree ``machine Linux`` -> ``node <host>`` per host -> one PROCESS location group
  ``MPI Rank <r>`` per rank -> its CPU_THREAD locations (named as in its recording);
- regions as in ``otf2_writer``; the regions of MPI calls (``mpi_roles``: name -> role
  word of ``measure.mpi_calls``) get paradigm MPI and the OTF2 role of their kind
  (POINT2POINT, BARRIER, COLL_ONE2ALL, COLL_ALL2ONE, COLL_ALL2ALL, COLL_OTHER), as
  Score-P's MPI adapter writes them;
- MPI definitions: paradigm MPI; one COMM_LOCATIONS group (paradigm MPI) holding each
  rank's first location in rank order (Score-P's "MPI locations": a rank's MPI events are
  on its master thread), and per communicator a COMM_GROUP of its members' world ranks and
  a Comm definition (``MPI_COMM_WORLD`` ...);
- threads (``formats.otf2_threads``): where a thread but a rank's master has a ``span``,
  PARADIGM PTHREAD, one GROUP "PTHREAD" of every rank's thread locations and per rank its
  own GROUP "SCOREP_GROUP_PTHREAD" and COMM ""; such a thread's THREAD_BEGIN (ThreadId =
  its native id) comes first and its THREAD_END last, as Score-P's pthread adapter writes
  them under ``--mpp=mpi --thread=pthread``;
- events: per location its enters and leaves, and where it made MPI calls the MpiSend /
  MpiRecv / MpiIsend / MpiIsendComplete / MpiCollectiveBegin / MpiCollectiveEnd records
  between the call's Enter and Leave (peer as the rank in the communicator, tag, bytes).
  Locations without MPI events are encoded with numpy (``_otf2_encode``), master threads
  with MPI events too (``otf2_mpi_encode``: the same bytes), the others (a thread with
  THREAD_BEGIN, engine "libotf2") go through libotf2 once per event (``_otf2_fast``'s
  binding, plus the MPI calls bound here).

Times are epoch ns already aligned across ranks (``mpi.merge`` aligns them).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from otf2.enums import (
    GroupFlag,
    GroupType,
    LocationGroupType,
    LocationType,
    Paradigm,
    ParadigmClass,
    RegionRole,
    SystemTreeDomain,
)

from scorep_kernel import experiment
from scorep_kernel.formats import CREATOR, _otf2_encode, _otf2_fast, otf2_threads
from scorep_kernel.formats.callpath import unique_location_names, writer_role
from scorep_kernel.formats.cube_writer import _text
from scorep_kernel.formats.otf2_writer import (
    ARCHIVE_NAME,
    CHUNK_SIZE_EVENTS,
    PARADIGM_NAMES,
    REGION_ROLES,
    TIMER_RESOLUTION,
    _ClockedWriter,
    define_region,
)
from scorep_kernel.formats.recording import Region, ThreadEvents
from scorep_kernel.mpi import otf2_mpi_encode as mpi_encode
from scorep_kernel.mpi.common import RANK_GROUP_NAME

# event kinds (measure.mpi_calls)
SEND, RECV, ISEND, ISEND_COMPLETE, IRECV_REQUEST, IRECV, COLL_BEGIN, COLL_END = range(1, 9)
MPI_ROLES = {
    "point2point": RegionRole.POINT2POINT,
    "barrier": RegionRole.BARRIER,
    "coll_one2all": RegionRole.COLL_ONE2ALL,
    "coll_all2one": RegionRole.COLL_ALL2ONE,
    "coll_all2all": RegionRole.COLL_ALL2ALL,
    "coll_other": RegionRole.COLL_OTHER,
}


@dataclass
class MpiEvents:
    """The MPI events of one location: each goes right before event ``before`` of the
    location's enter/leave stream (so between a call's Enter and Leave)."""

    before: np.ndarray  # int64
    time: np.ndarray  # int64 epoch ns
    kind: np.ndarray
    comm: np.ndarray  # index into the run's communicators
    peer: np.ndarray
    tag: np.ndarray
    nbytes: np.ndarray
    nbytes_recv: np.ndarray
    op: np.ndarray
    request: np.ndarray

    def __len__(self) -> int:
        return int(self.before.shape[0])


@dataclass
class RankLocation:
    rank: int
    hostname: str
    thread: ThreadEvents  # times: epoch ns; regions: indices into the run's regions
    mpi: MpiEvents | None = None


def _bind(name: str, *argtypes):
    fn = getattr(_otf2_fast._lib, name)
    fn.argtypes = list(argtypes)
    fn.restype = ctypes.c_int
    return fn


_P, _U8, _U32, _U64 = ctypes.c_void_p, ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint64
_mpi_send = _bind("OTF2_EvtWriter_MpiSend", _P, _P, _U64, _U32, _U32, _U32, _U64)
_mpi_recv = _bind("OTF2_EvtWriter_MpiRecv", _P, _P, _U64, _U32, _U32, _U32, _U64)
_mpi_isend = _bind("OTF2_EvtWriter_MpiIsend", _P, _P, _U64, _U32, _U32, _U32, _U64, _U64)
_mpi_isend_complete = _bind("OTF2_EvtWriter_MpiIsendComplete", _P, _P, _U64, _U64)
_mpi_irecv_request = _bind("OTF2_EvtWriter_MpiIrecvRequest", _P, _P, _U64, _U64)
_mpi_irecv = _bind("OTF2_EvtWriter_MpiIrecv", _P, _P, _U64, _U32, _U32, _U32, _U64, _U64)
_coll_begin = _bind("OTF2_EvtWriter_MpiCollectiveBegin", _P, _P, _U64)
_coll_end = _bind("OTF2_EvtWriter_MpiCollectiveEnd", _P, _P, _U64, _U8, _U32, _U32, _U64, _U64)


def _write_mpi(addr: int, ev: MpiEvents, i: int, comm_refs: list[int]) -> int:
    t, kind, comm = int(ev.time[i]), int(ev.kind[i]), comm_refs[int(ev.comm[i])]
    peer, tag = int(ev.peer[i]) & 0xFFFFFFFF, int(ev.tag[i]) & 0xFFFFFFFF
    size, request = int(ev.nbytes[i]), int(ev.request[i])
    if kind == SEND:
        return _mpi_send(addr, None, t, peer, comm, tag, size)
    if kind == RECV:
        return _mpi_recv(addr, None, t, peer, comm, tag, size)
    if kind == ISEND:
        return _mpi_isend(addr, None, t, peer, comm, tag, size, request)
    if kind == ISEND_COMPLETE:
        return _mpi_isend_complete(addr, None, t, request)
    if kind == IRECV_REQUEST:
        return _mpi_irecv_request(addr, None, t, request)
    if kind == IRECV:
        return _mpi_irecv(addr, None, t, peer, comm, tag, size, request)
    if kind == COLL_BEGIN:
        return _coll_begin(addr, None, t)
    if kind == COLL_END:
        return _coll_end(addr, None, t, int(ev.op[i]), comm, peer, size, int(ev.nbytes_recv[i]))
    raise ValueError(f"unknown MPI event kind {kind}")


class _EnterLeave:
    """One location's enters and leaves through libotf2 in pieces, between its MPI events:
    converted to Python lists once, so a piece (the ~100 events between two MPI calls) is
    list slices and its ctypes calls, ~1 µs per event here (benchmarks/mpi_cell.py)."""

    def __init__(self, addr: int, times, refs, kinds, where: str):
        self.addr, self.where = addr, where
        self.times = np.asarray(times, np.int64).tolist()
        self.refs = np.asarray(refs, np.int64).tolist()
        calls = (_otf2_fast._leave, _otf2_fast._enter)
        self.calls = list(map(calls.__getitem__, (np.asarray(kinds) != 0).tolist()))
        self.done = 0

    def write_until(self, end: int) -> None:
        a = self.done
        if end <= a:
            return
        n = end - a
        codes = list(
            map(
                _otf2_fast._call,
                self.calls[a:end],
                itertools.repeat(self.addr, n),
                itertools.repeat(None, n),
                self.times[a:end],
                self.refs[a:end],
            )
        )
        if any(codes):
            _otf2_fast._check(codes, self.where)
        self.done = end


def _write_with_mpi(
    addr: int, times, refs, kinds, ev: MpiEvents | None, comm_refs: list[int], where: str
) -> int:
    """A location's enters and leaves through libotf2 with its MPI events between them;
    the number of events written."""
    segments = _EnterLeave(addr, times, refs, kinds, where)
    order: Any = np.argsort(ev.before, kind="stable") if ev is not None else []
    for i in order:
        assert ev is not None
        segments.write_until(int(ev.before[i]))
        _otf2_fast._check([_write_mpi(addr, ev, int(i), comm_refs)], where)
    n = len(segments.times)
    segments.write_until(n)
    return n + (len(ev) if ev is not None else 0)


def _clock(locations: list[RankLocation]) -> tuple[int, int, int]:
    firsts = [int(x.thread.times[0]) for x in locations if len(x.thread)]
    lasts = [int(x.thread.times[-1]) for x in locations if len(x.thread)]
    spans = [x.thread.span for x in locations if x.thread.span is not None]
    firsts += [s.begin_ns for s in spans]
    lasts += [s.end_ns for s in spans]
    lo = min(firsts, default=time.time_ns())
    hi = max(lasts, default=lo)
    return lo, hi - lo, lo


def write_otf2_ranks(
    locations: list[RankLocation],
    regions: list[Region],
    comms: list[tuple[str, tuple[int, ...]]],
    mpi_roles: dict[str, str],
    exp_dir: str | Path,
    *,
    engine: str = "fast",
    load: Callable[[RankLocation], RankLocation] | None = None,
) -> dict:
    """Write the run's ``traces.otf2``; ``{"events", "mpi_events", "seconds", "path"}``.

    ``engine`` "fast" encodes master threads with their MPI events with numpy
    (``otf2_mpi_encode``), "libotf2" writes those through libotf2 event by event (the
    bytes are the same). ``load``: where the locations are stubs (their rank, host, thread
    name and span, and the thread's first and last time for the clock), the location with
    its events, called just before it is written: a generated run's ranks are made one at
    a time, so that 100M events never sit in memory together."""
    if engine not in ("fast", "libotf2"):
        raise ValueError(f"engine must be 'fast' or 'libotf2', not {engine!r}")
    started = time.perf_counter()
    exp_dir = Path(exp_dir)
    anchor = exp_dir / experiment.OTF2_ANCHOR
    for existing in (anchor, exp_dir / experiment.OTF2_DEFS, exp_dir / experiment.OTF2_EVENTS_DIR):
        if existing.exists():
            raise FileExistsError(f"{existing} already exists: write into a fresh directory")
    writer = _ClockedWriter(
        str(exp_dir),
        archive_name=ARCHIVE_NAME,
        timer_resolution=TIMER_RESOLUTION,
        chunk_size_events=CHUNK_SIZE_EVENTS,
    )
    writer.clock = _clock(locations)
    encoded: dict[Path, np.ndarray] = {}
    written: list[tuple[Path, Path]] = []
    events = mpi_events = 0
    with contextlib.closing(writer) as trace:
        trace.creator = CREATOR
        trace.machine_name = "Linux"
        defs = trace.definitions
        machine = defs.system_tree_node("Linux", class_name="machine")
        defs.system_tree_node_domain(machine, SystemTreeDomain.MACHINE)
        nodes: dict[str, object] = {}
        groups: dict[int, object] = {}
        for loc in locations:
            if loc.hostname not in nodes:
                node = defs.system_tree_node(loc.hostname or "localhost", class_name="node",
                                             parent=machine)  # fmt: skip
                defs.system_tree_node_domain(node, SystemTreeDomain.SHARED_MEMORY)
                nodes[loc.hostname] = node
            if loc.rank not in groups:
                groups[loc.rank] = defs.location_group(
                    RANK_GROUP_NAME.format(rank=loc.rank),
                    location_group_type=LocationGroupType.PROCESS,
                    system_tree_parent=nodes[loc.hostname],
                )
        by_rank: dict[int, list[RankLocation]] = {}
        for loc in locations:
            by_rank.setdefault(loc.rank, []).append(loc)
        otf2_locations = {}
        for rank, locs in by_rank.items():
            names = unique_location_names([x.thread.name for x in locs])
            for loc, name in zip(locs, names):
                otf2_locations[id(loc)] = defs.location(
                    name, type=LocationType.CPU_THREAD, group=groups[rank]
                )
        thread_defs = dict(zip(by_rank, otf2_threads.define_ranks(defs, [
            ([otf2_locations[id(x)] for x in locs], any(x.thread.span is not None for x in locs))
            for locs in by_rank.values()
        ])))  # fmt: skip
        # regions
        used = set()
        region_defs = []
        for index, r in enumerate(regions):
            if r.name in mpi_roles:
                role, paradigm = MPI_ROLES[mpi_roles[r.name]], Paradigm.MPI
            else:
                role, paradigm = writer_role(REGION_ROLES, index, r)
            used.add(paradigm)
            source = r.file or ("MPI" if paradigm == Paradigm.MPI else None)
            region_defs.append(define_region(defs, r, role, paradigm, source))
        paradigm_names = {**PARADIGM_NAMES, Paradigm.MPI: "MPI"}
        used.add(Paradigm.MPI)
        for paradigm in sorted(used, key=lambda p: p.value):
            defs.paradigm(paradigm, paradigm_names[paradigm], ParadigmClass.PROCESS)
        by_group: dict[str, list] = {}
        for r, region_def in zip(regions, region_defs):
            if r.group and region_def not in by_group.setdefault(r.group, []):
                by_group[r.group].append(region_def)
        for name, members in by_group.items():
            defs.group(name, group_type=GroupType.REGIONS, paradigm=Paradigm.USER,
                       group_flags=GroupFlag.NONE, members=members)  # fmt: skip
        # MPI: each rank's first location stands for the rank
        ranks = sorted(by_rank)
        comm_locations = [otf2_locations[id(by_rank[r][0])] for r in ranks]
        defs.group("", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI,
                   group_flags=GroupFlag.NONE, members=comm_locations)  # fmt: skip
        comm_refs = []
        for name, ranks_of_comm in comms:
            group = defs.group("", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                               group_flags=GroupFlag.NONE, members=list(ranks_of_comm))  # fmt: skip
            comm_refs.append(defs.comm(name, group=group)._ref)
        refs = np.asarray([d._ref for d in region_defs], dtype=np.int64)
        # events. Every event writer first: libotf2 allocates a buffer per writer, which
        # then takes pages nobody touched rather than those numpy's arrays of the ranks
        # before freed (1,024 generated ranks of 100M events: 5.3 GB of RSS otherwise).
        writers = [trace.event_writer_from_location(otf2_locations[id(x)]) for x in locations]
        for stub, event_writer in zip(locations, writers):
            location = otf2_locations[id(stub)]
            loc = load(stub) if load is not None else stub
            t = loc.thread
            times = np.asarray(t.times, np.int64)
            rrefs = refs[np.asarray(t.regions, np.int64)] if len(t) else np.zeros(0, np.int64)
            ev = loc.mpi
            tdefs = thread_defs[loc.rank]
            thread = otf2_threads.records(t, tdefs, 0)
            path = exp_dir / ARCHIVE_NAME / f"{location._ref}.evt"
            with_mpi = ev is not None and len(ev) > 0
            if not with_mpi and _otf2_encode.supported(times, rrefs, thread):
                encoded[path] = _otf2_encode.encode(
                    times, rrefs, t.kinds, CHUNK_SIZE_EVENTS, thread=thread
                )
                n = len(t) + (0 if thread is None else 2)
            elif (
                engine == "fast"
                and thread is None
                and (payload := mpi_encode.encode_location(
                    times, rrefs, t.kinds, ev, comm_refs, CHUNK_SIZE_EVENTS
                )) is not None
            ):  # fmt: skip
                # into a file of its own at once (libotf2 writes the location's empty event
                # file when the archive closes; this one replaces it then): a generated
                # run's 100M events are not kept until the end
                part = path.with_name(path.name + ".part")
                with open(part, "wb") as f:
                    f.write(payload.data)
                written.append((part, path))
                n = len(t) + (len(ev) if ev is not None else 0)
                mpi_events += len(ev) if ev is not None else 0
            else:
                addr = _otf2_fast.handle_address(event_writer)
                where = f"the events of rank {loc.rank}'s {t.name!r}"
                k = len(ev) if ev is not None else 0
                n = otf2_threads.around(
                    event_writer, thread, tdefs,
                    functools.partial(_write_with_mpi, addr, times, rrefs, t.kinds, ev,
                                      comm_refs, where),
                )  # fmt: skip
                mpi_events += k
            location._number_of_events_written = n
            events += n
    for path, payload in encoded.items():
        with open(path, "wb") as f:
            f.write(payload.data)
    for part, path in written:
        os.replace(part, path)
    return {
        "events": events,
        "mpi_events": mpi_events,
        "seconds": time.perf_counter() - started,
        "path": str(anchor),
    }


def cube_system_xml(processes: list[tuple[str, int, list[str]]]) -> str:
    """CUBE4's system tree for ``(host, rank, [location names])`` in the profile's column
    order: machine -> node per host (in order of first appearance) -> one location group
    per rank -> its threads. Ranks of one host must be adjacent (location ids are depth
    first)."""
    lines = [" <system>\n", '  <systemtreenode Id="0">\n', "   <name>Linux</name>\n",
             "   <class>machine</class>\n"]  # fmt: skip
    node_id = 0
    location_id = 0
    current: str | None = None
    for group_id, (host, rank, names) in enumerate(processes):
        if host != current:
            if current is not None:
                lines.append("   </systemtreenode>\n")
            node_id += 1
            lines += [f'   <systemtreenode Id="{node_id}">\n',
                      f"    <name>{_text(host or 'localhost')}</name>\n",
                      "    <class>node</class>\n"]  # fmt: skip
            current = host
        lines += [f'    <locationgroup Id="{group_id}">\n',
                  f"     <name>{_text(RANK_GROUP_NAME.format(rank=rank))}</name>\n",
                  f"     <rank>{int(rank)}</rank>\n", "     <type>process</type>\n"]  # fmt: skip
        for i, name in enumerate(names):
            lines.append(
                f'     <location Id="{location_id}">\n'
                f"      <name>{_text(name)}</name>\n"
                f"      <rank>{i}</rank>\n"
                f"      <type>thread</type>\n"
                f"     </location>\n"
            )
            location_id += 1
        lines.append("    </locationgroup>\n")
    if current is not None:
        lines.append("   </systemtreenode>\n")
    lines += ["  </systemtreenode>\n", " </system>\n"]
    return "".join(lines)
