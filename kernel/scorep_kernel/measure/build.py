"""From what the tracer recorded to a ``Recording``: filters, cells, nesting, clock.

Everything here works on whole arrays: the per-call cost of a Python loop would be paid
again for every one of up to millions of calls. Calls are intervals ``[start, end]`` of one
thread; they nest (a call lies inside its caller), which the filters rely on: "everything
below an excluded call" is every interval inside the union of the excluded intervals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..recording import ENTER, LEAVE, ROLE_CELL, Region, ThreadEvents
from .config import MeasureConfig
from .engine import RawCalls
from .naming import ModuleNames, c_region, code_region, matches


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


def _inside(us: np.ndarray, ue: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Which intervals [s, e] lie within one of the disjoint sorted intervals."""
    if len(us) == 0:
        return np.zeros(len(s), bool)
    i = np.searchsorted(us, s, side="right") - 1
    ok = i >= 0
    return ok & (e <= ue[np.where(ok, i, 0)])


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


def _depths(order: np.ndarray, kinds: np.ndarray, n: int) -> tuple[np.ndarray, bool]:
    """Depth of each interval (1 = outermost) and whether they nest properly."""
    delta = np.where(kinds == 1, 1, -1)
    after = np.cumsum(delta)
    inv = np.empty_like(order)
    inv[order] = np.arange(len(order))
    enter_depth = after[inv[:n]]
    leave_depth = after[inv[n:]] + 1
    return enter_depth, bool(np.array_equal(enter_depth, leave_depth))


def _drop_crossing(order: np.ndarray, kinds: np.ndarray, n: int) -> np.ndarray:
    """Intervals that overlap without nesting (clock or bookkeeping trouble): found with a
    stack, once, only when the vectorised check failed."""
    bad = np.zeros(n, bool)
    stack: list[int] = []
    for pos, kind in zip(order.tolist(), kinds.tolist()):
        i = pos if pos < n else pos - n
        if kind == 1:
            stack.append(i)
        elif stack and stack[-1] == i:
            stack.pop()
        else:
            bad[i] = True
            if i in stack:
                stack.remove(i)
    return bad


class _Keys:
    """Per recorded function (key): its region index, and the filter decisions."""

    def __init__(self, inp: BuildInput, regions: "_RegionTable"):
        cfg = inp.config
        cell_files = tuple(c.code_filename for c in inp.cells if c.code_filename)
        modules = ModuleNames(cell_files)
        n = len(inp.raw.keys)
        self.region = np.full(n, -1, np.int32)
        self.excluded = np.zeros(n, bool)
        self.included = np.zeros(n, bool)
        self.by_file: dict[str, list[int]] = {}
        for i, key in enumerate(inp.raw.keys):
            if key[0] == "py":
                code = key[1]
                region, module = code_region(code, modules)
                filename = code.co_filename
                self.by_file.setdefault(filename, []).append(i)
                drop_self = filename.startswith(inp.drop_file_prefixes) if inp.drop_file_prefixes else False
                if filename in cell_files and code.co_name == "<module>":
                    drop_self = True  # the cell region stands for the cell's top level
            else:
                region, module = c_region(key[1], key[2], key[3])
                drop_self = False
            self.included[i] = matches(module, cfg.include)
            self.excluded[i] = matches(module, cfg.exclude) and not self.included[i]
            if not drop_self:
                self.region[i] = regions.index(region)

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


def build_threads(
    inp: BuildInput, to_perf: Callable[[np.ndarray], np.ndarray]
) -> tuple[list[Region], list[ThreadEvents]]:
    """Filter, merge and order everything; ``to_perf`` maps tracer ns to perf_counter ns."""
    cfg = inp.config
    raw = inp.raw
    regions = _RegionTable()
    keys = _Keys(inp, regions)
    stats = inp.stats
    stats.update(raw_calls=len(raw), outside_cells=0, excluded=0, paused=0, too_deep=0, crossing=0)

    tids = list(dict.fromkeys([inp.master_tid] + [c.tid for c in inp.cells] + np.unique(raw.tid).tolist()))
    traced = set(np.unique(raw.tid).tolist()) | {c.tid for c in inp.cells} | {inp.master_tid}
    order_by_tid = np.argsort(raw.tid, kind="stable")
    sorted_tid = raw.tid[order_by_tid]
    threads: list[ThreadEvents] = []
    numbered = 0
    for tid in tids:
        lo, hi = np.searchsorted(sorted_tid, [tid, tid + 1]) if len(sorted_tid) else (0, 0)
        rows = order_by_tid[lo:hi]
        s, e, k = raw.start[rows], raw.end[rows], raw.key[rows]
        cells = [c for c in inp.cells if c.tid == tid]

        # 1. On a cell's thread, only calls beneath the cell's code (or inside the cell's
        #    span when it has no code file) - IPython's machinery around a cell stays out.
        if cells:
            # Calls still open when recording stopped (event cap) are closed by the tracer
            # at stop(); those inside a cell really ended with it.
            for c in cells:
                late = (s >= c.t0) & (s <= c.t1) & (e > c.t1)
                e[late] = c.t1
            span_s, span_e = [], []
            for c in cells:
                if c.code_filename:
                    m = np.isin(k, keys.of_file(c.code_filename)) & (s >= c.t0) & (e <= c.t1)
                    span_s.append(s[m])
                    span_e.append(e[m])
                else:
                    span_s.append(np.array([c.t0]))
                    span_e.append(np.array([c.t1]))
            us, ue = _union(np.concatenate(span_s), np.concatenate(span_e))
            keep = _inside(us, ue, s, e)
            stats["outside_cells"] += int((~keep).sum())
        else:
            us = ue = None
            keep = np.ones(len(s), bool)

        # 2. Excluded modules: the call and everything below it, except included modules.
        ex = keep & keys.excluded[k]
        if ex.any():
            xs, xe = _union(s[ex], e[ex])
            drop = keep & _inside(xs, xe, s, e) & ~keys.included[k]
            stats["excluded"] += int(drop.sum())
            keep &= ~drop

        # 3. scorep.instrumenter.disable() / user.disable_recording() periods.
        for pairs in (inp.instrumenter_off.get(tid, []), inp.recording_off.get(tid, [])):
            if pairs:
                os_, oe = _intervals(pairs)
                i = np.searchsorted(os_, s, side="right") - 1
                inside = (i >= 0) & (s <= oe[np.where(i >= 0, i, 0)])
                stats["paused"] += int((keep & inside).sum())
                keep &= ~inside

        rid = keys.region[k]
        keep &= rid >= 0
        S, E, R = [s[keep]], [e[keep]], [rid[keep]]

        # Regions the session recorded itself (user regions, imports).
        mine = [x for x in inp.extras if x.tid == tid and tid in traced]
        if mine:
            xs = np.array([x.t0 for x in mine])
            xe = np.array([x.t1 for x in mine])
            if us is None:
                ok = np.ones(len(mine), bool)
            else:
                # A region left open (closed at stop) ends with the cell code it began in.
                i = np.searchsorted(us, xs, side="right") - 1
                j = np.where(i >= 0, i, 0)
                within = (i >= 0) & (xs <= ue[j])
                xe = np.where(within & (xe > ue[j]), ue[j], xe)
                ok = _inside(us, ue, xs, xe)
            off = inp.recording_off.get(tid, [])
            if off:
                os_, oe = _intervals(off)
                i = np.searchsorted(os_, xs, side="right") - 1
                ok &= ~((i >= 0) & (xs <= oe[np.where(i >= 0, i, 0)]))
            S.append(xs[ok])
            E.append(xe[ok])
            R.append(np.array([regions.index(x.region) for x, y in zip(mine, ok) if y], np.int32))
        n_calls = sum(len(a) for a in S)
        for c in cells:
            S.append(np.array([c.t0]))
            E.append(np.array([c.t1]))
            R.append(np.array([regions.index(Region(c.label, "cell", c.code_filename or "", 0, ROLE_CELL))], np.int32))
        S, E, R = np.concatenate(S), np.concatenate(E), np.concatenate(R).astype(np.int32)
        is_cell = np.zeros(len(S), bool)
        is_cell[n_calls:] = True
        if len(S) == 0:
            continue

        order, kinds = _order(S, E)
        depth, nested = _depths(order, kinds, len(S))
        if not nested:
            bad = _drop_crossing(order, kinds, len(S)) & ~is_cell
            stats["crossing"] += int(bad.sum())
            S, E, R, is_cell = S[~bad], E[~bad], R[~bad], is_cell[~bad]
            order, kinds = _order(S, E)
            depth, _ = _depths(order, kinds, len(S))
        if cfg.max_depth is not None:
            level = depth - (1 if cells else 0)
            deep = (level > cfg.max_depth) & ~is_cell
            if deep.any():
                stats["too_deep"] += int(deep.sum())
                keep_iv = ~deep
                n = len(S)
                ev_keep = keep_iv[np.where(order < n, order, order - n)]
                order, kinds = order[ev_keep], kinds[ev_keep]

        n = len(S)
        iv = np.where(order < n, order, order - n)
        t = np.concatenate([S, E])[order]
        times = np.maximum.accumulate(to_perf(t))
        if tid == inp.master_tid:
            name = "Master thread"
        else:
            numbered += 1
            label = raw.thread_names.get(tid)
            name = f"Thread {numbered} ({label})" if label else f"Thread {numbered}"
        threads.append(
            ThreadEvents(
                name=name,
                thread_id=int(tid),
                times=times.astype(np.int64),
                regions=R[iv].astype(np.int32),
                kinds=np.where(kinds == 1, ENTER, LEAVE).astype(np.int8),
            )
        )
    return regions.regions, threads
