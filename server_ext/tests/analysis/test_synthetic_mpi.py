"""The generated many-rank MPI run of the scale benchmark (synthetic_mpi.py), small: its
archive in Score-P's layout as the otf2 reader reads it, its messages in GET ranks'
matrix, and the slow ranks named by GET summary's imbalance verdict."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import otf2
import pytest
import synthetic_mpi as sm

from scorep_kernel import experiment as ex

pytestmark = pytest.mark.timeout(120)
RANKS = 16  # a 4 x 4 torus: four distinct neighbours each
SLOW = frozenset({5, 11})


@pytest.fixture
def run(jp_root_dir) -> tuple[Path, dict]:
    exp = Path(jp_root_dir) / "scorep-experiments" / "stencil"
    return exp, sm.write_mpi_experiment(exp, ranks=RANKS, events=40_000, slow=SLOW)


def test_the_archive_has_scorep_layout_and_mpi_records(run):
    exp, info = run
    steps = info["iterations"]
    assert steps == sm.iterations_for(40_000, RANKS) and steps > 30
    counts: dict[tuple[str, str], int] = {}
    sends: set[tuple[int, int]] = set()
    with otf2.reader.open(str(exp / ex.OTF2_ANCHOR)) as trace:
        defs = trace.definitions
        groups = [g for g in defs.location_groups if "PROCESS" in str(g.location_group_type)]
        assert [g.name for g in groups] == [f"MPI Rank {r}" for r in range(RANKS)]
        assert [loc.name for loc in defs.locations] == ["Master thread"] * RANKS
        nodes = {g.system_tree_parent.name for g in groups}
        assert len(nodes) == sm.NODES and all(n.startswith("node") for n in nodes)
        assert [c.name for c in defs.comms] == ["MPI_COMM_WORLD"]
        mpi_regions = {r.name for r in defs.regions if "MPI" in str(r.paradigm)}
        assert mpi_regions == {"MPI_Send", "MPI_Recv", "MPI_Allreduce"}
        for location, event in trace.events:
            key = (location.group.name, type(event).__name__)
            counts[key] = counts.get(key, 0) + 1
            if type(event).__name__ == "MpiSend":
                sender = int(location.group.name.split()[-1])
                sends.add((sender, event.receiver))
                assert event.msg_length == sm.HALO_BYTES
            if type(event).__name__ == "MpiCollectiveEnd":
                assert "ALLREDUCE" in str(event.collective_op)
    assert sum(counts.values()) == info["events"]
    for r in range(RANKS):
        g = f"MPI Rank {r}"
        assert counts[(g, "MpiSend")] == counts[(g, "MpiRecv")] == 4 * steps
        assert counts[(g, "MpiCollectiveBegin")] == counts[(g, "MpiCollectiveEnd")] == steps
        assert counts[(g, "Enter")] == 1 + (sm.FUNCTIONS + 9) * steps
    assert sends == {(r, n) for r in range(RANKS) for n in sm.neighbours(r, 4)}
    assert len(sends) == 4 * RANKS


async def test_the_matrix_and_the_verdict_name_the_slow_ranks(api, run):
    exp, info = run
    steps = info["iterations"]
    code, body = await api("ranks", path=str(exp), matrix="pairs")
    assert code == 200, body
    pairs = body["matrix"]["pairs"]
    assert body["matrix"]["size"] == RANKS and len(pairs["sender"]) == 4 * RANKS
    assert set(pairs["bytes"]) == {steps * sm.HALO_BYTES} and set(pairs["messages"]) == {steps}
    assert body["slowest_ranks"][:2] == sorted(SLOW)
    code, summary = await api("summary", path=str(exp))
    assert code == 200, summary
    imbalance = next(v for v in summary["verdicts"] if v["kind"] == "mpi")
    assert imbalance["numbers"]["slowest_ranks"][:2] == sorted(SLOW)
    assert "Slowest: ranks 5, 11" in imbalance["text"], imbalance["text"]


def _first_mpi_send(data: np.ndarray) -> int:
    """Where the first MpiSend record after a timestamp begins (its type byte)."""
    at = np.flatnonzero((data[:-11] == 0x05) & (data[9:-2] == 0x0E))
    assert at.size, "no MpiSend record"
    return int(at[0]) + 9


async def test_an_mpi_record_libotf2_refuses_gives_a_clear_refusal(api, run):
    """An MpiSend whose receiver is no uint32 (a count byte of 7): the timeline's index
    steps over the record and is built; GET ranks answers 422 naming the location."""
    exp, _info = run
    path = exp / ex.OTF2_EVENTS_DIR / "5.evt"
    data = np.fromfile(path, np.uint8)
    data[_first_mpi_send(data) + 2] = 7  # type, length byte, then the receiver's count
    data.tofile(path)
    code, body = await api("timeline", path=str(exp), width=300)
    assert code == 200, body
    code, body = await api("ranks", path=str(exp), matrix="pairs")
    assert code == 422, body
    assert "location 5" in body["message"], body
