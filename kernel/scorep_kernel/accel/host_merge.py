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
    """Per new interval that falls in a call: the shifts (ns, added to its times) that
    nest it wholly in that call, ``lo[i] <= shift <= hi[i]``."""

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
    times: np.ndarray  # int64, the thread's event times
    open_after: np.ndarray  # int64, per event


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
    return _Calls(times[enters], times[leaves], regions[enters], parent, times, open_after)


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


def nest_windows(thread: ThreadEvents, starts: np.ndarray, ends: np.ndarray) -> ShiftWindows:
    """For each new interval, the call of ``thread`` it falls in (the innermost one open
    at its midpoint and at least as long as it) and the shifts that put it wholly inside
    that call; intervals in no call are left out."""
    s = np.asarray(starts, np.int64)
    e = np.asarray(ends, np.int64)
    calls = _calls(thread)
    if not len(calls.times) or not len(s):
        return ShiftWindows(np.zeros(0, np.int64), np.zeros(0, np.int64))
    mid = s + (e - s) // 2
    pos = np.searchsorted(calls.times, mid, side="right") - 1
    call = np.where(pos >= 0, calls.open_after[np.maximum(pos, 0)], -1)
    length = e - s
    while True:  # up the stack, a level per pass, past calls shorter than the interval
        short = call >= 0
        short[short] = calls.ends[call[short]] - calls.starts[call[short]] < length[short]
        if not short.any():
            break
        call[short] = calls.parent[call[short]]
    has = call >= 0
    return ShiftWindows(calls.starts[call[has]] - s[has], calls.ends[call[has]] - e[has])


def clock_shift(windows: ShiftWindows, limit_ns: int = 1_000_000, min_gain: int = 2) -> int:
    """The shift (ns, added to the framework's times) that nests the most intervals in
    the calls they fall in, the smallest one (|shift| <= ``limit_ns``) where several do;
    0 unless it nests at least ``min_gain`` more than no shift does.

    Why: the framework's clock and ours are calibrated apart (module doc), and an
    operator whose start lands before its caller's enter crosses the caller and is left
    out (a shift of -10 ns loses an operator 6 ns into its call). A disagreement moves
    every operator alike, so many gain from one shift; a single stray (a hook that
    outlives its operator) does not, and is left out as before. The count is a step
    function of the shift, changing only at the windows' ends: it is read there (and at
    0) for all candidates at once, from the sorted ends."""
    lo = np.sort(np.asarray(windows.lo, np.int64))
    hi = np.sort(np.asarray(windows.hi, np.int64))
    if not len(lo):
        return 0
    candidates = np.unique(np.concatenate([[0], lo, hi]))
    candidates = candidates[np.abs(candidates) <= limit_ns]
    # windows holding d: those begun by d, less those ended before it
    nested = np.searchsorted(lo, candidates, side="right") - np.searchsorted(hi, candidates)
    at_zero = int(nested[np.searchsorted(candidates, 0)])
    best = candidates[nested == nested.max()]
    shift = int(best[np.argmin(np.abs(best))])  # the smallest; ties: the negative one
    return shift if int(nested.max()) >= at_zero + min_gain else 0


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
