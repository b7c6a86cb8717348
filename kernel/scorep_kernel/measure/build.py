"""From what the tracer recorded to a ``Recording``: filters, cells, nesting, clock.

Everything here works on whole arrays: the per-call cost of a Python loop would be paid
again for every one of up to millions of calls. Calls are intervals ``[start, end]`` of one
thread; they nest (a call lies inside its caller), which the filters rely on: "everything
below an excluded call" is every interval inside the union of the excluded intervals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..formats.recording import ENTER, LEAVE, ROLE_CELL, Marker, Markers, Region, ThreadEvents
from ..region_words import thread_location_name
from .engine import RawCalls
from .measure_config import MeasureConfig
from .naming import ModuleNames, c_module, c_region, code_region, matches
from .self_class import SelfClasses


@dataclass
class CellSpan:
    label: str
    code_filename: str | None
    tid: int
    t0: float  # tracer ns
    t1: float


@dataclass
class ExtraRegion:
    """A region the session recorded itself (user region, import), tracer ns."""

    tid: int
    t0: float
    t1: float
    region: Region
    # a function's code object (``@scorep.user.region()`` while the instrumenter was off):
    # its region is the tracer's when the tracer recorded it before, as Score-P reuses
    # the region it made of that code object
    code: Any = None
    # kept below an excluded module's call too (file I/O is recorded wherever it happens,
    # as by Score-P's I/O adapter; IPython's own ``open`` wraps a cell's)
    always: bool = False


@dataclass
class MarkerAt:
    """A user parameter or measurement on/off the session recorded (tracer ns)."""

    tid: int
    t: float
    marker: Marker


@dataclass
class BuildInput:
    raw: RawCalls
    cells: list[CellSpan]
    extras: list[ExtraRegion]
    instrumenter_off: dict[int, list[tuple[float, float]]]  # function recording paused
    recording_off: dict[int, list[tuple[float, float]]]  # all recording paused
    config: MeasureConfig
    master_tid: int
    drop_file_prefixes: tuple[str, ...] = ()  # e.g. the scorep shim: its frames, not callees
    skip_tids: frozenset = frozenset()  # threads not to record (running before the start)
    markers: list[MarkerAt] = field(default_factory=list)
    stats: dict = field(default_factory=dict)


_EMPTY = np.empty(0, np.float64)


def _union(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted intervals covering the given ones."""
    if len(s) == 0:
        return _EMPTY, _EMPTY
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > reach[:-1]
    idx = np.flatnonzero(new)
    return s[idx], np.maximum.reduceat(e, idx)


def _intervals(pairs: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    if not pairs:
        return _EMPTY, _EMPTY
    a = np.asarray(pairs, np.float64)
    return _union(a[:, 0], a[:, 1])


def _order(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Event order for nested intervals: (interval index, is_enter) per event, sorted by
    time; at equal times leaves first, the outer interval entered first and left last."""
    n = len(s)
    times = np.concatenate([s, e])
    order = np.argsort(times, kind="stable")
    sorted_times = times[order]
    if n and np.any(sorted_times[1:] == sorted_times[:-1]):
        # Equal times (regions closed together at a cell's end): the slower full sort.
        kind = np.concatenate([np.ones(n, np.int8), np.zeros(n, np.int8)])
        secondary = np.concatenate([-e, -s])
        order = np.lexsort((secondary, kind, times))
    return order, (order < n).astype(np.int8)


def _drop_crossing_events(ids: np.ndarray, kinds: np.ndarray, n: int) -> np.ndarray:
    """Intervals that overlap without nesting (clock or bookkeeping trouble), found with a
    stack once, only when the vectorised check failed. ``ids``/``kinds``: the events."""
    bad = np.zeros(n, bool)
    stack: list[int] = []
    for i, kind in zip(ids.tolist(), kinds.tolist()):
        if kind == 1:
            stack.append(i)
        elif stack and stack[-1] == i:
            stack.pop()
        else:
            bad[i] = True
            if i in stack:
                stack.remove(i)
    # an interval whose enter was kept but whose leave never matched is bad too
    for i in stack:
        bad[i] = True
    return bad


class _Keys:
    """Per recorded function (key): the filter decisions, and its region index, named only
    when a call of it is kept (``regions_of``).

    Naming costs most for methods of classes with subclasses (self_class's census of live
    instances scans the heap: ~20 ms in a worker), and most of what a light cell records is
    dropped: the worker's and IPython's machinery around the cell, excluded modules. A
    function of an excluded module (and not included), a shim frame and a cell's
    ``<module>`` never become regions at all (-1)."""

    def __init__(self, inp: BuildInput, regions: _RegionTable):
        cfg = inp.config
        self._raw_keys = inp.raw.keys
        self._regions = regions
        cell_files = tuple(c.code_filename for c in inp.cells if c.code_filename)
        self._modules = ModuleNames(cell_files)
        self._classes = SelfClasses()
        n = len(inp.raw.keys)
        self._region = np.full(n, -1, np.int32)
        self._named = np.zeros(n, bool)
        self.excluded = np.zeros(n, bool)
        self.included = np.zeros(n, bool)
        self.no_region = np.zeros(n, bool)  # never a region: excluded, or not a region itself
        self.by_file: dict[str, list[int]] = {}
        self._module_of: list[str] = []
        for i, key in enumerate(inp.raw.keys):
            if key[0] == "py":
                code = key[1]
                filename = code.co_filename
                module = self._modules.module(filename)
                self.by_file.setdefault(filename, []).append(i)
                drop_self = (
                    filename.startswith(inp.drop_file_prefixes) if inp.drop_file_prefixes else False
                )
                if filename in cell_files and code.co_name == "<module>":
                    drop_self = True  # the cell region stands for the cell's top level
            else:
                module = c_module(key[1], key[2])
                drop_self = False
            self._module_of.append(module)
            self.included[i] = matches(module, cfg.include)
            self.excluded[i] = matches(module, cfg.exclude) and not self.included[i]
            self.no_region[i] = drop_self or self.excluded[i]

    def regions_of(self, keys: np.ndarray) -> np.ndarray:
        """The region index of each key (-1: none), naming those not named yet, with one
        census of live instances for all of them."""
        todo = [i for i in np.unique(keys).tolist() if not self._named[i]]
        if todo:
            self._classes.prepare(
                [
                    (self._raw_keys[i][1], self._module_of[i])
                    for i in todo
                    if self._raw_keys[i][0] == "py" and not self.no_region[i]
                ]
            )
            for i in todo:
                self._named[i] = True
                if self.no_region[i]:
                    continue
                key = self._raw_keys[i]
                if key[0] == "py":
                    region, _ = code_region(key[1], self._modules, self._classes)
                else:
                    region, _ = c_region(key[1], key[2], key[3])
                self._region[i] = self._regions.index(region)
        return self._region[keys]

    def of_file(self, filename: str) -> np.ndarray:
        return np.asarray(self.by_file.get(filename, ()), np.int32)


class _RegionTable:
    def __init__(self) -> None:
        self.regions: list[Region] = []
        self._index: dict[Region, int] = {}

    def index(self, region: Region) -> int:
        found = self._index.get(region)
        if found is None:
            found = self._index[region] = len(self.regions)
            self.regions.append(region)
        return found


def _open_at_enter(
    flag: np.ndarray, iv: np.ndarray, sign: np.ndarray, enter: np.ndarray
) -> np.ndarray:
    """For each interval: is some flagged interval open at its enter (itself included)?
    One cumulative sum over the thread's sorted events, instead of interval searches."""
    count = np.cumsum(np.where(flag[iv], sign, 0))
    out = np.zeros(len(flag), bool)
    out[iv[enter]] = count[enter] > 0
    return out


def _starts_in(pairs: list[tuple[float, float]], starts: np.ndarray) -> np.ndarray:
    if not pairs:
        return np.zeros(len(starts), bool)
    os_, oe = _intervals(pairs)
    i = np.searchsorted(os_, starts, side="right") - 1
    return (i >= 0) & (starts <= oe[np.where(i >= 0, i, 0)])


def build_threads(
    inp: BuildInput, to_perf: Callable[[np.ndarray], np.ndarray]
) -> tuple[list[Region], list[ThreadEvents]]:
    """Filter, merge and order everything; ``to_perf`` maps tracer ns to perf_counter ns.

    Per thread: the recorded calls, the session's own regions and the cells become one
    set of intervals, sorted once into events; every filter is then a mask computed with
    cumulative sums over that order ("is an interval of kind X open here?").
    """
    cfg = inp.config
    raw = inp.raw
    regions = _RegionTable()
    keys = _Keys(inp, regions)
    stats = inp.stats
    stats.update(raw_calls=len(raw), outside_cells=0, excluded=0, paused=0, too_deep=0, crossing=0)

    _reuse_function_regions(inp, keys, regions)
    raw_tids = raw.thread_ids()
    tids = list(dict.fromkeys([inp.master_tid] + [c.tid for c in inp.cells] + raw_tids))
    tids = [t for t in tids if t not in inp.skip_tids]
    order_by_tid = np.argsort(raw.tid, kind="stable")
    sorted_tid = raw.tid[order_by_tid]
    threads: list[ThreadEvents] = []
    numbered = 0
    for tid in tids:
        lo, hi = np.searchsorted(sorted_tid, [tid, tid + 1]) if len(sorted_tid) else (0, 0)
        rows = order_by_tid[lo:hi]
        s, e, k = raw.start[rows], raw.end[rows], raw.key[rows]
        cells = [c for c in inp.cells if c.tid == tid]
        mine = [x for x in inp.extras if x.tid == tid]
        xs = np.array([x.t0 for x in mine], np.float64)
        xe = np.array([x.t1 for x in mine], np.float64)
        xr = np.array([regions.index(x.region) for x in mine], np.int32)
        cs = np.array([c.t0 for c in cells], np.float64)
        ce = np.array([c.t1 for c in cells], np.float64)
        cr = np.array(
            [
                regions.index(Region(c.label, "cell", c.code_filename or "", 0, ROLE_CELL))
                for c in cells
            ],
            np.int32,
        )
        # Calls and regions still open when recording stopped (event cap, a region never
        # closed) were closed at stop(); inside a cell they really ended with it.
        for c in cells:
            late = (s >= c.t0) & (s <= c.t1) & (e > c.t1)
            if late.any():
                e = np.where(late, c.t1, e)
            late = (xs >= c.t0) & (xs <= c.t1) & (xe > c.t1)
            xe = np.where(late, c.t1, xe)

        n_raw, n_x = len(s), len(xs)
        S = np.concatenate([s, xs, cs])
        E = np.concatenate([e, xe, ce])
        # the calls' regions are named below, for the calls kept; -1 here where none can be
        R = np.concatenate([np.where(keys.no_region[k], -1, 0), xr, cr]).astype(np.int32)
        N = len(S)
        if N == 0:
            continue
        is_raw = np.zeros(N, bool)
        is_raw[:n_raw] = True
        is_cell = np.zeros(N, bool)
        is_cell[n_raw + n_x :] = True
        order, kinds = _order(S, E)
        iv = np.where(order < N, order, order - N)
        enter = kinds == 1
        sign = np.where(enter, 1, -1)

        # 1. On a cell's thread, only what runs beneath the cell's code (or inside the
        #    cell, when it has no code file): IPython's machinery around a cell stays out.
        if cells:
            anchor = np.zeros(N, bool)
            for i, c in enumerate(cells):
                if c.code_filename:
                    anchor[:n_raw] |= (
                        np.isin(k, keys.of_file(c.code_filename)) & (s >= c.t0) & (e <= c.t1)
                    )
                else:
                    anchor[n_raw + n_x + i] = True
            keep = _open_at_enter(anchor, iv, sign, enter) | is_cell
            stats["outside_cells"] += int((~keep[:n_raw]).sum())
        else:
            keep = np.ones(N, bool)

        # 2. Excluded modules: the call and everything below it, except included modules.
        excluded = np.zeros(N, bool)
        excluded[:n_raw] = keys.excluded[k]
        excluded &= keep
        if excluded.any():
            included = np.zeros(N, bool)
            included[:n_raw] = keys.included[k]
            included[n_raw : n_raw + n_x] = [x.always for x in mine]
            drop = _open_at_enter(excluded, iv, sign, enter) & keep & ~included & ~is_cell
            stats["excluded"] += int(drop[:n_raw].sum())
            keep &= ~drop

        # 3. scorep.instrumenter.disable() / user.disable_recording() periods.
        paused = np.zeros(N, bool)
        paused[:n_raw] = _starts_in(inp.instrumenter_off.get(tid, []), s)
        paused[: n_raw + n_x] |= _starts_in(inp.recording_off.get(tid, []), S[: n_raw + n_x])
        stats["paused"] += int((keep & paused)[:n_raw].sum())
        keep &= ~paused

        # 4. Frames that are not regions themselves (the shim's, a cell's <module>).
        keep &= R >= 0

        # 5. Proper nesting of what is left (clock trouble would break it), then depth.
        kept_ev = keep[iv]
        count = np.cumsum(np.where(kept_ev, sign, 0))
        depth = np.zeros(N, np.int64)
        depth[iv[enter & kept_ev]] = count[enter & kept_ev]
        leave_depth = np.zeros(N, np.int64)
        leave_depth[iv[~enter & kept_ev]] = count[~enter & kept_ev] + 1
        if not np.array_equal(depth[keep], leave_depth[keep]):
            sub = np.flatnonzero(kept_ev)
            bad = _drop_crossing_events(iv[sub], kinds[sub], N) & ~is_cell
            stats["crossing"] += int(bad.sum())
            keep &= ~bad
            kept_ev = keep[iv]
            count = np.cumsum(np.where(kept_ev, sign, 0))
            depth[iv[enter & kept_ev]] = count[enter & kept_ev]
        if cfg.max_depth is not None:
            level = depth - (1 if cells else 0)
            deep = keep & (level > cfg.max_depth) & ~is_cell
            stats["too_deep"] += int(deep.sum())
            keep &= ~deep
            kept_ev = keep[iv]

        if not kept_ev.any():
            continue
        kept_calls = np.flatnonzero(keep[:n_raw])
        R[kept_calls] = keys.regions_of(k[kept_calls])
        sel = order[kept_ev]
        times = np.maximum.accumulate(to_perf(np.concatenate([S, E])[sel]))
        if tid == inp.master_tid:
            name = "Master thread"
        else:
            numbered += 1
            name = thread_location_name(numbered, raw.thread_names.get(tid))
        ev_kinds = np.where(kinds[kept_ev] == 1, ENTER, LEAVE).astype(np.int8)
        threads.append(
            ThreadEvents(
                name=name,
                thread_id=int(tid),
                times=times.astype(np.int64),
                regions=R[iv[kept_ev]].astype(np.int32),
                kinds=ev_kinds,
                markers=_markers(inp, tid, times, ev_kinds, to_perf, cells),
            )
        )
    return regions.regions, threads


def _markers(
    inp: BuildInput,
    tid: int,
    times: np.ndarray,
    kinds: np.ndarray,
    to_perf: Callable[[np.ndarray], np.ndarray],
    cells: list[CellSpan],
) -> Markers | None:
    """The thread's markers placed among its final events; one set while recording was
    off is dropped with the events (the measurement's own on/off marks stay), and so is
    one outside the cells on a cell's thread (the kernel's own work)."""
    if not inp.markers:
        return None
    mine = [m for m in inp.markers if m.tid == tid]
    if not mine:
        return None
    t = np.array([m.t for m in mine], np.float64)
    off = _starts_in(inp.recording_off.get(tid, []), t)
    if cells:
        off |= ~_starts_in([(c.t0, c.t1) for c in cells], t)
    keep = [i for i, m in enumerate(mine) if m.marker.kind == "on_off" or not off[i]]
    if not keep:
        return None
    order = sorted(keep, key=lambda i: t[i])
    perf = to_perf(t[order]).astype(np.int64)
    return Markers(_place(times, kinds, perf), perf, [mine[i].marker for i in order])


def _place(times: np.ndarray, kinds: np.ndarray, perf: np.ndarray) -> np.ndarray:
    """The event each marker follows (-1: before the first). Events of the marker's own
    clock tick may be on either side of it (a region begun, marked and ended within one
    or two ticks: the shim's ``error_region``, its times rounded to ticks with a clock
    slope a little under 1 can put the marker on its leave's tick); the marker goes where
    the nesting is deepest among those places, the last of them: inside the region it was
    recorded in, even when the only event of its tick is that region's leave."""
    lo = np.searchsorted(times, perf, side="left")
    hi = np.searchsorted(times, perf, side="right")
    after = hi - 1
    for k in np.flatnonzero(hi > lo).tolist():
        steps = np.where(kinds[lo[k] : hi[k]] == ENTER, 1, -1)
        depth = np.concatenate(([0], np.cumsum(steps)))
        after[k] = lo[k] - 1 + int(len(depth) - 1 - np.argmax(depth[::-1]))
    return after.astype(np.int64)


def _reuse_function_regions(inp: BuildInput, keys: _Keys, regions: _RegionTable) -> None:
    """A function recorded by ``@scorep.user.region()`` while the instrumenter was off is
    the tracer's region of that function when the tracer recorded a call of it earlier
    with the instrumenter on (Score-P keeps one region per code object: a method is then
    ``module.Class:name``, not the decorator's ``module:name``)."""
    if all(x.code is None for x in inp.extras):
        return
    raw = inp.raw
    by_code = {id(k[1]): i for i, k in enumerate(raw.keys) if k[0] == "py"}
    for x in inp.extras:
        key = by_code.get(id(x.code)) if x.code is not None else None
        region = -1 if key is None else int(keys.regions_of(np.array([key]))[0])
        if region < 0:
            continue
        rows = (raw.key == key) & (raw.start < x.t0)
        for tid in np.unique(raw.tid[rows]).tolist():
            starts = raw.start[rows & (raw.tid == tid)]
            if not _starts_in(inp.instrumenter_off.get(tid, []), starts).all():
                x.region = regions.regions[region]
                break
