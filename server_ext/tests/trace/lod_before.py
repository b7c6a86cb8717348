"""The level-of-detail merge as it was before ``lod._group_dominant`` (main f9227a2,
verbatim): the reference that test_lod checks the levels against."""

from __future__ import annotations

import numpy as np

from jupyterlab_scorep.trace.lod import Spans


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
    groups: tuple[np.ndarray, np.ndarray] | None = None,
) -> Spans:
    """Merge items narrower than ``px`` (sorted by (segment, start), non-overlapping within
    a segment). Pixel buckets are counted from ``origin``. ``groups``: what
    ``_pixel_groups`` gives for these items, where the caller has it already."""
    n = int(start.shape[0])
    if n == 0 or px <= 1:
        return Spans(start, end, region, count, segment)
    dur = end - start
    narrow, first = groups or _pixel_groups(start, dur, segment, px, origin)
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
