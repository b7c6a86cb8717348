"""GET timeline's ranks=lo:hi (the rows the panel has in view) and the heat map's numbers,
on a 12-rank run written by the kernel's N-rank OTF2 writer, the ranks written in a shuffled
order (the archive's locations are not in rank order):

    rank r: cell 0-10 ms; a function f 0.2-0.9 ms; MPI_Barrier (1 + r / 2) - 9 ms

so every share of the heat map follows from the times here."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest

from scorep_kernel import manifest as mf
from scorep_kernel.formats.recording import ROLE_CELL, ROLE_FUNCTION, Region, ThreadEvents
from scorep_kernel.measure import mpi_calls
from scorep_kernel.mpi.otf2_ranks import MpiEvents, RankLocation, write_otf2_ranks

pytestmark = pytest.mark.timeout(120)
MS = 1_000_000
T0 = 1_764_403_200_000_000_000
RANKS = 12
WRITTEN = [5, 0, 11, 3, 8, 1, 10, 6, 2, 9, 4, 7]  # the order the ranks are written in
REGIONS = [
    Region("cell [1]", "cell", "", 0, ROLE_CELL),
    Region("__main__:f", "__main__", "", 3, ROLE_FUNCTION),
    Region(mpi_calls.region_name("Barrier"), "MPI", "", 0, ROLE_FUNCTION),
]


def barrier(rank: int) -> tuple[int, int]:
    return int((1 + rank / 2) * MS), 9 * MS


def rank_thread(rank: int) -> ThreadEvents:
    b0, b1 = barrier(rank)
    rows = [(0, 0, 1), (int(0.2 * MS), 1, 1), (int(0.9 * MS), 1, 0)]
    rows += [(b0, 2, 1), (b1, 2, 0), (10 * MS, 0, 0)]
    t, r, k = zip(*rows)
    return ThreadEvents("Master thread", 1, T0 + np.array(t, np.int64),
                        np.array(r, np.int32), np.array(k, np.int8))  # fmt: skip


def no_messages() -> MpiEvents:
    z = np.zeros(0, np.int64)
    return MpiEvents(z, z, z, z, z, z, z, z, z, z)


@pytest.fixture
def run12(jp_root_dir) -> Path:
    exp = Path(jp_root_dir) / "scorep-experiments" / "mpi-12"
    exp.mkdir(parents=True)
    manifest = mf.new_manifest("mpi-12", backend="builtin", isolation="subprocess", cells=[])
    manifest.update(status="ok", files_status="ready", wall_s=0.01,
                    mpi={"ranks": RANKS, "hosts": {"a": list(range(RANKS))}})  # fmt: skip
    mf.write_manifest(exp, manifest)
    write_otf2_ranks(
        [RankLocation(r, "a", rank_thread(r), no_messages()) for r in WRITTEN],
        REGIONS,
        [("MPI_COMM_WORLD", tuple(range(RANKS)))],
        {REGIONS[2].name: mpi_calls.method_role("Barrier")},
        exp,
    )
    return exp


async def rank_of_location(api, exp: Path) -> dict[int, int]:
    code, body = await api("experiment", path=str(exp))
    assert code == 200, body
    return {loc["id"]: int(loc["group"].split()[-1]) for loc in body["trace"]["locations"]}


async def test_ranks_lo_hi_answers_those_ranks_rows_as_the_full_answer_has_them(api, run12):
    rank = await rank_of_location(api, run12)
    assert sorted(rank.values()) == list(range(RANKS))
    assert [rank[i] for i in sorted(rank)] != sorted(rank.values())  # not in rank order
    window = {"t0": 0, "t1": 10 * MS, "width": 400}
    code, full = await api("timeline", path=str(run12), **window)
    assert code == 200, full
    by_id = {loc["id"]: loc for loc in full["locations"]}
    code, part = await api("timeline", path=str(run12), ranks="3:7", **window)
    assert code == 200, part
    assert part["ranks"] == [3, 7]
    assert [rank[loc["id"]] for loc in part["locations"]] == [3, 4, 5, 6]
    for loc in part["locations"]:
        assert loc["rows"] == by_id[loc["id"]]["rows"]
        barrier_ref = [k for k, v in part["regions"].items() if v["name"] == REGIONS[2].name]
        depth1 = next(r for r in loc["rows"] if r["depth"] == 1)
        at = depth1["region"].index(int(barrier_ref[0]))
        assert (depth1["start"][at], depth1["end"][at]) == barrier(rank[loc["id"]])
    # past the last rank: the ranks there are
    code, tail = await api("timeline", path=str(run12), ranks="10:64", **window)
    assert code == 200 and tail["ranks"] == [10, 12]
    assert sorted(rank[loc["id"]] for loc in tail["locations"]) == [10, 11]
    code, none = await api("timeline", path=str(run12), ranks="20:30", **window)
    assert code == 200 and none["ranks"] == [12, 12] and none["locations"] == []


@pytest.mark.parametrize("bad", ["5:5", "7:3", "3", "a:b", "-1:4", "1:2:3"])
async def test_a_ranks_range_that_is_not_one_names_the_form(api, run12, bad):
    code, body = await api("timeline", path=str(run12), ranks=bad)
    assert code == 400
    assert f"ranks={bad!r} is not a range" in body["message"] and "lo:hi" in body["message"]


def expected_shares(ranks: list[int], t0: int, t1: int, columns: int) -> np.ndarray:
    """Share of the ranks' time in MPI per column, from the times the run was written with."""
    edges = np.clip(np.linspace(t0, t1, columns + 1).round(), 0, 10 * MS)
    widths = np.maximum(np.diff(np.linspace(t0, t1, columns + 1).round()), 1)
    busy = np.zeros(columns)
    for r in ranks:
        b0, b1 = barrier(r)
        busy += np.clip(np.minimum(edges[1:], b1) - np.maximum(edges[:-1], b0), 0, None)
    return busy / len(ranks) / widths


@pytest.mark.parametrize("how", ["binned", "searched"])
async def test_the_heat_map_shares_are_the_ranks_mpi_time_in_each_column(
    api, run12, monkeypatch, how
):
    """Windows inside, across and outside the run, columns narrower and wider than the
    calls; per row its ranks in rank order. Both ways busy_time sums a window: binning
    its intervals, and searching each row's sorted starts and ends (a window with more
    intervals than grid cells)."""
    from jupyterlab_scorep.trace import busy_time

    monkeypatch.setattr(busy_time, "SEARCH_ABOVE", 1e18 if how == "binned" else -1.0)
    rank = await rank_of_location(api, run12)
    rng = np.random.default_rng(5)
    for t0, t1, width, rows, ranks in [
        (0, 10 * MS, 40, 3, None),
        (-2 * MS, 12 * MS, 56, 5, None),
        (int(3.7 * MS), int(3.9 * MS), 30, 2, "2:10"),
        (int(9.5 * MS), 11 * MS, 20, 1, "0:12"),
        *[
            (int(a), int(a + s), int(rng.integers(2, 300)), int(rng.integers(1, 6)), None)
            for a, s in zip(rng.uniform(-MS, 10 * MS, 6), rng.uniform(1e3, 8 * MS, 6))
        ],
    ]:
        code, body = await api("timeline", path=str(run12), t0=t0, t1=t1, width=width,
                               rows=rows, ranks=ranks)  # fmt: skip
        assert code == 200, body
        heat = body["heatmap"]
        lo, hi = (0, RANKS) if ranks is None else map(int, ranks.split(":"))
        per = -(-(hi - lo) // rows)
        buckets = [list(range(a, min(a + per, hi))) for a in range(lo, hi, per)]
        assert [[rank[i] for i in row["locations"]] for row in heat["rows"]] == buckets
        assert [row["groups"] for row in heat["rows"]] == [
            [f"MPI Rank {r}" for r in b] for b in buckets
        ]
        columns = heat["columns"]
        got = np.frombuffer(base64.b64decode(heat["mpi"]), np.uint8).reshape(-1, columns)
        want = np.array([expected_shares(b, t0, t1, columns) for b in buckets])
        assert np.abs(got.astype(int) - np.round(255 * want)).max() <= 1, (t0, t1, width)
        active = np.frombuffer(base64.b64decode(heat["active"]), np.uint8).reshape(-1, columns)
        inside = expected_shares_cell(t0, t1, columns)
        assert np.abs(active.astype(int) - np.round(255 * inside)[None, :]).max() <= 1


def expected_shares_cell(t0: int, t1: int, columns: int) -> np.ndarray:
    """Share of every rank's time in its cell (0-10 ms: the run's whole range)."""
    raw = np.linspace(t0, t1, columns + 1).round()
    edges = np.clip(raw, 0, 10 * MS)
    return np.diff(edges) / np.maximum(np.diff(raw), 1)
