"""GET ranks and the MPI verdicts of GET summary, on a two-rank run written by the kernel's
N-rank writer with times chosen by hand, so every number follows from the events here:

    rank 0: cell 0-10 ms; Send 1-2 ms (800 bytes to rank 1, tag 7); Barrier 8-10 ms;
            after the cell a Barrier 11-15 ms (outside the cell: not counted)
    rank 1: cell 0-10 ms; Recv 0.5-2.5 ms; Barrier 4-10 ms

MPI time: rank 0 3 ms, rank 1 8 ms; compute 7 and 2 ms; load balance 4.5 / 7 = 0.643
(35.7 % imbalance), communication 11 of 20 ms (55 %)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorep_kernel import manifest as mf
from scorep_kernel.formats.recording import ROLE_CELL, ROLE_FUNCTION, Region, ThreadEvents
from scorep_kernel.measure import mpi_calls
from scorep_kernel.mpi.otf2_ranks import MpiEvents, RankLocation, write_otf2_ranks

pytestmark = pytest.mark.timeout(120)
MS = 1_000_000
T0 = 1_764_403_200_000_000_000
REGIONS = [
    Region("cell [3]", "cell", "", 0, ROLE_CELL),
    Region(mpi_calls.region_name("Send"), "MPI", "", 0, ROLE_FUNCTION),
    Region(mpi_calls.region_name("Recv"), "MPI", "", 0, ROLE_FUNCTION),
    Region(mpi_calls.region_name("Barrier"), "MPI", "", 0, ROLE_FUNCTION),
]
ROLES = {
    REGIONS[i].name: mpi_calls.method_role(m) for i, m in ((1, "Send"), (2, "Recv"), (3, "Barrier"))
}


def thread(calls: list[tuple[int, float, float]], after=()) -> ThreadEvents:
    """The cell (region 0, 0-10 ms) around leaf calls (region, start ms, end ms), then
    top-level calls ``after`` it."""
    rows = [(T0, 0, 1)]
    for region, a, b in calls:
        rows += [(T0 + int(a * MS), region, 1), (T0 + int(b * MS), region, 0)]
    rows.append((T0 + 10 * MS, 0, 0))
    for region, a, b in after:
        rows += [(T0 + int(a * MS), region, 1), (T0 + int(b * MS), region, 0)]
    t, r, k = zip(*rows)
    return ThreadEvents("Master thread", 1, np.array(t, np.int64), np.array(r, np.int32),
                        np.array(k, np.int8))  # fmt: skip


def events(before, time, kind, peer, tag, nbytes) -> MpiEvents:
    a = lambda v: np.asarray(v, np.int64)
    zeros = np.zeros(len(before), np.int64)
    return MpiEvents(a(before), a(time), a(kind), zeros, a(peer), a(tag), a(nbytes), zeros,
                     zeros, zeros)  # fmt: skip


def write_mpi_run(exp: Path) -> Path:
    exp.mkdir(parents=True)
    manifest = mf.new_manifest("mpi-run", backend="builtin", isolation="subprocess", cells=[])
    manifest.update(status="ok", files_status="ready", wall_s=0.01,
                    mpi={"ranks": 2, "hosts": {"a": [0, 1]}})  # fmt: skip
    mf.write_manifest(exp, manifest)
    # after the cell, a Barrier as MPI_Finalize would be: no communication of the cell's
    r0 = thread([(1, 1, 2), (3, 8, 10)], after=[(3, 11, 15)])
    r1 = thread([(2, 0.5, 2.5), (3, 4, 10)])
    ev0 = events([2], [T0 + MS], [mpi_calls.SEND], [1], [7], [800])
    ev1 = events([2], [T0 + int(2.5 * MS)], [mpi_calls.RECV], [0], [7], [800])
    write_otf2_ranks(
        [RankLocation(0, "a", r0, ev0), RankLocation(1, "a", r1, ev1)],
        REGIONS,
        [("MPI_COMM_WORLD", (0, 1))],
        ROLES,
        exp,
    )
    return exp


@pytest.fixture
def mpi_run(jp_root_dir) -> Path:
    return write_mpi_run(Path(jp_root_dir) / "scorep-experiments" / "mpi-run")


async def test_ranks_gives_time_per_rank_imbalance_and_the_matrix(api, mpi_run):
    code, body = await api("ranks", path=str(mpi_run))
    assert code == 200, body
    rows = body["ranks"]
    assert [(r["rank"], r["name"]) for r in rows] == [(0, "MPI Rank 0"), (1, "MPI Rank 1")]
    assert [r["cell_s"] for r in rows] == pytest.approx([0.010, 0.010])
    assert [r["mpi_s"] for r in rows] == pytest.approx([0.003, 0.008])
    assert [r["compute_s"] for r in rows] == pytest.approx([0.007, 0.002])
    assert body["load_balance"] == pytest.approx(4.5 / 7, abs=1e-4)
    assert body["imbalance_pct"] == pytest.approx(100 * (1 - 4.5 / 7), abs=0.01)
    assert body["slowest_rank"] == 0
    assert body["communication_share"] == pytest.approx(0.55)
    assert body["matrix"] == {"bytes": [[0, 800], [0, 0]], "messages": [[0, 1], [0, 0]]}
    assert body["received"] == [{"bytes": 0, "messages": 0}, {"bytes": 800, "messages": 1}]
    assert rows[0]["bytes_sent"] == 800 and rows[1]["bytes_sent"] == 0
    assert body["mpi"]["ranks"] == 2


async def test_summary_names_imbalance_and_communication_share(api, mpi_run):
    code, body = await api("summary", path=str(mpi_run))
    assert code == 200, body
    mpi = [v for v in body["verdicts"] if v["kind"] == "mpi"]
    assert len(mpi) == 2 and all(v["level"] == "warning" for v in mpi)
    imbalance, share = mpi
    assert "rank 0 computes 0.007 s" in imbalance["text"] and "36 % imbalance" in imbalance["text"]
    assert imbalance["numbers"]["slowest_rank"] == 0
    assert "Communication takes 55 %" in share["text"]
    assert share["numbers"]["bytes_sent"] == 800


async def test_the_timeline_keeps_each_rank_in_its_group(api, mpi_run):
    code, body = await api("experiment", path=str(mpi_run))
    assert code == 200
    groups = [loc["group"] for loc in body["trace"]["locations"]]
    assert groups == ["MPI Rank 0", "MPI Rank 1"]


async def test_a_single_process_run_has_one_rank_and_no_mpi_verdicts(api, experiments):
    exp = experiments()
    code, body = await api("ranks", path=str(exp))
    assert code == 200
    assert len(body["ranks"]) == 1 and body["matrix"]["bytes"] == [[0]]
    code, summary = await api("summary", path=str(exp))
    assert not [v for v in summary["verdicts"] if v["kind"] == "mpi"]


async def test_the_timeline_summarises_ranks_that_do_not_fit_its_rows(api, mpi_run):
    """rows=1 puts both ranks in one bucket: per 1 ms column, the share of their time in
    calls (the cell: all of it) and in MPI calls (rank 0: 1-2, 8-10 ms; rank 1: 0.5-2.5,
    4-10 ms), 255 = 100 %."""
    import base64

    window = {"t0": 0, "t1": 10 * MS, "width": 20}
    code, body = await api("timeline", path=str(mpi_run), rows=1, **window)
    assert code == 200, body
    assert body["locations"] == [] and body["regions"] == {}
    heat = body["heatmap"]
    assert heat["rows"] == [{"locations": [0, 1], "groups": ["MPI Rank 0", "MPI Rank 1"]}]
    assert heat["columns"] == 10 and heat["column_ns"] == MS
    assert heat["encoding"] == "base64-uint8"
    assert list(base64.b64decode(heat["active"])) == [255] * 10
    mpi = [0.25, 1, 0.25, 0, 0.5, 0.5, 0.5, 0.5, 1, 1]
    assert list(base64.b64decode(heat["mpi"])) == [round(255 * v) for v in mpi]
    # rows enough for every rank (and without rows, as the panel asks): one row per rank
    for rows in ({"rows": 2}, {}):
        code, body = await api("timeline", path=str(mpi_run), **rows, **window)
        assert "heatmap" not in body and [loc["id"] for loc in body["locations"]] == [0, 1]
    code, body = await api("timeline", path=str(mpi_run), rows=0)
    assert code == 400 and "out of range" in body["message"]


def test_many_ranks_send_the_matrix_as_its_non_zero_pairs_and_name_the_slowest():
    from jupyterlab_scorep.analysis import ranks

    n = 65
    dense = [[0] * n for _ in range(n)]
    dense[3][4], dense[n - 1][0] = 800, 16
    messages = [[int(v > 0) for v in row] for row in dense]
    assert ranks.matrix_of({"bytes": dense, "messages": messages}) == {
        "bytes": dense,
        "messages": messages,
    }  # dense unless asked: the panel reads the dense form
    assert ranks.matrix_of({"bytes": dense, "messages": messages}, "pairs") == {
        "bytes": [],
        "messages": [],
        "size": n,
        "pairs": {"sender": [3, n - 1], "receiver": [4, 0], "bytes": [800, 16], "messages": [1, 1]},
    }
    small = {"bytes": [[0, 800], [0, 0]], "messages": [[0, 1], [0, 0]]}
    assert ranks.matrix_of(small) == small
    rows = [{"rank": r, "compute_s": 1.5 if r >= 8 else 1.0, "cell_s": 2.0, "mpi_s": 0.5,
             "bytes_sent": 0} for r in range(10)]  # fmt: skip
    body = {"ranks": rows, "imbalance_pct": 27.0, "load_balance": 0.73, "slowest_rank": 8,
            "slowest_ranks": [8, 9, 0, 1, 2], "communication_share": 0.25}  # fmt: skip
    imbalance = ranks.verdicts(body)[0]
    assert imbalance["numbers"]["slowest_ranks"] == [8, 9, 0, 1, 2]
    assert (
        "Slowest: ranks 8, 9, 0, 1, 2 (2 of 10 ranks within 5 % of the slowest)"
        in imbalance["text"]
    )


async def test_get_ranks_sends_the_matrix_as_pairs_only_when_asked(api, mpi_run):
    code, dense = await api("ranks", path=str(mpi_run))
    assert code == 200 and "pairs" not in dense["matrix"], dense["matrix"]
    code, pairs = await api("ranks", path=str(mpi_run), matrix="pairs")
    assert code == 200, pairs
    n = pairs["matrix"]["size"]
    rebuilt = [[0] * n for _ in range(n)]
    p = pairs["matrix"]["pairs"]
    for s, r, b in zip(p["sender"], p["receiver"], p["bytes"], strict=True):
        rebuilt[s][r] = b
    assert rebuilt == dense["matrix"]["bytes"] and any(map(any, rebuilt))
    code, body = await api("ranks", path=str(mpi_run), matrix="sparse")
    assert code == 400 and "matrix='sparse'" in body["message"] and "pairs" in body["message"]


def test_get_ranks_finds_the_pairs_once_per_index_and_keeps_them_with_it(tmp_path, monkeypatch):
    """The pairs are found in the dense matrix on the first GET ranks?matrix=pairs only:
    kept in the loaded index, stored in its directory for a restarted server, and found
    again once the trace changes (the index's freshness rule)."""
    import asyncio
    import os

    from jupyterlab_scorep.http import rank_routes
    from jupyterlab_scorep.http.service import Service
    from jupyterlab_scorep.trace import matrix_pairs
    from jupyterlab_scorep.trace.index_build import INDEX_NAME

    exp = write_mpi_run(tmp_path / "scorep-experiments" / "mpi-run")
    stored = exp / ".index" / INDEX_NAME / matrix_pairs.PAIRS_FILE
    found = []
    real_from_dense = matrix_pairs.from_dense
    monkeypatch.setattr(
        matrix_pairs, "from_dense", lambda *a: found.append(1) or real_from_dense(*a)
    )

    def ask(matrix):
        svc = Service(str(tmp_path), version="test")  # a server (re)started
        try:

            async def twice():
                first = await rank_routes.answer(svc.reads, str(exp), matrix)
                return first, await rank_routes.answer(svc.reads, str(exp), matrix)

            return asyncio.run(twice())
        finally:
            svc.shutdown()

    dense, _ = ask(None)
    first, second = ask("pairs")
    expected = {"sender": [0], "receiver": [1], "bytes": [800], "messages": [1]}
    assert dense["matrix"]["bytes"] == [[0, 800], [0, 0]]
    assert first["matrix"] == {"bytes": [], "messages": [], "size": 2, "pairs": expected}
    assert second == first and len(found) == 1 and stored.is_file()
    with np.load(stored) as f:
        assert [f[k].tolist() for k in expected] == [[0], [1], [800], [1]] and f["size"] == 2
    written = stored.stat().st_mtime_ns
    assert matrix_pairs.load(stored.parent, {"traces.otf2": [1, 2]}) is None  # another build's
    # a restarted server reads them from the index's directory
    first, _ = ask("pairs")
    assert first["matrix"]["pairs"] == expected and len(found) == 1
    assert stored.stat().st_mtime_ns == written
    # a changed trace: a new index, and the pairs are found again
    evt = next((exp / "traces").glob("*.evt"))
    os.utime(evt, ns=(evt.stat().st_atime_ns, evt.stat().st_mtime_ns + 10**9))
    first, second = ask("pairs")
    assert first["matrix"]["pairs"] == expected == second["matrix"]["pairs"]
    assert len(found) == 2 and stored.is_file()


def test_stored_pairs_are_read_only_by_their_index_and_never_when_damaged(tmp_path):
    from jupyterlab_scorep.trace import matrix_pairs

    sources = {"traces.otf2": [1, 2]}
    pairs = matrix_pairs.from_dense(
        [[0, 5, 0], [0, 0, 0], [7, 0, 0]], [[0, 1, 0], [0, 0, 0], [2, 0, 0]]
    )
    assert pairs.as_json() == {
        "sender": [0, 2],
        "receiver": [1, 0],
        "bytes": [5, 7],
        "messages": [1, 2],
    }
    assert matrix_pairs.load(tmp_path, sources) is None  # none stored
    assert matrix_pairs.save(tmp_path, sources, pairs)
    back = matrix_pairs.load(tmp_path, sources)
    assert back is not None and back.size == 3 and back.as_json() == pairs.as_json()
    assert matrix_pairs.load(tmp_path, {"traces.otf2": [1, 3]}) is None  # another build's
    stored = tmp_path / matrix_pairs.PAIRS_FILE
    whole = stored.read_bytes()
    for damaged in (whole[: len(whole) // 2], b"not a file of pairs"):
        stored.write_bytes(damaged)
        assert matrix_pairs.load(tmp_path, sources) is None
    assert [p.name for p in tmp_path.iterdir()] == [matrix_pairs.PAIRS_FILE]  # no temporaries
    assert not matrix_pairs.save(tmp_path / "gone", sources, pairs)


def _overlap_by_pairs(a, b) -> int:
    """The time in both sets of disjoint sorted intervals, pair by pair (the old loop)."""
    (s1, e1), (s2, e2) = a, b
    total, i, j = 0, 0, 0
    while i < s1.size and j < s2.size:
        total += max(0, int(min(e1[i], e2[j])) - int(max(s1[i], s2[j])))
        if e1[i] < e2[j]:
            i += 1
        else:
            j += 1
    return total


INTERVALS = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=25)


@settings(max_examples=300, deadline=None)
@given(a=INTERVALS, b=INTERVALS)
def test_the_time_in_both_is_what_walking_the_pairs_gives(a, b):
    """cells x MPI calls: the overlap of two unions of intervals (touching, nested, empty,
    zero-length ones among them), against walking both lists pair by pair."""
    from jupyterlab_scorep.analysis import ranks

    def union(rows):
        start = np.array([s for s, _ in rows], np.int64)
        return ranks._union(start, start + np.array([n for _, n in rows], np.int64))

    ua, ub = union(a), union(b)
    assert ranks._overlap(ua, ub) == _overlap_by_pairs(ua, ub) == ranks._overlap(ub, ua)
