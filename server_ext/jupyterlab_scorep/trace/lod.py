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

LEVEL_FACTOR = 2
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


def _pixel_groups(start, dur, segment, px: float, origin: int):
    """Which items are narrower than a pixel, and where each group of narrow items that
    start in the same pixel (of one segment) begins; wide items are groups of one."""
    narrow = dur < px
    bucket = np.floor((start - origin) / px).astype(np.int64)
    same = narrow[1:] & narrow[:-1] & (bucket[1:] == bucket[:-1]) & (segment[1:] == segment[:-1])
    return narrow, np.flatnonzero(np.r_[True, ~same])


def merge(
    start: np.ndarray,
    end: np.ndarray,
    region: np.ndarray,
    count: np.ndarray,
    segment: np.ndarray,
    px: float,
    origin: int,
) -> Spans:
    """Merge items narrower than ``px`` (sorted by (segment, start), non-overlapping within
    a segment). Pixel buckets are counted from ``origin``."""
    n = int(start.shape[0])
    if n == 0 or px <= 1:
        return Spans(start, end, region, count, segment)
    dur = end - start
    narrow, first = _pixel_groups(start, dur, segment, px, origin)
    n_groups = first.size
    if n_groups == n:
        g_region = region
        g_end, g_count = end, count
    else:
        group = np.repeat(np.arange(n_groups), np.diff(np.r_[first, n]))
        g_end = np.maximum.reduceat(end, first)
        g_count = np.add.reduceat(count, first)
        sizes = np.diff(np.r_[first, n])
        g_region = region[first].astype(np.int32)
        multi = sizes > 1
        if multi.any():
            in_multi = multi[group]
            dom = _dominant(group[in_multi], region[in_multi], dur[in_multi], n_groups)
            g_region = np.where(multi, dom, g_region).astype(np.int32)
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


def level_pixels(durations: np.ndarray, full_range: int) -> list[float]:
    """Pixel sizes of the precomputed levels, finest first: from the median call duration
    (below it merging halves nothing) up to a full-range view COARSEST_PIXELS wide."""
    if durations.size == 0 or full_range <= 0:
        return []
    px = max(float(np.median(durations)), 1.0) * 2
    top = full_range / COARSEST_PIXELS
    levels = []
    while px < top:
        levels.append(px)
        px *= LEVEL_FACTOR
    levels.append(max(top, 1.0))
    return levels


def build_levels(raw_start, raw_end, raw_region, depth_ptr, pixels: list[float]):
    """The level tables, each ``(start, end, region, count, depth_ptr)`` or None where
    skipped, each built from the previous (finer) one."""
    seg = np.repeat(np.arange(len(depth_ptr) - 1), np.diff(depth_ptr))
    cur = Spans(raw_start, raw_end, raw_region, np.ones(raw_start.size, np.int32), seg)
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None] = []
    for px in pixels:
        if px != pixels[-1]:
            # A level barely smaller than the table below it is not worth its space:
            # queries at this pixel size read the finer table (at most 1/KEEP_RATIO times
            # more items). Judged by its pixel groups before the joins (a cheap upper
            # bound of its size): the full merge of a level then skipped cost 3/4 of the
            # levels' build time (75 of 100 ms per 250k calls).
            _narrow, first = _pixel_groups(cur.start, cur.end - cur.start, cur.segment, px, 0)
            if first.size > KEEP_RATIO * len(cur):
                out.append(None)
                continue
        nxt = merge(cur.start, cur.end, cur.region, cur.count, cur.segment, px, 0)
        cur = nxt
        ptr = np.searchsorted(cur.segment, np.arange(len(depth_ptr)), side="left")
        out.append((cur.start, cur.end, cur.region, cur.count, ptr.astype(np.int64)))
    return out
