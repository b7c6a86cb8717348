"""Level of detail: merging conserves calls, bounds the output per pixel, and the stored
levels answer like a merge of the raw calls would."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jupyterlab_scorep.trace import lod, timeline
from jupyterlab_scorep.trace.index_store import IndexCache, ensure_index

pytestmark = pytest.mark.timeout(120)


def disjoint_calls(rng, n, max_gap=50, max_len=200):
    gaps = rng.integers(0, max_gap, n)
    lens = rng.integers(0, max_len, n)
    start = np.cumsum(gaps + np.r_[0, lens[:-1]])
    return start.astype(np.int64), (start + lens).astype(np.int64)


@pytest.mark.parametrize("px", [1.5, 7.0, 64.0, 1000.0])
def test_merge_conserves_calls_and_time_order(px):
    rng = np.random.default_rng(int(px))
    start, end = disjoint_calls(rng, 5000)
    region = rng.integers(0, 5, start.size).astype(np.int32)
    count = np.ones(start.size, np.int32)
    seg = np.zeros(start.size, np.int64)
    out = lod.merge(start, end, region, count, seg, px, origin=0)
    assert out.count.sum() == start.size
    assert np.all(np.diff(out.start) >= 0) and np.all(out.start[1:] >= out.end[:-1])
    assert out.start[0] == start[0] and out.end.max() == end.max()
    # every call wider than a pixel survives unchanged
    wide = (end - start) >= px
    kept = set(zip(out.start.tolist(), out.end.tolist()))
    assert all((s, e) in kept for s, e in zip(start[wide].tolist(), end[wide].tolist()))
    # at most one merged span per pixel bucket plus the wide calls
    span = end.max() - start.min()
    assert len(out) <= wide.sum() + span / px + 2


def test_dominant_region_is_the_one_with_most_time():
    # in one pixel of 100 ns: region 1 for 10+10+10 ns, region 2 for 40 ns
    start = np.array([0, 12, 24, 40], np.int64)
    end = np.array([10, 22, 34, 80], np.int64)
    region = np.array([1, 1, 1, 2], np.int32)
    out = lod.merge(start, end, region, np.ones(4, np.int32), np.zeros(4, np.int64), 100, 0)
    assert out.start.tolist() == [0] and out.end.tolist() == [80]
    assert out.region.tolist() == [2] and out.count.tolist() == [4]


def test_segments_never_merge_across_depths():
    start = np.array([0, 5, 0, 5], np.int64)
    end = np.array([4, 9, 4, 9], np.int64)
    seg = np.array([0, 0, 1, 1], np.int64)
    out = lod.merge(start, end, np.zeros(4, np.int32), np.ones(4, np.int32), seg, 100, 0)
    assert out.segment.tolist() == [0, 1] and out.count.tolist() == [2, 2]


@pytest.fixture(scope="module")
def big_index(tmp_path_factory):
    from experiment_factory import write_experiment
    from test_otf2_read import RANDOM_REGIONS, random_thread

    exp = tmp_path_factory.mktemp("lod") / "exp"
    threads = [random_thread(7, "Master thread", 0, n_events=60_000, max_depth=6)]
    write_experiment(exp, threads=threads, regions=RANDOM_REGIONS, metrics=None, cubex=False)
    return IndexCache().get(ensure_index(str(exp)))


def raw_calls(index, loc=0):
    ptr = index.array(f"L{loc}.ptr")[0]
    depth = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    n = int(ptr[-1])
    return (
        np.asarray(index.array(f"L{loc}.start")[:n]),
        np.asarray(index.array(f"L{loc}.end")[:n]),
        np.asarray(index.array(f"L{loc}.region")[:n]),
        depth,
    )


def test_levels_are_stored_coarsening(big_index):
    px = big_index.array("L0.px")
    ptr = big_index.array("L0.ptr")
    assert len(px) >= 2 and np.all(np.diff(px) > 0)
    sizes = ptr[:, -1] - ptr[:, 0]
    assert np.all(np.diff(sizes) < 0)  # each stored level is smaller than the one below
    calls = int(sizes[0])
    for row in range(1, len(ptr)):
        a, b = ptr[row, 0], ptr[row, -1]
        assert big_index.array("L0.count")[a:b].sum() == calls


@pytest.mark.parametrize("zoom", [1, 3, 17, 200, 5000])
def test_query_accounts_for_every_call_in_the_window(big_index, zoom):
    start, end, region, depth = raw_calls(big_index)
    full = big_index.meta["range"][1]
    rng = np.random.default_rng(zoom)
    for _ in range(5):
        w = max(full // zoom, 10)
        t0 = int(rng.integers(0, max(full - w, 1)))
        t1 = t0 + w
        body = timeline.query(big_index, t0, t1, 800)
        rows = {r["depth"]: r for r in body["locations"][0]["rows"]}
        for d in range(depth.max() + 1):
            inside = (depth == d) & (end > t0) & (start < t1)
            got = sum(rows[d]["count"]) if d in rows else 0
            # spans from coarse levels may bring in neighbours of the window's edge calls
            assert got >= inside.sum()
            if body["px_ns"] < big_index.array("L0.px")[0]:
                assert got == inside.sum()  # the raw level: exact
        assert len(json.dumps(body)) < 1_000_000
        assert set(body["regions"]) == {str(r) for row in rows.values() for r in row["region"]}


def test_deep_zoom_returns_the_raw_calls(big_index):
    start, end, region, depth = raw_calls(big_index)
    i = len(start) // 2
    t0, t1 = int(start[i]), int(start[i]) + 5_000
    body = timeline.query(big_index, t0, t1, 5000)  # 1 ns per pixel: nothing merges
    got = sorted(
        (r["depth"], s, e, g)
        for r in body["locations"][0]["rows"]
        for s, e, g in zip(r["start"], r["end"], r["region"])
    )
    sel = (end > t0) & (start < t1)
    want = sorted(
        zip(depth[sel].tolist(), start[sel].tolist(), end[sel].tolist(), region[sel].tolist())
    )
    assert got == want


def random_location(rng, n_calls, depths):
    """Calls at ``depths`` depths, sorted by (depth, start), and their depth_ptr."""
    per_depth = [
        disjoint_calls(rng, int(n))
        for n in (rng.multinomial(n_calls, [1 / depths] * depths) if depths else [])
    ]
    start = np.concatenate([s for s, _ in per_depth]) if per_depth else np.zeros(0, np.int64)
    end = np.concatenate([e for _, e in per_depth]) if per_depth else np.zeros(0, np.int64)
    ptr = np.concatenate([[0], np.cumsum([s.size for s, _ in per_depth])]).astype(np.int64)
    region = rng.integers(0, 6, start.size).astype(np.int32)
    return start, end, region, ptr


def location_tables(t: lod.LevelTables, i: int):
    """Location i's (start, end, region, count, ptr, px) out of the concatenated tables."""
    a, n = t.items[i]
    p, rows, cols = t.ptr_at[i]
    q, m = t.px_at[i]
    cols_i = [c[a : a + n] for c in (t.start, t.end, t.region, t.count)]
    return (*cols_i, t.ptr[p : p + rows * cols].reshape(rows, cols), t.px[q : q + m])


def test_all_locations_at_once_are_each_location_alone():
    rng = np.random.default_rng(11)
    # calls dense and sparse, deep and flat, one location without calls, one with one call
    sizes = [(3000, 4), (200, 1), (0, 0), (1, 1), (5000, 7), (40, 2)]
    locs = [random_location(rng, n, d) for n, d in sizes]
    pixels = [8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 2000.0]
    cat = [np.concatenate([loc[k] for loc in locs]) for k in range(3)]
    together = lod.build_all_levels(*cat, [loc[3] for loc in locs], pixels)
    for i, loc in enumerate(locs):
        alone = lod.build_all_levels(*loc[:3], [loc[3]], pixels)
        for a, b in zip(location_tables(together, i), location_tables(alone, 0)):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_stored_levels_are_merges_of_the_level_below():
    rng = np.random.default_rng(5)
    start, end, region, depth_ptr = random_location(rng, 8000, 3)
    pixels = [4.0, 8.0, 16.0, 32.0, 64.0, 500.0, 4000.0]
    t = lod.build_all_levels(start, end, region, [depth_ptr], pixels)
    s, e, r, c, ptr, px = location_tables(t, 0)
    assert np.array_equal(ptr[0], depth_ptr) and px[-1] == pixels[-1]
    seg = np.repeat(np.arange(len(depth_ptr) - 1), np.diff(depth_ptr))
    cur = lod.Spans(start, end, region, np.ones(start.size, np.int32), seg)
    stored = iter(range(1, len(ptr)))
    for level_px in pixels:
        if level_px not in px:  # skipped: it would keep more than KEEP_RATIO of the table
            groups = lod._pixel_groups(cur.start, cur.end - cur.start, cur.segment, level_px, 0)
            assert groups[1].size > lod.KEEP_RATIO * len(cur)
            continue
        k = next(stored)
        want = lod.merge(cur.start, cur.end, cur.region, cur.count, cur.segment, level_px, 0)
        a, b = ptr[k, 0], ptr[k, -1]
        for got, expected in zip(
            (s[a:b], e[a:b], r[a:b], c[a:b]), (want.start, want.end, want.region, want.count)
        ):
            np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(
            ptr[k] - a, np.searchsorted(want.segment, np.arange(len(depth_ptr)))
        )
        cur = want
    assert next(stored, None) is None


def merges_equal(a: lod.Spans, b: lod.Spans) -> None:
    for name in ("start", "end", "region", "count", "segment"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.mark.parametrize("without_bitwise_count", [False, True])
def test_merge_finds_the_dominant_region_as_the_merge_before(monkeypatch, without_bitwise_count):
    """lod.merge against the merge before ``_group_dominant`` (lod_before, verbatim): ties
    of weight, regions repeated in a pixel, region ids equal modulo 32, pixels of more
    than 32 calls, and weights the packed maximum cannot hold (negative, >= 2**53)."""
    import lod_before

    if without_bitwise_count:  # numpy < 2
        monkeypatch.delattr(np, "bitwise_count")
    rng = np.random.default_rng(3)
    for trial in range(150):
        n = int(rng.integers(1, 2500))
        regions = int(rng.choice([1, 2, 5, 33, 64, 300]))
        gaps = rng.integers(0, 20, n)
        lens = rng.choice([0, 1, 2, 5, 10, 50, 400], n)
        start = np.cumsum(gaps + np.r_[0, lens[:-1]]).astype(np.int64)
        end = start + lens
        if trial % 10 == 9:  # damaged: a call that ends before it starts, or lasts ages
            end[rng.integers(0, n)] = start[0] - 5 if trial % 20 == 9 else 2**60
        segment = np.sort(rng.integers(0, 3, n))
        region = rng.integers(0, regions, n).astype(np.int32)
        count = rng.integers(1, 4, n).astype(np.int32)
        for px in (1.5, 3.0, 8.0, 64.0, 1000.0):
            args = (start, end, region, count, segment, px, 0)
            merges_equal(lod.merge(*args), lod_before.merge(*args))


def test_pixels_of_different_regions_are_merged_without_sorting(monkeypatch):
    """A pixel whose calls are all of different regions (the common case: every call of
    the 1,024-rank benchmark's) takes the heaviest call's region with no sort
    (``_dominant``); pixels that repeat a region still go through it, and only they."""
    sorted_items = []
    real = lod._dominant

    def spy(group, region, weight, n_groups):
        sorted_items.append(group.size)
        return real(group, region, weight, n_groups)

    monkeypatch.setattr(lod, "_dominant", spy)
    k = np.arange(4000)
    start = (1000 * k + 1).astype(np.int64)  # calls of 499 ns every 1,000 ns, 20 regions
    end = start + 499
    region = (1 + k % 20).astype(np.int32)
    ones = np.ones(k.size, np.int32)
    merged = lod.merge(start, end, region, ones, np.zeros(k.size, np.int64), 1996.0, 0)
    assert len(merged) < k.size and sorted_items == []
    repeated = np.where(k % 2 == 1, region - 1, region).astype(np.int32)  # pairs of one region
    lod.merge(start, end, repeated, ones, np.zeros(k.size, np.int64), 1996.0, 0)
    assert sorted_items and sum(sorted_items) < k.size


def test_levels_of_a_generated_archive_are_what_the_merge_before_built(tmp_path, monkeypatch):
    """Every stored table of the index (levels, pointers, pixel sizes) of a generated
    archive equals the one built with the merge before ``_group_dominant``."""
    import lod_before
    from experiment_factory import write_experiment
    from test_otf2_read import RANDOM_REGIONS, random_thread

    from jupyterlab_scorep.trace import index_build
    from scorep_kernel.formats.recording import Region

    regions = RANDOM_REGIONS + [Region(f"m:f{i}", "m", "/src/m.py", i) for i in range(60)]
    threads = [
        random_thread(21, "Master thread", 0, n_events=20_000, max_depth=5),
        random_thread(22, "Thread 1", 1, n_events=8_000, n_regions=72, max_depth=3),
        random_thread(23, "Thread 2", 2, n_events=4_000, n_regions=2, max_depth=8),
    ]
    exp = write_experiment(tmp_path / "exp", threads=threads, regions=regions, metrics=None,
                           cubex=False)  # fmt: skip
    now = index_build.build_index(exp, tmp_path / "now")
    monkeypatch.setattr(lod, "merge", lod_before.merge)
    monkeypatch.setattr(lod, "_pixel_groups", lod_before._pixel_groups)
    before = index_build.build_index(exp, tmp_path / "before")
    assert now["levels"] == before["levels"] and len(now["levels"]) >= 3
    names = sorted(p.name for p in (tmp_path / "now" / index_build.INDEX_NAME).glob("*.npy"))
    assert "start.npy" in names and "ptr.npy" in names
    for name in names:
        a = np.load(tmp_path / "now" / index_build.INDEX_NAME / name)
        b = np.load(tmp_path / "before" / index_build.INDEX_NAME / name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_the_c_merge_is_numpys(monkeypatch):
    """lod_merge.c (lod_native) against numpy's merge, item by item and type by type: the
    random trials of the test above (ties, repeated regions, more than 32 calls a pixel,
    damaged weights) and every level of several locations at once."""
    from jupyterlab_scorep.trace import lod_native

    assert lod_native.available()  # built with the scanner (make setup)
    used = []
    real = lod_native.join
    monkeypatch.setattr(lod_native, "join", lambda *a: used.append(1) or real(*a))

    def both(fn, *args):
        monkeypatch.setattr(lod, "NATIVE", False)
        numpy_result = fn(*args)
        monkeypatch.setattr(lod, "NATIVE", True)
        return fn(*args), numpy_result

    rng = np.random.default_rng(8)
    for trial in range(120):
        n = int(rng.integers(1, 3000))
        lens = rng.choice([0, 1, 2, 5, 10, 50, 400], n)
        start = np.cumsum(rng.integers(0, 20, n) + np.r_[0, lens[:-1]]).astype(np.int64)
        end = start + lens
        if trial % 10 == 9:
            end[rng.integers(0, n)] = start[0] - 5 if trial % 20 == 9 else 2**60
        segment = np.sort(rng.integers(0, 4, n)).astype(np.int64)
        region = rng.integers(0, int(rng.choice([1, 3, 33, 500])), n).astype(np.int32)
        for count in (np.ones(n, np.int32), rng.integers(1, 9, n).astype(np.int64)):
            for px in (1.5, 4.0, 30.0, 700.0):
                native, numpy_merge = both(lod.merge, start, end, region, count, segment, px, 0)
                merges_equal(native, numpy_merge)
    locs = [random_location(rng, n, d) for n, d in [(4000, 5), (0, 0), (300, 1), (2500, 9)]]
    cat = [np.concatenate([loc[k] for loc in locs]) for k in range(3)]
    native, numpy_levels = both(
        lod.build_all_levels, *cat, [loc[3] for loc in locs], [4.0, 16.0, 64.0, 300.0, 5000.0]
    )
    for name in ("start", "end", "region", "count", "items", "ptr", "ptr_at", "px", "px_at"):
        a, b = getattr(native, name), getattr(numpy_levels, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert used  # the C merge ran
