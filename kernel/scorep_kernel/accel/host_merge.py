"""Put a framework's host events (aten operators, runtime API calls) into a thread's
enter/leave stream, nested under the Python function that called them.

The Python calls come from the tracer's clock, the operators from torch.profiler's: both
are read against the same monotonic clock, but a few hundred ns apart at worst, so an
operator that ends right before its caller returns may appear to end just after it. Such
an operator is cut at its caller's end (the innermost call open at its start); one that
still crosses a Python call (a Python hook that outlives the operator that ran it) is
left out and counted. Whole arrays throughout, but for that rare repair.
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


def _calls(thread: ThreadEvents):
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
    return times[enters], times[leaves], regions[enters], times, open_after


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
    ps, pe, pr, times_old, open_after = _calls(thread)
    s = np.asarray(new.starts, np.int64)
    e = np.asarray(new.ends, np.int64)
    e = np.maximum(_clip_to_callers(s, e, pe, times_old, open_after), s)
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
