"""Busy time of many locations in time columns: the numbers of GET timeline's heat map.

Per shown location the index's top-level calls ("active") and its MPI calls' union
("mpi") are disjoint, sorted intervals; ``BusyTable`` keeps all locations' intervals in one
pair of arrays sorted by (location, start), built once per loaded index. ``covered`` sums,
for buckets of locations and time columns, the busy ns inside each cell: it reads only the
intervals that overlap the window (one searchsorted per location finds them), and adds each
one's partial first and last column and its whole columns between, with ``np.bincount``
over the (bucket, column) grid. The cost is that of the intervals in the window plus the
grid, never a loop per location in Python: the 1,024-rank run's full view (21,000 MPI
calls, a 256 x 800 grid) takes ~3 ms, where a searchsorted per (bucket, column) edge over
every interval took ~16 ms. A window holding more intervals than SEARCH_ABOVE times the
grid's cells is answered the other way, whose cost grows only with the log of the
intervals: per bucket the busy time before each edge, from the bucket's starts and ends
sorted (once per bucket size) and their prefix sums (2M MPI calls in view: 37 ms, where
binning them takes 200 ms; the two agree to the ns).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import numpy as np

from . import otf2_scan
from .index_build import LAYOUT_FIELDS
from .index_store import LoadedIndex

_EMPTY = np.zeros(0, np.int64)
# Above this many intervals in the window per grid cell, search instead of binning (the
# two cost the same there: ~25 ms for 205,000 intervals on a 256 x 801 grid).
SEARCH_ABOVE = 1.0
NATIVE = True  # search in C where the scanner's library has it (tests turn it off)


class BusyTable:
    """Disjoint busy intervals of ``n`` locations: location i's are
    ``starts[ptr[i]:ptr[i + 1]]`` / ``ends[...]``, sorted by start."""

    def __init__(self, sizes: np.ndarray, starts: np.ndarray, ends: np.ndarray, span: int):
        self.span = span  # every time lies in [0, span)
        self.ptr = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        self.starts = starts.astype(np.int64, copy=False)
        self.ends = ends.astype(np.int64, copy=False)
        pos = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
        # (location, time) as one sorted key: a window's intervals by one searchsorted
        self._key_start = pos * span + self.starts
        self._key_end = pos * span + self.ends
        self._pos = pos
        self._sorted: dict[tuple[int, int, bytes], tuple[np.ndarray, ...]] = {}

    def covered(self, which: np.ndarray, per_row: int, edges: np.ndarray) -> np.ndarray:
        """[ceil(len(which) / per_row), edges.size - 1] busy ns: row b sums the locations
        ``which[b * per_row : (b + 1) * per_row]``, column c the time [edges[c],
        edges[c + 1]); ``edges`` increasing, within [0, span)."""
        n_cols = edges.size - 1
        n_rows = -(-which.size // per_row)
        t0, t1 = int(edges[0]), int(edges[-1])
        base = which.astype(np.int64) * self.span
        lo = np.searchsorted(self._key_end, base + t0, side="right")
        hi = np.searchsorted(self._key_start, base + t1, side="left")
        n = np.maximum(hi - lo, 0)
        if int(n.sum()) > SEARCH_ABOVE * n_rows * (n_cols + 1):
            return self._searched(which, per_row, n_rows, edges)
        # the overlapping intervals of every location asked for, and each one's row
        first = np.repeat(lo - (np.cumsum(n) - n), n)
        idx = first + np.arange(int(n.sum()), dtype=np.int64)
        row = np.repeat(np.arange(which.size, dtype=np.int64) // per_row, n)
        s = np.maximum(self.starts[idx], t0)
        e = np.minimum(self.ends[idx], t1)
        cs = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, n_cols - 1)
        ce = np.clip(np.searchsorted(edges, e, side="right") - 1, 0, n_cols - 1)
        # an interval inside one column adds e - s there; a longer one adds its part of
        # its first and last columns and +1 whole column from cs + 1 up to ce (exclusive):
        # two bincounts over the grid (a column more, for the steps past the last one)
        stride = n_cols + 1
        at_s, at_e = row * stride + cs, row * stride + ce
        long = np.flatnonzero(cs != ce)
        cells = n_rows * stride
        part = np.bincount(
            np.r_[at_s, at_e[long]],
            np.r_[np.minimum(e, edges[cs + 1]) - s, e[long] - edges[ce[long]]],
            cells,
        ).astype(np.float64, copy=False)  # (bincount of nothing answers int64)
        steps = np.bincount(
            np.r_[at_s[long] + 1, at_e[long]],
            np.r_[np.ones(long.size), -np.ones(long.size)],
            cells,
        ).astype(np.float64, copy=False)
        steps = steps.reshape(n_rows, stride)
        out = np.cumsum(steps, axis=1, out=steps)[:, :n_cols]
        out *= np.diff(edges)
        out += part.reshape(n_rows, stride)[:, :n_cols]
        return out

    def _by_row(self, which: np.ndarray, per_row: int) -> tuple[np.ndarray, ...]:
        """Per row of ``which`` in buckets of ``per_row``: its intervals' starts and ends
        as sorted keys row * span + t, and the prefix sums of their times (cached: a
        panel asks for the same rows window after window)."""
        key = (per_row, which.size, which.tobytes())
        found = self._sorted.get(key)
        if found is None:
            row_of = np.full(self.ptr.size - 1, -1, np.int64)
            row_of[which] = np.arange(which.size, dtype=np.int64) // per_row
            row = row_of[self._pos]
            keep = row >= 0
            found = ()
            for t in (self.starts, self.ends):
                # runs sorted per location: merged (timsort) ~30x faster than a quicksort
                k = np.sort(row[keep] * self.span + t[keep], kind="stable")
                found += (k, np.r_[0.0, np.cumsum(k % self.span, dtype=np.float64)])
            if len(self._sorted) >= 2:  # 32 bytes per interval each
                self._sorted.pop(next(iter(self._sorted)))
            self._sorted[key] = found
        return found

    def _searched(
        self, which: np.ndarray, per_row: int, n_rows: int, edges: np.ndarray
    ) -> np.ndarray:
        """``covered`` by search: the busy ns before x in a row is the sum of x - s over
        its starts s < x less the sum of x - e over its ends e < x."""
        ks, cs, ke, ce = self._by_row(which, per_row)
        x = edges[None, :].astype(np.float64)
        total = np.zeros((n_rows, edges.size), np.float64)
        for key, cum, sign in ((ks, cs, 1.0), (ke, ce, -1.0)):
            bounds = np.searchsorted(key, np.arange(n_rows + 1, dtype=np.int64) * self.span)
            idx = search_rows(key, bounds, edges, self.span)
            first = bounds[:-1, None]
            total += sign * ((idx - first) * x - (cum[idx] - cum[first]))
        return np.diff(total, axis=1)


@functools.cache
def _search_library() -> ctypes.CDLL | None:
    lib = otf2_scan._library()
    if lib is None or not hasattr(lib, "busy_search"):
        return None
    i64, p = ctypes.c_int64, ctypes.c_void_p
    lib.busy_search.restype = None
    lib.busy_search.argtypes = [p, p, i64, p, i64, i64, p]
    return lib


def search_rows(key: np.ndarray, bounds: np.ndarray, edges: np.ndarray, span: int) -> np.ndarray:
    """[rows, edges] of ``searchsorted(key, r * span + edge, side="left")``, row r's keys
    being ``key[bounds[r]:bounds[r + 1]]`` and ``edges`` increasing: row by row in the row's
    own keys (a few hundred kB that stay in cache, where one search over all rows' keys,
    13M MPI calls of 1,024 ranks, missed it at every step: 75 of the 90 ms of a full
    view); in C (server_ext/native/busy_search.c) where the library has it."""
    n_rows = bounds.size - 1
    idx = np.empty((n_rows, edges.size), np.int64)
    lib = _search_library() if NATIVE else None
    if lib is not None:
        key, bounds = np.ascontiguousarray(key, np.int64), np.ascontiguousarray(bounds, np.int64)
        edges = np.ascontiguousarray(edges, np.int64)
        lib.busy_search(key.ctypes.data, bounds.ctypes.data, n_rows, edges.ctypes.data,
                        edges.size, int(span), idx.ctypes.data)  # fmt: skip
        return idx
    for r, (a, b) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        np.add(key[a:b].searchsorted(edges + r * span), a, out=idx[r])
    return idx


def _ranges(lo: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The indices lo[i] .. lo[i] + n[i] - 1 of every i, in order."""
    return np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(int(n.sum()), dtype=np.int64)


def _mpi_calls(
    index: LoadedIndex, region: np.ndarray, offset: np.ndarray, calls: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The item indices of the raw calls of MPI regions (``calls`` items from ``offset``,
    per location) and each one's location position: location by location, through a
    table of the MPI region refs (shifted by one: slot 0 and the last for refs outside).
    All raw calls' indices at once (42.6M of the 100M-event benchmark archive, three
    arrays of 340 MB) and np.isin over their regions took 2.3 of its first heat map's
    6.2 s, mostly the kernel's first touches of fresh memory."""
    mpi = [int(k) for k, v in index.regions.items() if (v or {}).get("paradigm") == "mpi"]
    table = np.zeros(max(mpi, default=-1) + 3, bool)
    table[np.asarray(mpi, np.int64) + 1] = True
    found: list[np.ndarray] = []
    for o, c in zip(offset.tolist(), calls.tolist()):
        if not mpi or not c:
            found.append(_EMPTY)
            continue
        shifted = np.asarray(region[o : o + c], np.int64) + 1
        found.append(np.flatnonzero(table.take(shifted, mode="clip")) + o)
    sizes = np.array([f.size for f in found], np.int64)
    raw = np.concatenate(found) if found else _EMPTY
    return raw, np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)


def busy_tables(index: LoadedIndex, shown: list[dict[str, Any]]) -> tuple[BusyTable, BusyTable]:
    """Per shown location its top-level calls and its MPI calls (raw level, nested ones
    once): the ``active`` and ``mpi`` tables, for all locations at once from the index's
    columns (a location's raw calls are the first ``calls`` of its items, by depth then
    start; ``ptr`` row 0 says where its depth 0 ends)."""
    span = int(index.meta["range"][1]) + 2
    field = {name: i for i, name in enumerate(LAYOUT_FIELDS)}
    layout = np.asarray(index.array("layout"))
    ids = np.array([loc["id"] for loc in shown], np.int64)
    calls = np.array([int(loc.get("calls") or 0) for loc in shown], np.int64)
    rows = layout[ids] if ids.size else np.zeros((0, len(LAYOUT_FIELDS)), np.int64)
    offset = rows[:, field["items_offset"]]
    ptr, p_at = index.array("ptr"), rows[:, field["ptr_offset"]]
    has_depth = (calls > 0) & (rows[:, field["ptr_columns"]] >= 2)
    top_lo = np.where(has_depth, ptr[np.where(has_depth, p_at, 0)], 0)
    top_hi = np.where(has_depth, ptr[np.where(has_depth, p_at + 1, 0)], 0)
    start, end, region = index.array("start"), index.array("end"), index.array("region")
    top = _ranges(offset + top_lo, top_hi - top_lo)  # one depth: disjoint, sorted
    active = BusyTable(top_hi - top_lo, start[top], end[top], span)
    raw, pos = _mpi_calls(index, region, offset, calls)
    # the union of each location's MPI calls (nested ones once), all locations in one pass:
    # keyed by (location, time), a location's intervals never reach the next one's
    key_s, key_e = pos * span + start[raw], pos * span + end[raw]
    if (key_s[1:] < key_s[:-1]).any():  # (MPI calls at one depth are in order already)
        order = np.argsort(key_s, kind="stable")
        key_s, key_e, pos = key_s[order], key_e[order], pos[order]
    if key_s.size:
        reach = np.maximum.accumulate(key_e)
        first = np.flatnonzero(np.r_[True, key_s[1:] > reach[:-1]])
        key_s, key_e, pos = key_s[first], np.maximum.reduceat(reach, first), pos[first]
    sizes = np.bincount(pos, minlength=ids.size).astype(np.int64)
    return active, BusyTable(sizes, key_s - pos * span, key_e - pos * span, span)
