"""The call-path profile of a Recording: what Score-P's profiling substrate computes.

``build_profile(recording)`` turns the enter/leave streams of all threads into one tree of
call paths (cnodes) shared by all threads, with per (cnode, thread) visits, inclusive time
and the minimum / maximum inclusive time of one visit. Exclusive time follows
(``CallpathProfile.excl_ns``). The CUBE4 writer writes this; tests use it as the reference.

The work is vectorised with numpy; the only Python loops run over stack depth levels and
over cnodes, never over events:

1. Per thread, the stack level of every event is a cumulative sum. A stable sort by level
   puts each enter right before its matching leave (at one level, frames open and close in
   turn), which pairs the events into calls.
2. Level by level over all threads at once, a call's parent is the latest call one level
   up that began before it (``searchsorted``); a cnode is a (parent cnode, region) pair,
   numbered with ``np.unique``.
3. Cnodes are renumbered in depth-first pre-order, children ordered by their first visit
   (earliest start on any thread), so cnode ids are the exclusive-metric order of CUBE4.

One root: when the calls do not all descend from one cnode (several top-level regions or
threads), a synthetic root region named after the run (``root_name``, else the
Recording's ``notes["run_name"]``, else "program"; role "artificial") becomes the parent
of the top-level cnodes. Its visits are 1 on each thread with events and
its inclusive time is the sum of its children, so its exclusive time is 0: it claims no
time the recording did not measure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .recording import ENTER, ROLE_ARTIFICIAL, Recording, Region, ThreadEvents

DEFAULT_ROOT_NAME = "program"


def writer_role(roles: dict, index: int, region: Region):
    """roles[region.role]: a writer's own form of a Recording region role. An unknown role
    is a ValueError naming the region and the roles there are."""
    try:
        return roles[region.role]
    except KeyError:
        raise ValueError(
            f"region {index} ({region.name!r}) has role {region.role!r}; use one of "
            f"{sorted(roles)} (scorep_kernel.region_words.REGION_ROLES)"
        ) from None


def unique_location_names(names: list[str]) -> list[str]:
    """Thread names made unique (" [2]", " [3]" ... on repeats): OTF2 would merge two
    locations defined alike, and viewers could not tell them apart."""
    seen: dict[str, int] = {}
    out = []
    taken = set(names)
    for name in names:
        if name not in seen:
            seen[name] = 1
            out.append(name)
            continue
        k = seen[name]
        while True:
            k += 1
            candidate = f"{name} [{k}]"
            if candidate not in taken:
                break
        seen[name] = k
        taken.add(candidate)
        out.append(candidate)
    return out


class RecordingError(ValueError):
    """The events of a Recording cannot form call paths; the message names the thread,
    the event and the fix."""


@dataclass
class CallpathProfile:
    """The call-path tree and its per-thread values.

    Cnode ids are 0..C-1 in depth-first pre-order (0 is the root); ``parent[0] == -1``.
    Value arrays have shape [C, T] with one column per thread of the Recording, in order.
    Where a thread never visited a cnode, visits, times, min and max are 0.
    """

    regions: list[Region]  # the Recording's regions, plus the synthetic root if any
    region: np.ndarray  # int32 [C]: index into ``regions``
    parent: np.ndarray  # int32 [C]: parent cnode, -1 for the root
    locations: list[str]  # thread names, one per column
    visits: np.ndarray  # uint64 [C, T]
    incl_ns: np.ndarray  # int64 [C, T]
    min_ns: np.ndarray  # int64 [C, T]
    max_ns: np.ndarray  # int64 [C, T]
    synthetic_root: bool
    # int64 [C, T], inclusive like incl_ns: of that time, how long the thread ran on a CPU
    # and how long it was queued for one (the rest it waited: sleep, lock, I/O). None when
    # no thread of the recording carries those readings (ThreadEvents.run_ns).
    run_ns: np.ndarray | None = None
    queue_ns: np.ndarray | None = None

    @property
    def num_cnodes(self) -> int:
        return int(self.region.shape[0])

    def children(self) -> list[list[int]]:
        """Children of each cnode, in order (pre-order ids increase among siblings)."""
        kids: list[list[int]] = [[] for _ in range(self.num_cnodes)]
        for child, par in enumerate(self.parent.tolist()):
            if par >= 0:
                kids[par].append(child)
        return kids

    def excl_ns(self) -> np.ndarray:
        """Exclusive time [C, T]: inclusive time less the children's inclusive time."""
        excl = self.incl_ns.copy()
        has_parent = self.parent >= 0
        np.subtract.at(excl, self.parent[has_parent], self.incl_ns[has_parent])
        return excl

    def depth(self) -> np.ndarray:
        d = np.zeros(self.num_cnodes, dtype=np.int32)
        for c in range(1, self.num_cnodes):  # pre-order: parents come first
            d[c] = d[self.parent[c]] + 1
        return d

    def wide_order(self) -> np.ndarray:
        """Cnode ids in CubeW's "wide search" order: the root, then all children of a node
        at once, then the same for each child in turn (see pycubexr's
        ``_wide_enumeration``). INCLUSIVE metrics are stored in this order."""
        kids = self.children()
        order: list[int] = []
        if self.num_cnodes == 0:
            return np.zeros(0, dtype=np.int64)
        order.append(0)
        stack = [0]
        while stack:
            node = stack.pop()
            order.extend(kids[node])
            stack.extend(reversed(kids[node]))
        return np.asarray(order, dtype=np.int64)


def _pair_calls(thread: ThreadEvents, t_index: int, event_offset: int):
    """Pair one thread's enters and leaves into calls.

    Returns (level, global_pos, start, end, region) arrays sorted by (level, position)."""
    n = len(thread)
    where = f"thread {t_index} ({thread.name!r})"
    kinds = np.asarray(thread.kinds)
    times = np.asarray(thread.times, dtype=np.int64)
    regions = np.asarray(thread.regions, dtype=np.int64)
    if not (kinds.shape == times.shape == regions.shape == (n,)):
        raise RecordingError(
            f"{where}: times, regions and kinds must be 1-d arrays of one length "
            f"(got {times.shape}, {regions.shape}, {kinds.shape})"
        )
    if n % 2:
        raise RecordingError(
            f"{where} has {n} events, an odd number: every enter needs its leave "
            "(the tracer must close open regions at the end of the run)"
        )
    is_enter = kinds == ENTER
    depth_after = np.cumsum(np.where(is_enter, 1, -1), dtype=np.int64)
    if n and depth_after.min() < 0:
        bad = int(np.argmax(depth_after < 0))
        raise RecordingError(f"{where}: event {bad} leaves a region that was never entered")
    if n and depth_after[-1] != 0:
        raise RecordingError(
            f"{where} ends with {int(depth_after[-1])} regions still open: the tracer "
            "must close open regions at the end of the run"
        )
    if n > 1 and (np.diff(times) < 0).any():
        bad = int(np.argmax(np.diff(times) < 0)) + 1
        raise RecordingError(f"{where}: the time of event {bad} goes backwards")
    level = np.where(is_enter, depth_after - 1, depth_after)
    if n and level.max() < np.iinfo(np.int16).max:
        level = level.astype(np.int16)  # a stable sort of int16 is a radix sort
    order = np.argsort(level, kind="stable")
    enters, leaves = order[0::2], order[1::2]
    mismatch = regions[enters] != regions[leaves]
    if mismatch.any():
        wrong = np.flatnonzero(mismatch)
        i = int(wrong[np.argmin(leaves[wrong])])  # the first wrong leave in time
        raise RecordingError(
            f"{where}: event {int(leaves[i])} leaves region {int(regions[leaves[i]])} but "
            f"the open region is {int(regions[enters[i]])} (event {int(enters[i])})"
        )
    if thread.run_ns is not None and thread.queue_ns is not None:
        run = np.asarray(thread.run_ns, np.int64)
        queue = np.asarray(thread.queue_ns, np.int64)
        # within a call's time, never below 0 nor above it (interpolated readings)
        dur = times[leaves] - times[enters]
        run_d = np.clip(run[leaves] - run[enters], 0, dur)
        queue_d = np.clip(queue[leaves] - queue[enters], 0, dur - run_d)
    else:  # not read: all of it counts as running
        run_d = times[leaves] - times[enters]
        queue_d = np.zeros(run_d.size, np.int64)
    return (
        level[enters],
        enters.astype(np.int64) + event_offset,
        times[enters],
        times[leaves],
        regions[enters],
        run_d,
        queue_d,
    )


def build_profile(recording: Recording, *, root_name: str | None = None) -> CallpathProfile:
    """The call-path profile of ``recording`` (see the module docstring)."""
    n_threads = len(recording.threads)
    n_regions = len(recording.regions)
    parts = []
    offset = 0
    for t_index, thread in enumerate(recording.threads):
        level, pos, start, end, reg, run_d, queue_d = _pair_calls(thread, t_index, offset)
        if reg.size and (reg.min() < 0 or reg.max() >= n_regions):
            raise RecordingError(
                f"thread {t_index} ({thread.name!r}) uses region index {int(reg.max())} "
                f"but the recording defines {n_regions} regions"
            )
        thr = np.full(level.shape, t_index, np.int64)
        parts.append((level, pos, start, end, reg, thr, run_d, queue_d))
        offset += len(thread)

    # Level by level, the calls of all threads at that level, thread after thread: global
    # positions stay sorted, so a caller is found by one searchsorted one level up.
    max_level = max((int(p[0][-1]) for p in parts if p[0].size), default=-1)
    levels = np.arange(max_level + 2)
    bounds = [np.searchsorted(p[0], levels) for p in parts]
    cnode_parent: list[np.ndarray] = []
    cnode_region: list[np.ndarray] = []
    # (cnode, start, duration, thread, running, queued) of the level's calls
    per_level: list[tuple] = []
    n_cnodes = 0
    stride = n_regions + 1
    # the previous level's call positions and cnodes (none before level 0)
    prev_pos = prev_cnode = np.zeros(0, np.int64)
    for lv in range(max_level + 1):
        slices = [(p, b[lv], b[lv + 1]) for p, b in zip(parts, bounds) if b[lv + 1] > b[lv]]
        pos = np.concatenate([p[1][lo:hi] for p, lo, hi in slices])
        reg = np.concatenate([p[4][lo:hi] for p, lo, hi in slices])
        if lv == 0:
            parent_cnode = np.full(pos.size, -1, dtype=np.int64)
        else:
            # The latest call one level up that began before this one is its caller.
            parent_cnode = prev_cnode[np.searchsorted(prev_pos, pos) - 1]
        keys = (parent_cnode + 1) * stride + reg
        uniq, inverse = np.unique(keys, return_inverse=True)
        call_cnode = inverse.reshape(-1) + n_cnodes
        cnode_parent.append(uniq // stride - 1)
        cnode_region.append(uniq % stride)
        n_cnodes += uniq.size
        per_level.append(
            (
                call_cnode,
                np.concatenate([p[2][lo:hi] for p, lo, hi in slices]),
                np.concatenate([p[3][lo:hi] - p[2][lo:hi] for p, lo, hi in slices]),
                np.concatenate([p[5][lo:hi] for p, lo, hi in slices]),
                np.concatenate([p[6][lo:hi] for p, lo, hi in slices]),
                np.concatenate([p[7][lo:hi] for p, lo, hi in slices]),
            )
        )
        prev_pos, prev_cnode = pos, call_cnode
    if per_level:
        call_cnode, start, dur, thread_of, run_d, queue_d = (
            np.concatenate(a) for a in zip(*per_level)
        )
    else:
        call_cnode = start = dur = thread_of = run_d = queue_d = np.zeros(0, np.int64)

    parent_tmp = np.concatenate(cnode_parent) if cnode_parent else np.zeros(0, np.int64)
    region_tmp = np.concatenate(cnode_region) if cnode_region else np.zeros(0, np.int64)
    first_start = np.full(n_cnodes, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_start, call_cnode, start)

    regions = list(recording.regions)
    top = np.flatnonzero(parent_tmp == -1)
    synthetic = top.size != 1
    if synthetic:
        regions.append(
            Region(
                name=root_name or str(recording.notes.get("run_name") or DEFAULT_ROOT_NAME),
                group="",
                role=ROLE_ARTIFICIAL,
            )
        )
        # temporary id n_cnodes is the root
        parent_tmp = np.where(parent_tmp == -1, n_cnodes, parent_tmp)
        parent_tmp = np.append(parent_tmp, -1)
        region_tmp = np.append(region_tmp, len(regions) - 1)
        first_start = np.append(first_start, np.iinfo(np.int64).min)
        root_tmp = n_cnodes
        n_total = n_cnodes + 1
    else:
        root_tmp = int(top[0])
        n_total = n_cnodes

    # Depth-first pre-order, siblings by first visit (then by id, for ties).
    sib_order = np.lexsort((np.arange(n_total), first_start))
    kids: list[list[int]] = [[] for _ in range(n_total)]
    parent_list = parent_tmp.tolist()
    for c in sib_order.tolist():
        p = parent_list[c]
        if p >= 0:
            kids[p].append(c)
    preorder: list[int] = []
    stack = [root_tmp]
    while stack:
        node = stack.pop()
        preorder.append(node)
        stack.extend(reversed(kids[node]))
    new_id = np.empty(n_total, dtype=np.int64)
    new_id[np.asarray(preorder, dtype=np.int64)] = np.arange(n_total)

    parent = np.full(n_total, -1, dtype=np.int32)
    has_parent = parent_tmp >= 0
    parent[new_id[has_parent]] = new_id[parent_tmp[has_parent]]
    region = np.empty(n_total, dtype=np.int32)
    region[new_id] = region_tmp

    cn = new_id[call_cnode] if n_cnodes else np.zeros(0, np.int64)
    cell = cn * n_threads + thread_of  # flat index into [cnode, thread]
    size = n_total * n_threads
    visits = np.bincount(cell, minlength=size).astype(np.uint64).reshape(n_total, n_threads)
    incl: np.ndarray = np.zeros(size, dtype=np.int64)  # [cnode, thread] once reshaped
    np.add.at(incl, cell, dur)  # exact integer sums
    vmin: np.ndarray = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(vmin, cell, dur)
    vmax: np.ndarray = np.zeros(size, dtype=np.int64)
    np.maximum.at(vmax, cell, dur)
    incl, vmin, vmax = (a.reshape(n_total, n_threads) for a in (incl, vmin, vmax))
    split = any(t.run_ns is not None for t in recording.threads)
    run_sum: np.ndarray | None = None
    queue_sum: np.ndarray | None = None
    if split:
        flat_run: np.ndarray = np.zeros(size, dtype=np.int64)
        np.add.at(flat_run, cell, run_d)
        flat_queue: np.ndarray = np.zeros(size, dtype=np.int64)
        np.add.at(flat_queue, cell, queue_d)
        run_sum = flat_run.reshape(n_total, n_threads)
        queue_sum = flat_queue.reshape(n_total, n_threads)
    if synthetic:
        root = 0
        top_new = new_id[top]
        incl[root] = incl[top_new].sum(axis=0)
        if run_sum is not None and queue_sum is not None:
            run_sum[root] = run_sum[top_new].sum(axis=0)
            queue_sum[root] = queue_sum[top_new].sum(axis=0)
        active = np.array([len(t) > 0 for t in recording.threads], dtype=bool)
        visits[root] = active.astype(np.uint64)
        vmin[root] = incl[root]
        vmax[root] = incl[root]
    vmin[visits == 0] = 0

    return CallpathProfile(
        regions=regions,
        region=region,
        parent=parent,
        locations=unique_location_names([t.name for t in recording.threads]),
        visits=visits,
        incl_ns=incl,
        min_ns=vmin,
        max_ns=vmax,
        synthetic_root=synthetic,
        run_ns=run_sum,
        queue_ns=queue_sum,
    )
