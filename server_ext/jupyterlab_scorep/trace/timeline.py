"""GET timeline: a window of the trace at a pixel width, from a loaded index."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import lod
from .index_store import LoadedIndex

# Responses stay under ~1 MB: spans are budgeted by their JSON size (4 numbers each).
MAX_BYTES = 900_000


def _window_items(index: LoadedIndex, loc: int, t0: int, t1: int, px: float):
    """The items of the finest stored table coarse enough for ``px`` that overlap
    [t0, t1], concatenated over depths, with their depth as segment."""
    levels_px = index.array(f"L{loc}.px")
    row = int(np.searchsorted(levels_px, px, side="right"))
    ptr = index.array(f"L{loc}.ptr")[row]
    start, end = index.array(f"L{loc}.start"), index.array(f"L{loc}.end")
    region, count = index.array(f"L{loc}.region"), index.array(f"L{loc}.count")
    slices, depths = [], []
    for d in range(len(ptr) - 1):
        a, b = int(ptr[d]), int(ptr[d + 1])
        if a == b:
            continue
        lo = a + int(np.searchsorted(end[a:b], t0, side="right"))
        hi = a + int(np.searchsorted(start[a:b], t1, side="left"))
        if hi > lo:
            slices.append((lo, hi))
            depths.append(d)
    if not slices:
        e = np.zeros(0, np.int64)
        return e, e, np.zeros(0, np.int32), np.zeros(0, np.int32), e
    idx = np.concatenate([np.arange(lo, hi) for lo, hi in slices])
    seg = np.repeat(np.asarray(depths, np.int64), [hi - lo for lo, hi in slices])
    return start[idx], end[idx], region[idx], count[idx], seg


def query(index: LoadedIndex, t0: int, t1: int, width: int) -> dict[str, Any]:
    px = max((t1 - t0) / width, 1.0)
    # Metric locations (system metrics recorded into the trace) have no calls to draw.
    shown = [loc for loc in index.locations if loc["kind"] != "metric" or loc["calls"]]
    raw = [_window_items(index, loc["id"], t0, t1, px) for loc in shown]
    merged = [lod.merge(s, e, r, c, g, px, t0) for s, e, r, c, g in raw]
    # Per span: start and end (as many digits as t1), region, count, 4 separators.
    max_items = MAX_BYTES // (2 * len(str(abs(t1))) + 14)
    while sum(len(m) for m in merged) > max_items:
        # Coarser than a pixel rather than a response the browser chokes on; merged spans
        # merge again like calls, so each round works on the previous round's output.
        px *= 2
        merged = [lod.merge(m.start, m.end, m.region, m.count, m.segment, px, t0) for m in merged]
    used: set[int] = set()
    locations = []
    for loc, spans in zip(shown, merged):
        rows = []
        if len(spans):
            bounds = np.flatnonzero(np.r_[True, spans.segment[1:] != spans.segment[:-1]])
            for a, b in zip(bounds, np.r_[bounds[1:], len(spans)]):
                rows.append(
                    {
                        "depth": int(spans.segment[a]),
                        "start": spans.start[a:b].tolist(),
                        "end": spans.end[a:b].tolist(),
                        "region": spans.region[a:b].tolist(),
                        "count": spans.count[a:b].tolist(),
                    }
                )
            used.update(np.unique(spans.region).tolist())
        locations.append(
            {"id": loc["id"], "name": loc["name"], "max_depth": loc["max_depth"], "rows": rows}
        )
    return {
        "window": [t0, t1],
        "width": width,
        "px_ns": px,
        "range": index.meta["range"],
        "regions": {str(r): index.region_info(r) for r in sorted(used)},
        "locations": locations,
    }
