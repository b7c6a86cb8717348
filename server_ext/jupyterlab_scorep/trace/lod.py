"""Timeline level of detail: what to draw for a time window at a given pixel width.

Rule (docs/API.md): at ``px = (t1 - t0) / width`` ns per pixel, calls shorter than a pixel
are merged into spans; a span's ``count`` is the number of calls in it and its ``region``
the one with most time in it. Calls at one depth never overlap, so merging is a pass over
sorted arrays: narrow calls that start in the same pixel form a group, and neighbouring
groups with the same dominant region and a sub-pixel gap are joined. Per depth this leaves
at most about two items per pixel, whatever the trace size.

To keep a zoomed-out query from touching millions of calls, the index stores the same
merge precomputed at pixel sizes ``px_min * 2**k`` ("levels"). A query merges the coarsest
level that is still finer than its own pixel, so it reads at most ~4 items per pixel and
depth. Merging a merged span again treats it as a call of its dominant region (the
dominant region of a join is exact; of a re-merge across levels, a close approximation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import lod_native

LEVEL_FACTOR = 2
# Merge in C where the scanner's library has it (lod_native); tests turn it off to
# compare the two.
NATIVE = True
# Coarsest level: a full-range view this many pixels wide needs nothing coarser.
COARSEST_PIXELS = 256
# A level is stored only when it holds at most this share of the next finer table.
KEEP_RATIO = 0.6


@dataclass
class Spans:
    start: np.ndarray  # int64
    end: np.ndarray  # int64
    region: np.ndarray  # int32
    count: np.ndarray  # int32
    segment: np.ndarray  # int64: which depth (or other row) each span belongs to

    def __len__(self) -> int:
        return int(self.start.shape[0])


def _dominant(group: np.ndarray, region: np.ndarray, weight: np.ndarray, n_groups: int):
    """Per group, the region with the largest summed weight (ties: lowest region id).
    ``group`` is non-decreasing (groups are runs), so one sort by (group, region) does."""
    out = np.zeros(n_groups, np.int32)
    if group.size == 0:
        return out
    span = np.int64(int(region.max()) + 1)
    key = group.astype(np.int64) * span + region
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    sums = np.add.reduceat(weight[order].astype(np.float64) + 1e-9, first)
    u_key = key[first]
    u_group = u_key // span
    g_first = np.flatnonzero(np.r_[True, u_group[1:] != u_group[:-1]])
    best = np.maximum.reduceat(sums, g_first)
    is_best = sums >= np.repeat(best, np.diff(np.r_[g_first, sums.size]))
    winners = np.flatnonzero(is_best)
    w_group = u_group[winners]
    take = winners[np.r_[True, w_group[1:] != w_group[:-1]]]  # lowest region among ties
    out[u_group[take]] = (u_key[take] % span).astype(np.int32)
    return out


_BITS = np.left_shift(np.int64(1), np.arange(32, dtype=np.int64))  # region id mod 32 -> bit


def _group_dominant(
    first: np.ndarray, sizes: np.ndarray, region: np.ndarray, weight: np.ndarray
) -> np.ndarray:
    """Per group (the runs of ``sizes`` items from ``first``), the region with the largest
    summed weight, exactly as ``_dominant`` finds it, mostly without its sort.

    A group whose regions are all different (nearly every group: a pixel's few calls)
    sums each region over one call, so its dominant region is its heaviest call's (ties:
    the lowest region id): one maximum over the group of weight and region packed in one
    integer. A group of one is its call's region. A group in which a region may repeat
    goes through ``_dominant``: one bit per region id modulo 32 tells, as the group's bits
    summed have as many bits set as it has calls only when no two of them share a bit.
    (``_dominant`` over every group of more than one call, its sort and its float
    reductions, was about half of the levels' build of the 1,024-rank benchmark.)"""
    n = int(region.size)
    bits = _BITS.take(region & 31)
    if hasattr(np, "bitwise_count"):  # numpy >= 2
        ends = np.cumsum(bits)[np.r_[first[1:], n] - 1]
        shared = np.bitwise_count(np.diff(ends, prepend=0)) != sizes
    else:  # summed and or-ed differ when two calls share a bit
        shared = np.add.reduceat(bits, first) != np.bitwise_or.reduceat(bits, first)
    lowest, highest = int(region.min()), int(region.max())
    shift = max(highest, 0).bit_length()
    lightest, heaviest = int(weight.min()), int(weight.max())
    # Below 2**53 (ns: 104 days) a weight's float64 plus 1e-9, what _dominant sums,
    # orders and ties as the integer does.
    if lowest >= 0 and lightest >= 0 and heaviest < min(2**53, 2 ** (62 - shift)):
        mask = (1 << shift) - 1
        packed = np.left_shift(weight, shift, dtype=np.int64)
        low = region.astype(np.int64)
        np.subtract(mask, low, out=low)
        np.bitwise_or(packed, low, out=packed)
        out = (mask - (np.maximum.reduceat(packed, first) & mask)).astype(np.int32)
    else:
        value = weight.astype(np.float64) + 1e-9  # what _dominant sums, per call
        best = np.repeat(np.maximum.reduceat(value, first), sizes)
        top = np.where(value >= best, region, np.iinfo(np.int32).max)
        out = np.minimum.reduceat(top, first).astype(np.int32)
    if shared.any():
        items = np.repeat(shared, sizes)
        group = np.repeat(np.flatnonzero(shared), sizes[shared])
        dom = _dominant(group, region[items], weight[items], first.size)
        out[shared] = dom[shared]
    return out


def _pixel_groups(start, dur, segment, px: float, origin: int):
    """Which items are narrower than a pixel, and where each group of narrow items that
    start in the same pixel (of one segment) begins; wide items are groups of one."""
    narrow = dur < px
    # the pixel of each start, floor((start - origin) / px), compared as floats (whole
    # numbers below 2**63 in size compare as their int64 would)
    bucket = np.divide(start - origin if origin else start, px)
    np.floor(bucket, out=bucket)
    same = narrow[1:] & narrow[:-1]
    same &= bucket[1:] == bucket[:-1]
    same &= segment[1:] == segment[:-1]
    np.logical_not(same, out=same)
    return narrow, np.concatenate(([0], np.flatnonzero(same) + 1))


def merge(
    start: np.ndarray,
    end: np.ndarray,
    region: np.ndarray,
    count: np.ndarray,
    segment: np.ndarray,
    px: float,
    origin: int,
    groups: tuple[np.ndarray, np.ndarray] | lod_native.Groups | None = None,
) -> Spans:
    """Merge items narrower than ``px`` (sorted by (segment, start), non-overlapping within
    a segment). Pixel buckets are counted from ``origin``. ``groups``: what
    ``_pixel_groups`` (or ``lod_native.groups``) gives for these items, where the caller
    has it already. In C where the library has the merge (``NATIVE``), the same result."""
    n = int(start.shape[0])
    if n == 0 or px <= 1:
        return Spans(start, end, region, count, segment)
    if (
        NATIVE
        and not isinstance(groups, tuple)
        and _index_types(start, end, region, count, segment)
    ):
        native = groups or lod_native.groups(start, end, region, count, segment, px, origin)
        if native is not None:
            return _merge_native(native, start, end, region, count, segment, px)
    dur = end - start
    narrow, first = (
        groups if isinstance(groups, tuple) else _pixel_groups(start, dur, segment, px, origin)
    )
    n_groups = first.size
    if n_groups == n:
        g_region = region
        g_end, g_count = end, count
    else:
        sizes = np.diff(np.r_[first, n])
        g_end = np.maximum.reduceat(end, first)
        g_count = np.add.reduceat(count, first)
        g_region = _group_dominant(first, sizes, region, dur)
    g_start, g_seg, g_narrow = start[first], segment[first], narrow[first]
    # Join neighbouring merged groups of one region across pixel boundaries.
    if n_groups > 1:
        join = (
            g_narrow[1:]
            & g_narrow[:-1]
            & (g_region[1:] == g_region[:-1])
            & (g_seg[1:] == g_seg[:-1])
            & ((g_start[1:] - g_end[:-1]) < px)
        )
        if join.any():
            keep = np.flatnonzero(np.r_[True, ~join])
            g_end = np.maximum.reduceat(g_end, keep)
            g_count = np.add.reduceat(g_count, keep)
            g_start, g_region, g_seg = g_start[keep], g_region[keep], g_seg[keep]
    return Spans(g_start, g_end, g_region, g_count, g_seg)


def _index_types(start, end, region, count, segment) -> bool:
    """The index's column types, which the C merge keeps (numpy keeps any)."""
    types = (start.dtype, end.dtype, region.dtype, count.dtype, segment.dtype)
    return (
        types[:3] == (np.int64, np.int64, np.int32)
        and types[4] == np.int64
        and (types[3] in (np.int32, np.int64))
    )


def _merge_native(
    g: lod_native.Groups, start: np.ndarray, end: np.ndarray, region: np.ndarray,
    count: np.ndarray, segment: np.ndarray, px: float,
) -> Spans:  # fmt: skip
    """``merge`` from the C pixel groups: the groups whose regions may repeat summed by
    ``_dominant`` (as ``_group_dominant`` does), then the joins in C."""
    g_region = g.region
    exact = np.flatnonzero(g_region == lod_native.EXACT)
    if exact.size:
        sizes = np.diff(np.r_[g.first, start.shape[0]])[exact]
        before = np.cumsum(sizes) - sizes
        items = np.repeat(g.first[exact] - before, sizes) + np.arange(int(sizes.sum()))
        group = np.repeat(exact, sizes)
        dom = _dominant(group, region[items], end[items] - start[items], g.first.size)
        g_region[exact] = dom[exact]
    g_start = np.ascontiguousarray(start[g.first], np.int64)
    g_seg = np.ascontiguousarray(segment[g.first], np.int64)
    m = lod_native.join(g_start, g.end, g_region, g.count, g_seg, g.narrow, px)
    # numpy's add.reduceat sums int32 counts to int64; where nothing merged, they stay
    count_type = count.dtype if m == start.shape[0] else np.result_type(count.dtype, np.int64)
    return Spans(g_start[:m], g.end[:m], g_region[:m], g.count[:m].astype(count_type), g_seg[:m])


def level_pixels(durations: np.ndarray, full_range: int) -> list[float]:
    """Pixel sizes of the precomputed levels, finest first: from the median call duration
    (below it merging halves nothing) up to a full-range view COARSEST_PIXELS wide.
    Reorders ``durations`` (the median partitions them in place, no copy of them all)."""
    if durations.size == 0 or full_range <= 0:
        return []
    px = max(float(np.median(durations, overwrite_input=True)), 1.0) * 2
    top = full_range / COARSEST_PIXELS
    levels = []
    while px < top:
        levels.append(px)
        px *= LEVEL_FACTOR
    levels.append(max(top, 1.0))
    return levels


@dataclass
class LevelTables:
    """Every location's level tables, one concatenation per column: location i's items are
    ``[items[i, 0], items[i, 0] + items[i, 1])`` of ``start``/``end``/``region``/``count``,
    its raw calls first, then each stored level; ``ptr[ptr_at[i, 0]:][:rows * cols]``
    reshaped to ``ptr_at[i, 1:]`` is its [levels + 1, depths + 1] table of where level k,
    depth d begins in its items; ``px[px_at[i, 0]:][:px_at[i, 1]]`` the pixel size of each
    stored level."""

    start: np.ndarray  # int64
    end: np.ndarray  # int64
    region: np.ndarray  # int32
    count: np.ndarray  # int32
    items: np.ndarray  # int64 [L, 2]: offset, length
    ptr: np.ndarray  # int64, flat
    ptr_at: np.ndarray  # int64 [L, 3]: offset, rows, columns
    px: np.ndarray  # float64, flat
    px_at: np.ndarray  # int64 [L, 2]: offset, length


def build_all_levels(
    raw_start: np.ndarray,
    raw_end: np.ndarray,
    raw_region: np.ndarray,
    depth_ptrs: list[np.ndarray],
    pixels: list[float],
) -> LevelTables:
    """The level tables of every location at once: its calls ``raw_*`` (all locations'
    concatenated, each location's sorted by (depth, start) as ``depth_ptrs[i]`` says),
    merged at each pixel size of ``pixels`` (finest first) from the previous level.

    Merging never crosses a segment (a location's depth), so merging all locations'
    tables as one, with a segment per (location, depth), gives each location's merge
    exactly; only the choice to skip a level is made per location (KEEP_RATIO, on its own
    table). A location's numpy calls would cost ~3 ms for a few thousand calls; this
    costs a few numpy calls per level whatever the number of locations."""
    n_loc = len(depth_ptrs)
    n_seg = np.array([len(p) - 1 for p in depth_ptrs], np.int64)
    seg_base = np.concatenate([[0], np.cumsum(n_seg)]).astype(np.int64)
    loc_of_seg = np.repeat(np.arange(n_loc), n_seg)
    per_seg = np.concatenate([np.diff(p) for p in depth_ptrs]) if n_loc else np.zeros(0, np.int64)
    seg = np.repeat(np.arange(int(seg_base[-1])), per_seg.astype(np.int64))
    # counts as merged levels hold them (numpy sums int32 to int64); stored as int32
    cur = Spans(raw_start, raw_end, raw_region, np.ones(raw_start.size, np.int64), seg)
    tables = [cur]  # the raw calls, then each level's spans of the locations that keep it
    kept = [np.ones(n_loc, bool)]
    for px in pixels:
        merging = np.ones(n_loc, bool)
        pixel_groups: tuple[np.ndarray, np.ndarray] | lod_native.Groups | None = None
        if px != pixels[-1]:
            # A level barely smaller than the table below it is not worth its space:
            # queries at this pixel size read the finer table (at most 1/KEEP_RATIO times
            # more items). Judged by its pixel groups before the joins (a cheap upper
            # bound of its size): the full merge of a level then skipped cost 3/4 of the
            # levels' build time (75 of 100 ms per 250k calls).
            # (A location without calls skips it too: one group of nothing, as numpy counts.)
            rows_of = _per_location(cur.segment, seg_base)
            groups = np.zeros(n_loc, np.int64)
            if len(cur):
                native = (
                    NATIVE
                    and _index_types(*_columns(cur))
                    and lod_native.groups(
                        cur.start, cur.end, cur.region, cur.count, cur.segment, px, 0
                    )
                )
                if native:
                    pixel_groups, firsts = native, native.first
                else:
                    narrow, firsts = _pixel_groups(
                        cur.start, cur.end - cur.start, cur.segment, px, 0
                    )
                    pixel_groups = (narrow, firsts)
                groups = _per_location(cur.segment[firsts], seg_base)
            merging = ~((groups > KEEP_RATIO * rows_of) | (rows_of == 0))
        if merging.all():
            # every location merges: the groups just found are the merge's own
            cur = merge(cur.start, cur.end, cur.region, cur.count, cur.segment, px, 0, pixel_groups)
            tables.append(cur)
        elif merging.any() and isinstance(pixel_groups, lod_native.Groups):
            # in C: the rows of the locations that do not merge pass as they are, and the
            # table keeps them (_assemble stores only the kept locations' rows)
            g = lod_native.groups(*_columns(cur), px, 0, pass_segment=~merging[loc_of_seg])
            assert g is not None
            cur = _merge_native(g, cur.start, cur.end, cur.region, cur.count, cur.segment, px)
            tables.append(cur)
        elif merging.any():
            rows = merging[loc_of_seg][cur.segment]
            done = merge(
                cur.start[rows], cur.end[rows], cur.region[rows], cur.count[rows],
                cur.segment[rows], px, 0,
            )  # fmt: skip
            tables.append(done)
            rest = _take(cur, ~rows)
            cur = _interleave(done, rest)
        else:
            tables.append(_take(cur, np.zeros(len(cur), bool)))
        kept.append(merging)
    return _assemble(tables, np.array(kept).reshape(-1, n_loc), seg_base, pixels)


def _per_location(segment: np.ndarray, seg_base: np.ndarray) -> np.ndarray:
    """How many of ``segment``'s rows each location has (its segments are
    ``seg_base[i]:seg_base[i + 1]``): no array of locations as long as the rows."""
    per_segment = np.bincount(segment, minlength=int(seg_base[-1]))
    before = np.concatenate([[0], np.cumsum(per_segment)])
    return before[seg_base[1:]] - before[seg_base[:-1]]


def _interleave(a: Spans, b: Spans) -> Spans:
    """The rows of ``a`` and ``b`` (each sorted by segment, no segment in both) in segment
    order: each row's place found by searchsorted, not by a stable sort of them all."""
    at_a = np.arange(len(a)) + np.searchsorted(b.segment, a.segment, side="right")
    at_b = np.arange(len(b)) + np.searchsorted(a.segment, b.segment, side="right")
    columns = []
    for x, y in zip(_columns(a), _columns(b)):
        out = np.empty(len(a) + len(b), np.result_type(x.dtype, y.dtype))
        out[at_a], out[at_b] = x, y
        columns.append(out)
    return Spans(*columns)


def _take(s: Spans, rows: np.ndarray) -> Spans:
    return Spans(s.start[rows], s.end[rows], s.region[rows], s.count[rows], s.segment[rows])


def _columns(s: Spans) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return s.start, s.end, s.region, s.count, s.segment


def _assemble(
    tables: list[Spans],
    kept: np.ndarray,
    seg_base: np.ndarray,
    pixels: list[float],
) -> LevelTables:
    """Each location's tables side by side: its raw calls, then its kept levels in order."""
    n_levels, n_loc = kept.shape  # raw + one per pixel size
    n_segments = int(seg_base[-1])
    # rows of each (table, segment) and (table, location), by counts before each segment
    # (a table may hold rows of locations that did not keep its level: they stay out)
    seg_rows = np.array([np.bincount(t.segment, minlength=n_segments) for t in tables])
    cum = np.zeros((n_levels, n_segments + 1), np.int64)
    np.cumsum(seg_rows.reshape(n_levels, n_segments), axis=1, out=cum[:, 1:])
    all_rows = cum[:, seg_base[1:]] - cum[:, seg_base[:-1]]
    loc_rows = all_rows * kept
    # where each (table, location) goes in the location's items, and the location's items
    within = np.cumsum(loc_rows, axis=0) - loc_rows
    items_n = loc_rows.sum(axis=0)
    items_off = np.concatenate([[0], np.cumsum(items_n)[:-1]]).astype(np.int64)
    # Location by location, its block of each table (the tables are sorted by segment, so
    # a location's rows are one block): one concatenation of slices per column, no index
    # arrays the size of the tables (a scatter through them was 5 of the 14 s of the levels
    # of 1,024 ranks of 100M events, and 2 GB).
    table_first = (np.cumsum(all_rows, axis=1) - all_rows).tolist()
    blocks = [
        (k, a, a + n)
        for i in range(n_loc)
        for k, (a, n) in enumerate(zip((row[i] for row in table_first), loc_rows[:, i].tolist()))
        if n
    ]
    columns = (("start", np.int64), ("end", np.int64), ("region", np.int32), ("count", np.int32))
    out = []
    for name, dtype in columns:
        parts = [getattr(tables[k], name)[a:b] for k, a, b in blocks]
        out.append(np.concatenate(parts or [np.zeros(0, dtype)], dtype=dtype, casting="unsafe"))
    # ptr: per location, a row per kept table, a column per depth boundary
    loc_i, level_k = np.nonzero(kept.T)  # by location, then level
    cols = (seg_base[1:] - seg_base[:-1] + 1)[loc_i]
    first_entry = np.cumsum(cols) - cols
    pair = np.repeat(np.arange(loc_i.size), cols)
    depth = np.arange(int(cols.sum())) - first_entry[pair]
    li, lk = loc_i[pair], level_k[pair]
    base = seg_base[li]
    ptr = cum[lk, base + depth] - cum[lk, base] + within[lk, li]
    rows = kept.sum(axis=0)
    entries = rows * (seg_base[1:] - seg_base[:-1] + 1)
    ptr_at = np.stack(
        [np.cumsum(entries) - entries, rows, seg_base[1:] - seg_base[:-1] + 1], axis=1
    ).astype(np.int64)
    # pixel sizes of the stored levels
    level_px = np.asarray(pixels, np.float64)
    level_l = np.nonzero(kept[1:].T)[1]
    px_n = kept[1:].sum(axis=0)
    px_at = np.stack([np.cumsum(px_n) - px_n, px_n], axis=1).astype(np.int64)
    return LevelTables(
        start=out[0],
        end=out[1],
        region=out[2],
        count=out[3],
        items=np.stack([items_off, items_n], axis=1).astype(np.int64),
        ptr=ptr.astype(np.int64),
        ptr_at=ptr_at,
        px=level_px[level_l],
        px_at=px_at,
    )
