"""An MPI run's master threads with their MPI events, encoded with numpy
(``otf2_mpi_encode`` over ``formats._otf2_records``): byte for byte what libotf2 writes for
the same calls (``write_otf2_ranks(engine="libotf2")``), every MPI event kind the builtin
backend records, across the 1 MiB chunk boundaries, and read back by the otf2 reader."""

from __future__ import annotations

import numpy as np
import otf2

from scorep_kernel import experiment
from scorep_kernel.formats.recording import Region, ThreadEvents
from scorep_kernel.mpi import otf2_mpi_encode as enc
from scorep_kernel.mpi.otf2_ranks import MpiEvents, RankLocation, write_otf2_ranks

REGIONS = [Region("main", "m", "", 0), Region("work", "m", "", 1), Region("MPI_Send", "MPI"),
           Region("MPI_Allreduce", "MPI")]  # fmt: skip
ROLES = {"MPI_Send": "point2point", "MPI_Allreduce": "coll_all2all"}
KINDS = [enc.SEND, enc.RECV, enc.ISEND, enc.ISEND_COMPLETE, enc.IRECV_REQUEST, enc.IRECV,
         enc.COLL_BEGIN, enc.COLL_END]  # fmt: skip


def _rank(rank: int, calls: int, seed: int) -> RankLocation:
    """``calls`` calls in "main", every 7th an MPI call holding one MPI event of each kind
    in turn; some events share a time (no timestamp record before them)."""
    rng = np.random.default_rng(seed)
    step = rng.integers(0, 3, 2 * calls + 2).cumsum() * 50 + 1_000_000_000
    times = np.sort(step).astype(np.int64)
    regs = np.empty(2 * calls + 2, np.int32)
    kinds = np.empty(2 * calls + 2, np.int8)
    regs[0] = regs[-1] = 0
    kinds[0], kinds[-1] = 1, 0
    k = np.arange(calls)
    mpi = k % 7 == 3
    regs[1:-1:2] = regs[2:-1:2] = np.where(mpi, 2 + (k // 7) % 2, 1)
    kinds[1:-1:2], kinds[2:-1:2] = 1, 0
    calls_at = np.flatnonzero(mpi)
    kind = np.array(KINDS)[np.arange(calls_at.size) % len(KINDS)]
    n = calls_at.size
    ev = MpiEvents(
        before=2 + 2 * calls_at,  # right before the call's Leave, at its time
        time=times[2 + 2 * calls_at], kind=kind, comm=np.arange(n) % 2,
        peer=np.where(kind == enc.COLL_END, -1, (rank + 1 + np.arange(n)) % 3),
        tag=np.where(np.arange(n) % 5 == 0, -1, np.arange(n) % 300),
        nbytes=rng.integers(0, 2**40, n), nbytes_recv=rng.integers(0, 2**20, n),
        op=np.full(n, 11), request=np.arange(n) * 2**33,
    )  # fmt: skip
    return RankLocation(rank, "node", ThreadEvents("Master thread", 0, times, regs, kinds), ev)


def _write(tmp_path, engine: str, calls: int):
    exp = tmp_path / engine
    exp.mkdir()
    ranks = [_rank(r, calls, seed=r) for r in range(3)]
    comms = [("MPI_COMM_WORLD", (0, 1, 2)), ("MPI_COMM_SPLIT", (0, 2))]
    info = write_otf2_ranks(ranks, REGIONS, comms, ROLES, exp, engine=engine)
    files = {p.name: p.read_bytes() for p in sorted((exp / "traces").glob("*.evt"))}
    return exp, info, files


def test_encoded_mpi_locations_are_libotf2s_bytes_across_chunks(tmp_path):
    _, slow, expected = _write(tmp_path, "libotf2", calls=120_000)
    exp, fast, got = _write(tmp_path, "fast", calls=120_000)
    assert (fast["events"], fast["mpi_events"]) == (slow["events"], slow["mpi_events"])
    assert max(len(b) for b in expected.values()) > 2 * 1024 * 1024  # three chunks or more
    assert sorted(got) == sorted(expected) and len(got) == 3
    for name in expected:
        assert got[name] == expected[name], name
    assert not list((exp / "traces").glob("*.part"))


def test_encoded_mpi_events_read_back(tmp_path):
    exp, info, _ = _write(tmp_path, "fast", calls=70)
    seen: dict[str, int] = {}
    sends = []
    with otf2.reader.open(str(exp / experiment.OTF2_ANCHOR)) as trace:
        for location, event in trace.events:
            name = type(event).__name__
            seen[name] = seen.get(name, 0) + 1
            if name == "MpiSend" and location.group.name == "MPI Rank 0":
                sends.append((event.receiver, event.communicator.name, event.msg_tag))
    assert sum(seen.values()) == info["events"]
    # 10 MPI calls per rank, one event of each of the 8 kinds in turn
    assert seen["MpiSend"] == seen["MpiRecv"] == 3 * 2
    assert seen["MpiIsend"] == seen["MpiIrecv"] == seen["MpiCollectiveEnd"] == 3 * 1
    assert seen["Enter"] == seen["Leave"] == 3 * 71
    assert sends == [(1, "MPI_COMM_WORLD", 4294967295), (0, "MPI_COMM_WORLD", 8)]
