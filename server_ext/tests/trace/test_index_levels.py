"""The index's level columns written a block of locations at a time (index_levels) are the
columns of all locations merged at once, as the build wrote them before, array for array
and byte for byte."""

from __future__ import annotations

import numpy as np
import pytest
from synthetic_mpi import write_mpi_experiment

from jupyterlab_scorep.trace import index_build, index_levels, lod
from jupyterlab_scorep.trace.index_store import LoadedIndex

COLUMNS = ("start", "end", "region", "count", "ptr", "px", "layout")


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    # 12 ranks of ~5,000 calls, 2 slow ones: their levels differ from the others'
    exp = tmp_path_factory.mktemp("mpi") / "stencil"
    write_mpi_experiment(exp, ranks=12, events=120_000, slow=frozenset({3, 10}))
    return exp


def build(exp, out, monkeypatch, block_calls: int) -> LoadedIndex:
    monkeypatch.setattr(index_levels, "BLOCK_CALLS", block_calls)
    index_build.build_index(exp, out)
    return LoadedIndex(out / index_build.INDEX_NAME)


def at_once(index: LoadedIndex) -> lod.LevelTables:
    """The levels of all locations merged in one ``build_all_levels``, from the raw calls
    the index stores (each location's level 0), as the build merged them before."""
    raw = []
    for i in range(len(index.locations)):
        ptr = index.array(f"L{i}.ptr")
        n = int(ptr[0, -1])
        raw.append([index.array(f"L{i}.{c}")[:n] for c in ("start", "end", "region")])
        raw[-1].append(ptr[0].copy())
    cat = [np.concatenate([loc[k] for loc in raw]) for k in range(3)]
    return lod.build_all_levels(*cat, [loc[3] for loc in raw], index.meta["levels"])


@pytest.mark.parametrize("block_calls", [1, 12_000])  # a location a block; a few a block
def test_blocks_of_locations_write_the_columns_of_all_at_once(
    experiment, tmp_path, monkeypatch, block_calls
):
    whole = build(experiment, tmp_path / "whole", monkeypatch, 1 << 40)
    blocks = build(experiment, tmp_path / "blocks", monkeypatch, block_calls)
    calls = [loc["calls"] for loc in whole.locations]
    assert len(index_levels._blocks(calls, block_calls)) > 1
    expected = at_once(whole)
    layout = whole.array("layout")
    np.testing.assert_array_equal(layout[:, 0:2], expected.items)
    np.testing.assert_array_equal(layout[:, 2:5], expected.ptr_at)
    np.testing.assert_array_equal(layout[:, 5:7], expected.px_at)
    for name in COLUMNS[:-1]:
        got = whole.array(name)
        assert got.dtype == getattr(expected, name).dtype
        np.testing.assert_array_equal(got, getattr(expected, name))
    for name in COLUMNS:
        a, b = whole.array(name), blocks.array(name)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
        # and the files are np.save's own
        saved = tmp_path / f"{name}.npy"
        np.save(saved, np.asarray(a))
        assert (blocks.dir / f"{name}.npy").read_bytes() == saved.read_bytes()


def test_blocks_hold_whole_locations():
    assert index_levels._blocks([5, 5, 5, 20, 0, 1], 10) == [(0, 2), (2, 3), (3, 4), (4, 6)]
    assert index_levels._blocks([], 10) == []
