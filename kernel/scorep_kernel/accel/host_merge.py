"""Put a framework's host events (aten operators, runtime API calls) into a thread's
enter/leave stream, nested under the Python function that called them.

The Python calls come from the tracer's clock, the operators from torch.profiler's: both
are read against the same monotonic clock, but a few hundred ns apart at worst, so an
operator that ends right before its caller returns may appear to end just after it. Such
an operator is cut at its caller's end (the innermost call open at its start); one that
still crosses a Python call (a Python hook that outlives the operator that ran it) is
left out and counted. Whole arrays throughout, but for that rare repair.

The two clocks are calibrated apart, though: ours maps perf_counter to Unix time when the
measurement starts, Kineto maps its TSC to Unix time when the profiler starts, and under
load either reading can be late by more than the 6-35 µs between a Python call and the
first operator it runs. ``clock_shift`` finds the shift that undoes such a disagreement
(``nest_windows`` says, per operator, which shifts nest it), for all threads at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..formats.recording import ENTER, LEAVE, Callsites, ThreadEvents
from ..measure.build import _order as event_order  # nested intervals -> event order

SHIFT_LIMIT_NS = 1_000_000  # the largest disagreement clock_shift undoes
NEIGHBOURS = 8  # calls each side an operator is also judged against (nest_windows)


@dataclass(frozen=True)
class HostIntervals:
    """Host events for one thread, monotonic ns; ``callsite`` the correlation id of a
    launch (-1 for anything else)."""

    starts: np.ndarray  # int64
    ends: np.ndarray  # int64
    regions: np.ndarray  # int32, index into Recording.regions
    callsite: np.ndarray  # int64


@dataclass(frozen=True)
class ShiftWindows:
    """Per new interval and call it may belong in: the shifts (ns, added to its times)
    that nest it wholly in that call, ``lo[i] <= shift <= hi[i]``."""

    lo: np.ndarray  # int64
    hi: np.ndarray  # int64


@dataclass(frozen=True)
class _Calls:
    """A thread's calls as intervals, with the event times and, after each event, the
    innermost call open (-1: none)."""

    starts: np.ndarray  # int64
    ends: np.ndarray  # int64
    regions: np.ndarray  # int32
    parent: np.ndarray  # int64, the enclosing call (-1: none)
    level: np.ndarray  # int64, 1 for the outermost calls
    times: np.ndarray  # int64, the thread's event times
    open_after: np.ndarray  # int64, per event
    call_of: np.ndarray  # int64, per event: the call it enters or leaves


def _calls(thread: ThreadEvents) -> _Calls:
    """The thread's calls as (start, end, region) intervals, and the innermost call open
    after each event (-1: none). At one stack level enters and leaves alternate, so a
    stable sort by level pairs them; a call's parent is the latest call one level up
    that began before it."""
    kinds = np.asarray(thread.kinds)
    times = np.asarray(thread.times, np.int64)
    is_enter = kinds == ENTER
    level = np.cumsum(np.where(is_enter, 1, -1)) + np.where(is_enter, 0, 1)
    order = np.argsort(level, kind="stable")
    enters, leaves = order[0::2], order[1::2]
    n = len(enters)
    call_level = level[enters]
    parent = np.full(n, -1, np.int64)
    by_level = np.lexsort((enters, call_level))  # calls by level, then start
    lv = call_level[by_level]
    bounds = np.searchsorted(lv, np.arange(1, int(lv.max(initial=0)) + 2))
    for lvl in range(2, int(lv.max(initial=0)) + 1):
        up = by_level[bounds[lvl - 2] : bounds[lvl - 1]]
        here = by_level[bounds[lvl - 1] : bounds[lvl]]
        k = np.searchsorted(enters[up], enters[here], side="right") - 1
        parent[here] = np.where(k >= 0, up[np.maximum(k, 0)], -1)
    call_of_event = np.empty(len(times), np.int64)
    call_of_event[enters] = np.arange(n)
    call_of_event[leaves] = np.arange(n)
    open_after = np.where(is_enter, call_of_event, parent[call_of_event])
    regions = np.asarray(thread.regions, np.int32)
    return _Calls(
        times[enters],
        times[leaves],
        regions[enters],
        parent,
        call_level,
        times,
        open_after,
        call_of_event,
    )


def _clip_to_callers(s, e, ends, times, open_after) -> np.ndarray:
    """Each new interval's end, cut at the end of the innermost call open at its start."""
    if not len(times):
        return e
    pos = np.searchsorted(times, s, side="right") - 1
    container = np.where(pos >= 0, open_after[np.maximum(pos, 0)], -1)
    has = container >= 0
    out = e.copy()
    out[has] = np.minimum(e[has], ends[container[has]])
    return out


def _level_ranks(calls: _Calls) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The calls by level, then start (disjoint at one level, so ends sorted too); each
    call's place in that order; and where each level begins in it."""
    by_level = np.lexsort((calls.starts, calls.level))
    rank = np.empty(len(by_level), np.int64)
    rank[by_level] = np.arange(len(by_level))
    level_start = np.searchsorted(calls.level[by_level], np.arange(int(calls.level.max()) + 2))
    return by_level, rank, level_start


def nest_windows(
    thread: ThreadEvents,
    starts: np.ndarray,
    ends: np.ndarray,
    at_shift: int = 0,
    neighbours: int = NEIGHBOURS,
    limit_ns: int = SHIFT_LIMIT_NS,
) -> ShiftWindows:
    """For each new interval, the call of ``thread`` it falls in (the innermost one open
    at its midpoint moved by ``at_shift`` and at least as long as it), and the shifts that put it wholly inside
    that call or another at the same stack level within ``limit_ns`` (at most
    ``neighbours`` each side); intervals in no call are left out.

    Why every call at that level: a shift larger than the gap between two calls moves an
    operator's midpoint into the neighbouring call, and judged against that one alone it
    votes for a shift that nests it there, not for the one that undoes the disagreement.
    Calls at one level are disjoint, so are an interval's windows: the windows holding a
    shift count the intervals it nests, once each."""
    s = np.asarray(starts, np.int64)
    e = np.asarray(ends, np.int64)
    calls = _calls(thread)
    if not len(calls.times) or not len(s):
        return ShiftWindows(np.zeros(0, np.int64), np.zeros(0, np.int64))
    mid = s + (e - s) // 2 + at_shift
    pos = np.searchsorted(calls.times, mid, side="right") - 1
    call = np.where(pos >= 0, calls.open_after[np.maximum(pos, 0)], -1)
    # before or after every call (a recording's edge, read early or late): the
    # outermost call nearest to it, where the shift may move it back
    call = np.where(call >= 0, call, calls.call_of[np.maximum(pos, 0)])
    length = e - s
    while True:  # up the stack, a level per pass, past calls shorter than the interval
        short = call >= 0
        short[short] = calls.ends[call[short]] - calls.starts[call[short]] < length[short]
        if not short.any():
            break
        call[short] = calls.parent[call[short]]
    has = call >= 0
    return _level_windows(calls, call[has], s[has], e[has], neighbours, limit_ns)


def _level_windows(calls: _Calls, call, s, e, neighbours: int, limit_ns: int) -> ShiftWindows:
    """The windows of intervals [s, e] against the calls at their ``call``'s level, up
    to ``neighbours`` each side of it: those as long as the interval, within the limit."""
    by_level, rank, level_start = _level_ranks(calls)
    lvl = calls.level[call]
    lo_rank, hi_rank = level_start[lvl], level_start[lvl + 1]
    los, his = [], []
    for j in range(-neighbours, neighbours + 1):  # a pass per neighbour, all intervals at once
        r = rank[call] + j
        ok = (r >= lo_rank) & (r < hi_rank)
        other = by_level[np.where(ok, r, 0)]
        lo = calls.starts[other] - s
        hi = calls.ends[other] - e
        ok &= (lo <= hi) & (lo <= limit_ns) & (hi >= -limit_ns)
        los.append(lo[ok])
        his.append(hi[ok])
    return ShiftWindows(np.concatenate(los), np.concatenate(his))


def _count_steps(windows: ShiftWindows, limit_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """The number of windows holding a shift, a step function on [-limit, limit]: the
    edges where it changes (a window's lo, the ns after its hi; and -limit, 0, limit+1)
    and the count on [edge k, edge k+1)."""
    lo = np.sort(np.asarray(windows.lo, np.int64))
    hi = np.sort(np.asarray(windows.hi, np.int64))
    edges = np.unique(np.concatenate([[-limit_ns, 0, limit_ns + 1], lo, hi + 1]))
    edges = edges[(edges >= -limit_ns) & (edges <= limit_ns + 1)]
    # windows holding d: those begun by d, less those ended before it
    count = np.searchsorted(lo, edges[:-1], side="right") - np.searchsorted(hi, edges[:-1])
    return edges, count


def clock_shift(windows: ShiftWindows, limit_ns: int = SHIFT_LIMIT_NS, min_gain: int = 2) -> int:
    """The shift (ns, added to the framework's times) that nests the most intervals in
    calls: the middle of the widest range of shifts (|shift| <= ``limit_ns``) that nest
    the most (ties: the range nearest 0); 0 unless it nests at least ``min_gain`` more
    than no shift does.

    Why: the framework's clock and ours are calibrated apart (module doc), and an
    operator whose start lands before its caller's enter crosses the caller and is left
    out. A disagreement moves every operator alike, so many gain from one shift; a single
    stray (a hook that outlives its operator) does not, and is left out as before. The
    range's middle, not its edge: at an edge the operators that set it just fit, and
    the jitter between one operator and the next puts others across their call's enter
    or leave; the middle leaves each side the most room."""
    if not len(windows.lo):
        return 0
    edges, count = _count_steps(windows, limit_ns)
    best = int(count.max())
    if best < int(count[np.searchsorted(edges, 0)]) + min_gain:
        return 0
    top = np.concatenate([[False], count == best, [False]]).astype(np.int8)
    change = np.diff(top)
    first = edges[np.flatnonzero(change == 1)]  # a run of the most begins here...
    last = edges[np.flatnonzero(change == -1)] - 1  # ...and ends here (inclusive)
    middle = first + (last - first) // 2
    pick = np.lexsort((np.abs(middle), -(last - first)))[0]
    return int(middle[pick])


def find_shift(threads: list[tuple[ThreadEvents, np.ndarray, np.ndarray]], passes: int = 3) -> int:
    """The clock shift for new intervals (starts, ends) on several threads at once (the
    clocks are the process's): ``clock_shift`` over their ``nest_windows``, read again
    at the midpoints that shift moves them to, until it stays (at most ``passes``).

    Why again: an interval outside every call (read late past the cell's end) or in the
    gap between two calls is judged against the call that holds everything, whose window
    holds almost any shift and so cannot tell the right one from one a few us off; at
    the shift found, it lies in the call it belongs to and its window says how far."""
    shift = 0
    for _ in range(passes):
        parts = [nest_windows(t, s, e, at_shift=shift) for t, s, e in threads]
        lo = np.concatenate([np.zeros(0, np.int64)] + [w.lo for w in parts])
        hi = np.concatenate([np.zeros(0, np.int64)] + [w.hi for w in parts])
        found = clock_shift(ShiftWindows(lo, hi))
        if found == shift:
            break
        shift = found
    return shift


def _drop_crossing(ids: np.ndarray, kinds: np.ndarray, is_new: np.ndarray) -> np.ndarray:
    """New intervals that still overlap an existing call without nesting; the existing
    calls are never dropped."""
    bad = np.zeros(len(is_new), bool)
    stack: list[int] = []
    for i, kind in zip(ids.tolist(), kinds.tolist()):
        if bad[i]:
            continue
        if kind == 1:
            stack.append(i)
            continue
        if stack and stack[-1] == i:
            stack.pop()
            continue
        if is_new[i]:
            bad[i] = True
            if i in stack:
                stack.remove(i)
            continue
        while stack and stack[-1] != i:
            bad[stack.pop()] = True  # new intervals opened inside i that outlive it
        if stack:
            stack.pop()
    return bad


def merge(thread: ThreadEvents, new: HostIntervals) -> tuple[ThreadEvents, int]:
    """The thread with ``new`` nested in; the number of new intervals left out."""
    if not len(new.starts):
        return thread, 0
    calls = _calls(thread)
    ps, pe, pr = calls.starts, calls.ends, calls.regions
    s = np.asarray(new.starts, np.int64)
    e = np.asarray(new.ends, np.int64)
    e = np.maximum(_clip_to_callers(s, e, pe, calls.times, calls.open_after), s)
    n_old = len(ps)
    S = np.concatenate([ps, s])
    E = np.concatenate([pe, e])
    R = np.concatenate([pr, np.asarray(new.regions, np.int32)])
    callsite = np.concatenate([np.full(n_old, -1, np.int64), np.asarray(new.callsite, np.int64)])
    is_new = np.zeros(len(S), bool)
    is_new[n_old:] = True
    order, kinds = event_order(S.astype(np.float64), E.astype(np.float64))
    N = len(S)
    iv = np.where(order < N, order, order - N)
    sign = np.where(kinds == 1, 1, -1)
    depth = np.cumsum(sign)
    enter = kinds == 1
    d_in = np.zeros(N, np.int64)
    d_out = np.zeros(N, np.int64)
    d_in[iv[enter]] = depth[enter]
    d_out[iv[~enter]] = depth[~enter] + 1
    dropped = 0
    if not np.array_equal(d_in, d_out):
        bad = _drop_crossing(iv, kinds, is_new)
        dropped = int(bad.sum())
        keep_ev = ~bad[iv]
        order, kinds, iv = order[keep_ev], kinds[keep_ev], iv[keep_ev]
    times = np.maximum.accumulate(np.concatenate([S, E])[order])
    regions = R[iv].astype(np.int32)
    kinds_out = np.where(kinds == 1, ENTER, LEAVE).astype(np.int8)
    at = np.flatnonzero((kinds == 1) & (callsite[iv] >= 0))
    callsites = Callsites(at.astype(np.int64), callsite[iv[at]]) if len(at) else None
    if thread.callsites is not None and len(thread.callsites.events):
        raise ValueError(f"thread {thread.name!r} already has callsites: merge its launches once")
    merged = ThreadEvents(thread.name, thread.thread_id, times, regions, kinds_out, callsites)
    return merged, dropped
