"""The generated many-rank MPI run of the scale benchmark (synthetic_mpi.py), small: its
archive in Score-P's layout as the otf2 reader reads it, its messages in GET ranks'
matrix, and the slow ranks named by GET summary's imbalance verdict."""

from __future__ import annotations

from pathlib import Path

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
