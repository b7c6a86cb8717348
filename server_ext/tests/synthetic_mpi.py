"""A synthetic MPI run of many ranks, written straight into an OTF2 archive in Score-P's
layout, for the scale benchmark (benchmarks/mpi_100m_events.py) and its tests.

No processes run and no recordings are merged: each rank's events are made with numpy
just before its event file is written (``write_otf2_ranks``'s ``load`` hook, through the
numpy encoder of ``otf2_mpi_encode``), so 1,024 ranks of 100M events take about a minute
and the memory of one rank at a time.

The layout is Score-P's for ``--mpp=mpi`` (and the builtin merge's): machine -> ``NODES``
nodes -> one PROCESS location group ``MPI Rank <r>`` per rank -> its "Master thread";
regions of paradigm MPI with their OTF2 roles; a COMM_LOCATIONS group of the ranks, a
COMM_GROUP and Comm ``MPI_COMM_WORLD``.

Each rank runs ``iterations`` steps of a 2-d stencil on a ``side`` x ``side`` torus of
ranks (rank = row * side + column), inside one cell region:

- ``FUNCTIONS`` compute calls of ``f<i>`` (enter/leave), taking ``COMPUTE`` of the step,
  ``SLOW_FACTOR`` times longer on the slow ranks (``slow``: by default the last
  ``SLOW_RANKS``), so that the imbalance verdict has ranks to name;
- a halo exchange: an ``MPI_Send`` to each of the 4 neighbours (MpiSend, ``HALO_BYTES``,
  tag 1), then an ``MPI_Recv`` from each (MpiRecv), Score-P's records between the call's
  Enter and Leave;
- an ``MPI_Allreduce`` (MpiCollectiveBegin, MpiCollectiveEnd: op ALLREDUCE, root
  undefined, 8 bytes sent and received) that every rank leaves at the step's end: the
  faster ranks wait in it.

Per step a rank writes 2 FUNCTIONS + 8 x 3 + 4 events (68 with 20 functions);
``iterations_for(events, ranks)`` gives the steps for a total.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf
from scorep_kernel.formats.recording import ROLE_CELL, Region, ThreadEvents
from scorep_kernel.mpi import otf2_mpi_encode as enc
from scorep_kernel.mpi.otf2_ranks import MpiEvents, RankLocation, write_otf2_ranks

FUNCTIONS = 20
STEP_NS = 1_000_000  # one step: 1 ms
COMPUTE = 0.5  # of the step, on a normal rank
SLOW_FACTOR = 1.5
SLOW_RANKS = 8
HALO_BYTES = 32_768
NODES = 16  # hosts: ranks in blocks of ranks / NODES
T0 = 1_000_000_000_000  # the run's first tick (epoch ns)
EVENTS_PER_STEP = 2 * FUNCTIONS + 8 * 3 + 4
_CALL = 1, 2, 3, 4  # region index of MPI_Send, MPI_Recv, MPI_Allreduce, f0
ROLES = {"MPI_Send": "point2point", "MPI_Recv": "point2point", "MPI_Allreduce": "coll_all2all"}


def iterations_for(events: int, ranks: int) -> int:
    """Steps per rank for about ``events`` events in all (each rank adds its cell's 2)."""
    return max(1, round((events / ranks - 2) / EVENTS_PER_STEP))


def regions() -> list[Region]:
    return [Region("cell [1]", "cell", "", 0, ROLE_CELL), Region("MPI_Send", "MPI"),
            Region("MPI_Recv", "MPI"), Region("MPI_Allreduce", "MPI")] + [
        Region(f"__main__:f{i}", "__main__", "stencil.py", 10 + i) for i in range(FUNCTIONS)
    ]  # fmt: skip


def neighbours(rank: int, side: int) -> list[int]:
    """Left, right, up, down on the torus (a rank may be its own neighbour when side <= 2)."""
    row, col = divmod(rank, side)
    return [row * side + (col - 1) % side, row * side + (col + 1) % side,
            ((row - 1) % side) * side + col, ((row + 1) % side) * side + col]  # fmt: skip


@dataclass(frozen=True)
class _Step:
    """One step's events as offsets from the step's start: the enter/leave stream and the
    MPI events (each before the stream's event ``before``)."""

    times: np.ndarray
    regions: np.ndarray
    kinds: np.ndarray
    mpi_before: np.ndarray
    mpi_times: np.ndarray
    mpi_kind: np.ndarray
    mpi_peer: np.ndarray
    mpi_bytes: np.ndarray


def _step(compute_ns: int, peers: list[int]) -> _Step:
    times, regs, kinds = [], [], []
    mpi: list[tuple[int, int, int, int, int]] = []  # before, time, kind, peer, bytes
    slot = compute_ns // FUNCTIONS
    for i in range(FUNCTIONS):
        times += [i * slot, i * slot + slot * 9 // 10]
        regs += [_CALL[3] + i] * 2
        kinds += [1, 0]
    t = compute_ns
    call = (STEP_NS - compute_ns) // 40  # a point-to-point call; the rest is the allreduce
    for region, kind in ((_CALL[0], enc.SEND), (_CALL[1], enc.RECV)):
        for peer in peers:
            times += [t, t + call - 1]
            regs += [region] * 2
            kinds += [1, 0]
            mpi.append((len(times) - 1, t + call // 2, kind, peer, HALO_BYTES))
            t += call
    times += [t, STEP_NS - 1]
    regs += [_CALL[2]] * 2
    kinds += [1, 0]
    mpi.append((len(times) - 1, t + 1, enc.COLL_BEGIN, 0, 0))
    mpi.append((len(times) - 1, STEP_NS - 2, enc.COLL_END, -1, 8))
    m = np.array(mpi, np.int64)
    return _Step(np.array(times, np.int64), np.array(regs, np.int32), np.array(kinds, np.int8),
                 m[:, 0], m[:, 1], m[:, 2], m[:, 3], m[:, 4])  # fmt: skip


def rank_location(rank: int, ranks: int, iterations: int, slow: frozenset[int]) -> RankLocation:
    """Rank ``rank``'s master thread and MPI events (epoch ns)."""
    side = math.isqrt(ranks)
    compute = int(STEP_NS * COMPUTE * (SLOW_FACTOR if rank in slow else 1.0))
    step = _step(compute, neighbours(rank, side) if side * side == ranks else
                 [(rank + 1) % ranks, (rank - 1) % ranks] * 2)  # fmt: skip
    starts = T0 + 1000 + STEP_NS * np.arange(iterations, dtype=np.int64)
    n, m = step.times.size, step.mpi_before.size
    times = np.empty(iterations * n + 2, np.int64)
    times[0], times[-1] = T0, T0 + 2000 + STEP_NS * iterations
    times[1:-1] = (starts[:, None] + step.times[None, :]).ravel()
    regs = np.zeros(times.size, np.int32)
    regs[1:-1] = np.tile(step.regions, iterations)
    kinds = np.zeros(times.size, np.int8)
    kinds[0] = 1
    kinds[1:-1] = np.tile(step.kinds, iterations)
    before = (1 + n * np.arange(iterations, dtype=np.int64)[:, None] + step.mpi_before).ravel()
    ev = MpiEvents(
        before=before,
        time=(starts[:, None] + step.mpi_times[None, :]).ravel(),
        kind=np.tile(step.mpi_kind, iterations), comm=np.zeros(iterations * m, np.int64),
        peer=np.tile(step.mpi_peer, iterations), tag=np.tile(np.where(step.mpi_kind <= enc.RECV,
                                                                      1, 0), iterations),
        nbytes=np.tile(step.mpi_bytes, iterations), nbytes_recv=np.tile(
            np.where(step.mpi_kind == enc.COLL_END, 8, 0), iterations),
        op=np.full(iterations * m, 11), request=np.zeros(iterations * m, np.int64),
    )  # fmt: skip
    return RankLocation(rank, host_of(rank, ranks), ThreadEvents("Master thread", 0, times,
                                                                 regs, kinds), ev)  # fmt: skip


def host_of(rank: int, ranks: int) -> str:
    per_node = max(1, -(-ranks // NODES))
    return f"node{rank // per_node:02d}"


def write_mpi_experiment(
    exp_dir: Path, ranks: int = 1024, events: int = 100_000_000, slow: frozenset[int] | None = None
) -> dict:
    """The experiment directory (manifest and OTF2 archive) of a run of ``ranks`` ranks and
    about ``events`` events; ``write_otf2_ranks``'s answer plus ``iterations``."""
    exp_dir = Path(exp_dir)
    exp_dir.mkdir(parents=True, exist_ok=True)
    iterations = iterations_for(events, ranks)
    slow = frozenset(range(ranks - SLOW_RANKS, ranks)) if slow is None else slow
    end = T0 + 2000 + STEP_NS * iterations
    stubs = [
        RankLocation(r, host_of(r, ranks), ThreadEvents(
            "Master thread", 0, np.array([T0, end], np.int64), np.zeros(2, np.int32),
            np.array([1, 0], np.int8)))
        for r in range(ranks)
    ]  # fmt: skip
    written = write_otf2_ranks(
        stubs, regions(), [("MPI_COMM_WORLD", tuple(range(ranks)))], ROLES, exp_dir,
        load=lambda stub: rank_location(stub.rank, ranks, iterations, slow),
    )  # fmt: skip
    hosts: dict[str, list[int]] = {}
    for r in range(ranks):
        hosts.setdefault(host_of(r, ranks), []).append(r)
    manifest = mf.new_manifest(exp_dir.name, backend="builtin", isolation="subprocess",
                               start_ns=T0)  # fmt: skip
    manifest["mpi"] = {"ranks": ranks, "hosts": hosts}
    manifest.update(
        status=mf.STATUS_OK, end_ns=end, wall_s=(end - T0) / 1e9,
        files={"otf2": ex.OTF2_ANCHOR}, files_status=mf.FILES_READY,
        measurement={"events": written["events"]},
    )  # fmt: skip
    mf.write_manifest(exp_dir, manifest)
    return {**written, "iterations": iterations}
