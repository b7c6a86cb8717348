"""The ranks' recordings of a builtin MPI run as one OTF2 archive and one CUBE4 profile.

    python -m scorep_kernel.mpi.merge <experiment dir>
    python -m scorep_kernel.mpi.merge --serve        (directories on stdin, see serve)

Run by the kernel after an MPI run's reply (``mpi.run``), in a process of its own at
a low priority, as a subprocess worker writes its files. Input, under
``<experiment>/.ranks/``: ``rank<r>.pkl`` per rank (its Recording and its mpi4py calls,
``mpi.rank``) and ``ranks.json`` (the kernel's: each rank's host and clock map,
and the kernel's epoch offset). Output: ``traces.otf2`` (``mpi.otf2_ranks``),
``profile.cubex`` with a process per rank, the manifest's ``files`` and
``files_status``; ``.ranks/`` is removed once both files are written.

Clocks: a rank's times (its threads' events and their begins and ends, ``span``) are its
``perf_counter_ns``; ``kernel = slope * t + offset`` (from ranks.json: slope 1 and offset 0
for ranks on the kernel's host, which share its CLOCK_MONOTONIC) and the kernel's epoch
offset make them epoch ns on one clock.

MPI events: each of a rank's recorded calls is found in its thread's events as the Enter
of its region at the call's start time (both went through the same tracer-to-perf map, so
the times are equal); its events go between that Enter and the Leave right after it
(the call is a leaf: the tracer drops what mpi_calls' frames call). A call whose region was
filtered out (max_depth, the event cap) loses its events, and the manifest counts them.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from scorep_kernel import experiment
from scorep_kernel import manifest as mf
from scorep_kernel.formats.callpath import build_profile
from scorep_kernel.formats.cube_writer import write_cubex
from scorep_kernel.formats.recording import (
    ENTER,
    LEAVE,
    Recording,
    Region,
    ThreadEvents,
    ThreadSpan,
)
from scorep_kernel.measure.mpi_calls import AT_ENTER, RankMpi
from scorep_kernel.mpi.common import RANKS_DIR, RANKS_JSON
from scorep_kernel.mpi.otf2_ranks import (
    MpiEvents,
    RankLocation,
    cube_system_xml,
    write_otf2_ranks,
)

MATCH_NS = 1000  # a call and its Enter differ by rounding at most; 1 µs is generous


def _mapped(times: np.ndarray, clock: dict[str, float], epoch_offset: int) -> np.ndarray:
    slope, offset = float(clock.get("slope", 1.0)), float(clock.get("offset_ns", 0.0))
    t = np.asarray(times, np.int64)
    if slope == 1.0 and offset == 0.0:
        return t + np.int64(epoch_offset)
    return np.rint(slope * t.astype(np.float64) + offset).astype(np.int64) + np.int64(epoch_offset)


def _mapped_span(
    span: ThreadSpan | None, clock: dict[str, float], epoch_offset: int
) -> ThreadSpan | None:
    """A thread's begin and end on the run's clock, as its events are mapped."""
    if span is None:
        return None
    begin, end = _mapped(np.asarray([span.begin_ns, span.end_ns], np.int64), clock, epoch_offset)
    return ThreadSpan(int(begin), int(end))


def place_calls(
    thread: ThreadEvents, regions: list[Region], mpi: RankMpi, comm_map: list[int]
) -> tuple[MpiEvents | None, int]:
    """The MPI events of ``mpi``'s calls on this thread, placed in its event stream (rank
    times, before clock mapping), and how many calls were not found. Vectorised per MPI
    region: its Enters' times against the calls' start times (one searchsorted)."""
    mine = np.flatnonzero(mpi.call_thread == thread.thread_id)
    if not mine.size or not len(thread):
        return None, int(mine.size)
    by_name = {r.name: i for i, r in enumerate(regions)}
    kinds = np.asarray(thread.kinds)
    regs = np.asarray(thread.regions)
    times = np.asarray(thread.times, np.int64)
    n = len(times)
    enter_of = np.full(len(mpi.call_t0), -1, np.int64)  # per call: its Enter's index
    for name_index, name in enumerate(mpi.region_names):
        region = by_name.get(name)
        calls = mine[mpi.call_region[mine] == name_index]
        if region is None or not calls.size:
            continue
        at = np.flatnonzero((kinds == ENTER) & (regs == region))
        if not at.size:
            continue
        t0 = np.asarray(mpi.call_t0[calls], np.int64)
        j = np.searchsorted(times[at], t0)
        lo = np.clip(j - 1, 0, at.size - 1)
        hi = np.clip(j, 0, at.size - 1)
        d_lo, d_hi = np.abs(times[at[lo]] - t0), np.abs(times[at[hi]] - t0)
        best = np.where(d_hi < d_lo, hi, lo)
        ok = np.minimum(d_lo, d_hi) <= MATCH_NS
        enter_of[calls[ok]] = at[best[ok]]
    lost = int((enter_of[mine] < 0).sum())
    ev = np.flatnonzero(np.isin(mpi.ev_call, mine))
    ev = ev[enter_of[mpi.ev_call[ev]] >= 0]
    if not ev.size:
        return None, lost
    ev = ev[np.argsort(mpi.ev_call[ev], kind="stable")]  # a call's events in their order
    enter = enter_of[mpi.ev_call[ev]]
    leave = np.minimum(enter + 1, n - 1)
    leaf = (kinds[leave] == LEAVE) & (regs[leave] == regs[enter]) & (enter + 1 < n)
    leave = np.where(leaf, leave, enter)  # not a leaf after all: all right after the Enter
    kind = np.asarray(mpi.ev_kind[ev], np.int64)
    at_enter = np.isin(kind, list(AT_ENTER))
    comm = (
        np.asarray(comm_map, np.int64)[np.asarray(mpi.ev_comm[ev], np.int64)]
        if comm_map
        else (np.zeros(ev.size, np.int64))
    )
    return (
        MpiEvents(
            before=enter + 1,
            time=np.where(at_enter, times[enter], times[leave]),
            kind=kind,
            comm=comm,
            peer=np.asarray(mpi.ev_peer[ev], np.int64),
            tag=np.asarray(mpi.ev_tag[ev], np.int64),
            nbytes=np.asarray(mpi.ev_bytes[ev], np.int64),
            nbytes_recv=np.asarray(mpi.ev_bytes_recv[ev], np.int64),
            op=np.asarray(mpi.ev_op[ev], np.int64),
            request=np.asarray(mpi.ev_request[ev], np.int64),
        ),
        lost,
    )


def merge(exp_dir: str | os.PathLike) -> dict[str, Any]:
    """Write the run's files from its ranks' recordings; the manifest's changes."""
    exp_dir = Path(exp_dir)
    started = time.perf_counter()
    ranks_dir = exp_dir / RANKS_DIR
    info = json.loads((ranks_dir / RANKS_JSON).read_text())
    epoch_offset = int(info["epoch_offset_ns"])
    ranks_info = {int(r["rank"]): r for r in info["ranks"]}
    loaded: dict[int, dict] = {}
    errors: list[str] = []
    for r in sorted(ranks_info):
        path = ranks_dir / f"rank{r}.pkl"
        try:
            with open(path, "rb") as f:
                loaded[r] = pickle.load(f)
        except (OSError, pickle.UnpicklingError, EOFError) as e:
            errors.append(f"rank {r}'s recording is missing or damaged ({type(e).__name__}: {e})")
    if not loaded:
        raise RuntimeError("no rank left a recording: " + "; ".join(errors))
    t_loaded = time.perf_counter()
    # one region table and one communicator table for all ranks
    regions: list[Region] = []
    region_index: dict[Region, int] = {}
    comms: list[tuple[str, tuple[int, ...]]] = []
    comm_index: dict[tuple[str, tuple[int, ...]], int] = {}
    mpi_roles: dict[str, str] = {}
    # ranks of one host next to each other (CUBE4 numbers locations depth first)
    hosts: list[str] = []
    for r in sorted(loaded):
        host = ranks_info[r]["hostname"]
        if host not in hosts:
            hosts.append(host)
    order = sorted(loaded, key=lambda r: (hosts.index(ranks_info[r]["hostname"]), r))
    locations: list[RankLocation] = []
    processes: list[tuple[str, int, list[str]]] = []
    lost = 0
    for r in order:
        recording: Recording = loaded[r]["recording"]
        mpi: RankMpi | None = loaded[r].get("mpi")
        remap = np.asarray(
            [region_index.setdefault(reg, len(region_index)) for reg in recording.regions],
            dtype=np.int32,
        )
        comm_map = []
        if mpi is not None:
            for ident in mpi.comms:
                key = (ident[0], tuple(ident[1]))
                comm_map.append(comm_index.setdefault(key, len(comm_index)))
            mpi_roles.update(mpi.roles)
        clock = ranks_info[r].get("clock") or {}
        host = ranks_info[r]["hostname"]
        names = []
        threads = list(recording.threads)
        if not threads:  # a rank with nothing recorded still is a process of the run
            threads = [ThreadEvents("Master thread", 0, np.zeros(0, np.int64),
                                    np.zeros(0, np.int32), np.zeros(0, np.int8))]  # fmt: skip
        for thread in threads:
            events = None
            if mpi is not None:
                events, missed = place_calls(thread, recording.regions, mpi, comm_map)
                lost += missed
            mapped = ThreadEvents(
                name=thread.name,
                thread_id=thread.thread_id,
                times=_mapped(thread.times, clock, epoch_offset),
                regions=remap[np.asarray(thread.regions, np.int64)] if len(thread) else
                np.zeros(0, np.int32),
                kinds=np.asarray(thread.kinds, np.int8),
                span=_mapped_span(thread.span, clock, epoch_offset),
            )  # fmt: skip
            if events is not None:
                events.time = _mapped(events.time, clock, epoch_offset)
            locations.append(RankLocation(r, host, mapped, events))
            names.append(thread.name)
        processes.append((host, r, names))
    comms = sorted(comm_index, key=comm_index.__getitem__)
    regions = sorted(region_index, key=region_index.__getitem__)
    files: dict[str, str] = {}
    written = write_otf2_ranks(locations, regions, comms, mpi_roles, exp_dir)
    files["otf2"] = experiment.OTF2_ANCHOR
    t_otf2 = time.perf_counter()
    first = min((int(x.thread.times[0]) for x in locations if len(x.thread)), default=0)
    merged = Recording(
        regions=regions,
        threads=[x.thread for x in locations],
        clock_offset_ns=0,
        start_ns=first,
        end_ns=max((int(x.thread.times[-1]) for x in locations if len(x.thread)), default=first),
        hostname=hosts[0] if hosts else "",
        notes={"run_name": "MPI run"},
    )
    profile = build_profile(merged)
    write_cubex(merged, exp_dir / experiment.CUBEX, profile=profile,
                system=cube_system_xml(processes))  # fmt: skip
    files["cubex"] = experiment.CUBEX
    t_cube = time.perf_counter()
    mpi_calls = sum(len(loaded[r]["mpi"].call_t0) for r in loaded if loaded[r].get("mpi"))
    notes = {
        "ranks": len(loaded),
        "events": written["events"],
        "mpi_events": written["mpi_events"],
        "mpi_calls": mpi_calls,
        "mpi_calls_without_region": lost,
        "merge_seconds": {
            "load": round(t_loaded - started, 4),
            "traces.otf2": round(t_otf2 - t_loaded, 4),
            "profile.cubex": round(t_cube - t_otf2, 4),
        },
    }
    if lost:
        errors.append(
            f"{lost} MPI calls' events were left out: their regions were filtered out "
            "(max_depth, exclude, the event cap)"
        )
    for r in sorted(loaded):
        mpi = loaded[r].get("mpi")
        if mpi is not None and mpi.notes:
            errors += [f"rank {r}: {n}" for n in mpi.notes]
    return {"files": files, "notes": notes, "errors": errors}


def merge_files(exp_dir: Path) -> int:
    """Merge one experiment's ranks and note the outcome in its manifest; the exit status."""
    try:
        result = merge(exp_dir)
    except Exception as e:
        traceback.print_exc()
        tail = traceback.format_exc().strip().splitlines()[-3:]
        mf.update_manifest(
            exp_dir,
            files_status=mf.FILES_FAILED,
            errors=[f"merging the ranks' recordings failed: {type(e).__name__}: {e}", *tail],
        )
        return 1
    mf.update_manifest(
        exp_dir,
        files=result["files"],
        measurement={"merge": result["notes"]},
        files_status=mf.FILES_READY,
        **({"errors": result["errors"]} if result["errors"] else {}),
    )
    shutil.rmtree(exp_dir / RANKS_DIR, ignore_errors=True)
    return 0


def serve() -> int:
    """``--serve``: one experiment directory per line on stdin, its exit status per line
    on stdout (``mpi.kept_ranks``: MPI ranks kept up merge each cell's recordings here, so
    that a cell does not pay this module's imports, ~0.3 s of CPU, for the one before)."""
    for line in sys.stdin:
        if line.strip():
            print(merge_files(Path(line.strip())), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1:
        print("usage: python -m scorep_kernel.mpi.merge <experiment dir> | --serve",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        os.nice(10)  # the user's next cell comes first
    except OSError:
        pass
    if argv[0] == "--serve":
        return serve()
    return merge_files(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main())
