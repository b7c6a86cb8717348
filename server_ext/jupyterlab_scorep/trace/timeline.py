"""GET timeline: a window of the trace at a pixel width, from a loaded index.

The answer is the locations' spans, one location per row (``query``); a client that says
how many rows it draws (``rows``) and has more locations than that gets a summary instead
(``heatmap``; without ``rows`` every location comes as a row, as the panel reads today): the
locations in buckets of consecutive ones, one row per bucket, and per bucket and time
column the share of its time spent in calls and in MPI calls, as Vampir's master timeline
draws a large run in summary mode (busy_time.py). ``ranks`` (lo, hi) answers for processes
lo..hi-1 only (processes.py): the panel's rows in view when it scrolls one row per rank.
"""

from __future__ import annotations

import base64
import math
from typing import Any, NamedTuple, TypedDict

import numpy as np

from . import lod
from .busy_time import BusyTable, busy_tables
from .index_store import LoadedIndex
from .processes import process_order

# Responses stay under ~1 MB: spans are budgeted by their JSON size (4 numbers each).
MAX_BYTES = 900_000
# A summary column is this many pixels wide.
HEAT_PX = 2


class HeatRow(TypedDict):
    locations: list[int]  # index ids of the row's locations, consecutive in the index
    groups: list[str]  # their location groups (ranks: "MPI Rank 3"), in order, once each


class Heatmap(TypedDict):
    rows: list[HeatRow]
    columns: int  # time columns; column j covers t0 + j * column_ns .. + column_ns
    column_ns: float
    encoding: str  # "base64-uint8": rows x columns bytes, row-major, 255 = 100 %
    active: str  # share of the row's location-time inside any call (depth 0)
    mpi: str  # share of the row's location-time inside MPI calls (regions of paradigm mpi)


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
    if len(slices) == 1:
        lo, hi = slices[0]
        seg = np.full(hi - lo, depths[0], np.int64)
        return start[lo:hi], end[lo:hi], region[lo:hi], count[lo:hi], seg
    idx = np.concatenate([np.arange(lo, hi) for lo, hi in slices])
    seg = np.repeat(np.asarray(depths, np.int64), [hi - lo for lo, hi in slices])
    return start[idx], end[idx], region[idx], count[idx], seg


def shown_locations(index: LoadedIndex) -> list[dict[str, Any]]:
    # Metric locations (system metrics recorded into the trace) have no calls to draw.
    return [loc for loc in index.locations if loc["kind"] != "metric" or loc["calls"]]


class _Order(NamedTuple):
    """The shown locations and their processes (processes.py), once per loaded index."""

    shown: list[dict[str, Any]]
    processes: list[np.ndarray]  # per process, its locations' positions in ``shown``


def _order(index: LoadedIndex) -> _Order:
    shown = shown_locations(index)
    return _Order(shown, process_order(shown))


def _busy(index: LoadedIndex) -> tuple[BusyTable, BusyTable]:
    return busy_tables(index, index.cached("timeline_order", _order).shown)


def query(
    index: LoadedIndex,
    t0: int,
    t1: int,
    width: int,
    rows: int | None = None,
    ranks: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """The window's answer (docs/API.md): the shown locations one per row, or with more
    of them than ``rows`` the heat map; ``ranks`` (lo, hi): only processes lo..hi-1."""
    order = index.cached("timeline_order", _order)
    n_proc = len(order.processes)
    lo, hi = (0, n_proc) if ranks is None else (min(ranks[0], n_proc), min(ranks[1], n_proc))
    parts = order.processes[lo:hi]
    which = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    extra = {} if ranks is None else {"ranks": [lo, hi]}
    if rows is not None and which.size > rows:
        return {**heatmap(index, which, t0, t1, width, rows, ranks is None), **extra}
    shown = [order.shown[int(p)] for p in which]
    px = max((t1 - t0) / width, 1.0)
    raw = [_window_items(index, loc["id"], t0, t1, px) for loc in shown]
    # One merge over all locations: a location's depth d is segment pos * stride + d (the
    # merge never joins across segments, so this is the per-location merge, in one pass).
    stride = max((loc["max_depth"] for loc in shown), default=0) + 2
    n_items = [r[0].shape[0] for r in raw]
    pos = np.repeat(np.arange(len(shown), dtype=np.int64), n_items)
    if raw:
        cols = [np.concatenate([r[k] for r in raw]) for k in range(5)]
    else:
        cols = [np.zeros(0, np.int64)] * 5
    spans = lod.merge(cols[0], cols[1], cols[2], cols[3], pos * stride + cols[4], px, t0)
    # Per span: start and end (as many digits as t1), region, count, 4 separators.
    max_items = MAX_BYTES // (2 * len(str(abs(t1))) + 14)
    while len(spans) > max_items:
        # Coarser than a pixel rather than a response the browser chokes on; merged spans
        # merge again like calls, so each round works on the previous round's output.
        px *= 2
        spans = lod.merge(spans.start, spans.end, spans.region, spans.count, spans.segment, px, t0)
    starts, ends = spans.start.tolist(), spans.end.tolist()
    regions, counts = spans.region.tolist(), spans.count.tolist()
    seg = spans.segment
    bounds = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]]) if len(spans) else np.zeros(0, int)
    by_pos: dict[int, list[dict[str, Any]]] = {}
    for a, b in zip(bounds.tolist(), np.r_[bounds[1:], len(spans)].tolist()):
        p, depth = divmod(int(seg[a]), stride)
        by_pos.setdefault(p, []).append(
            {
                "depth": depth,
                "start": starts[a:b],
                "end": ends[a:b],
                "region": regions[a:b],
                "count": counts[a:b],
            }
        )
    used = np.unique(spans.region).tolist() if len(spans) else []
    locations = [
        {
            "id": loc["id"],
            "name": loc["name"],
            "max_depth": loc["max_depth"],
            "rows": by_pos.get(p, []),
        }
        for p, loc in enumerate(shown)
    ]
    return {
        "window": [t0, t1],
        "width": width,
        "px_ns": px,
        "range": index.meta["range"],
        "regions": {str(r): index.region_info(r) for r in sorted(used)},
        "locations": locations,
        **extra,
    }


def _heat_rows(order: _Order, which: np.ndarray, per_row: int) -> list[HeatRow]:
    locs = [order.shown[int(p)] for p in which]
    heat_rows: list[HeatRow] = []
    for a in range(0, len(locs), per_row):
        bucket = locs[a : a + per_row]
        groups = list(dict.fromkeys([str(loc.get("group") or "") for loc in bucket]))
        heat_rows.append({"locations": [loc["id"] for loc in bucket], "groups": groups})
    return heat_rows


def heatmap(
    index: LoadedIndex,
    which: np.ndarray,
    t0: int,
    t1: int,
    width: int,
    rows: int,
    every: bool = False,
) -> dict[str, Any]:
    """The summary answer of the locations ``which`` (positions among the shown ones;
    ``every``: all of them, in process order): ``locations`` empty, ``heatmap``
    (docs/API.md)."""
    order = index.cached("timeline_order", _order)
    active, mpi = index.cached("timeline_busy", _busy)
    n = int(which.size)
    per_row = math.ceil(n / rows)
    columns = max(1, math.ceil(width / HEAT_PX))
    edges = np.linspace(t0, t1, columns + 1).round().astype(np.int64)
    # outside [0, range] nothing is busy; clipped, a time never reaches the next bucket
    inside = np.clip(edges, 0, active.span - 1)
    sizes = np.diff(np.r_[np.arange(0, n, per_row), n]).astype(np.float64)
    widths = np.maximum(np.diff(edges), 1).astype(np.float64)
    # 255 = all of a cell's location-time (its bucket's locations x its column's ns)
    scale = 255.0 / (sizes[:, None] * widths[None, :])
    share = []
    for table in (active, mpi):
        cells = table.covered(which, per_row, inside)
        cells *= scale
        np.rint(cells, out=cells)
        np.clip(cells, 0, 255, out=cells)
        share.append(base64.b64encode(cells.astype(np.uint8).tobytes()).decode("ascii"))
    # every location's rows at a bucket size: the same for every window (~2 ms at 1,024)
    heat_rows = (
        index.cached(f"heat_rows:{per_row}", lambda _: _heat_rows(order, which, per_row))
        if every
        else _heat_rows(order, which, per_row)
    )
    heat: Heatmap = {
        "rows": heat_rows,
        "columns": columns,
        "column_ns": (t1 - t0) / columns,
        "encoding": "base64-uint8",
        "active": share[0],
        "mpi": share[1],
    }
    return {
        "window": [t0, t1],
        "width": width,
        "px_ns": max((t1 - t0) / width, 1.0),
        "range": index.meta["range"],
        "regions": {},
        "locations": [],
        "heatmap": heat,
    }
