"""intervals.call_paths against a plain walk of the same events: every call path's
visits, inclusive and exclusive time, shortest and longest visit, per location."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from synthetic_trace import call_trees

from jupyterlab_scorep.trace import intervals


def events(seed: int, n_units: int) -> tuple[np.ndarray, np.ndarray]:
    """Random call trees one after another, random durations (ties included)."""
    rng = np.random.default_rng(seed)
    kinds, regions = [], []
    for k, r in call_trees(rng, n_units, max_depth=6, regions=(0, 5)):
        kinds.append(k)
        regions.append(r)
    kind = np.concatenate(kinds)
    region = np.concatenate(regions).astype(np.int64)
    times = np.cumsum(rng.integers(0, 4, kind.size)).astype(np.int64)
    return times, np.where(kind == 1, region, ~region)


def walked(times, signed) -> dict[tuple[int, ...], list[int]]:
    """{region path: durations of its visits}, and exclusive time, by a stack walk."""
    stack: list[tuple[int, int]] = []
    visits: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for t, s in zip(times.tolist(), signed.tolist()):
        if s >= 0:
            stack.append((s, t))
        else:
            _region, t0 = stack[-1]
            path = tuple(r for r, _ in stack)
            stack.pop()
            visits[path].append(t - t0)
    return visits


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("region_base", [0, 10**7])  # keys counted; keys too sparse to count
def test_call_paths_match_a_walk_of_the_events(seed, region_base):
    streams = [events(seed * 10 + loc, 200 + 50 * loc) for loc in range(4)]
    streams = [(t, np.where(s >= 0, s + region_base, s - region_base)) for t, s in streams]
    # a location without calls among them, and one of a single call at its end
    streams.insert(1, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
    streams.append((np.array([5, 9], np.int64), np.array([3, ~3], np.int64)))
    per_location = [intervals.pair_calls(t, s) for t, s in streams]
    paths = intervals.call_paths(per_location)
    # region path of every path id
    names: list[tuple[int, ...]] = []
    for p in range(len(paths.parent)):
        parent = int(paths.parent[p])
        names.append((names[parent] if parent >= 0 else ()) + (int(paths.region[p]),))
    assert len(set(names)) == len(names)  # one id per path
    children: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for c, name in enumerate(names):
        children[name[:-1]].append(c)
    for li, (t, s) in enumerate(streams):
        expected = walked(t, s)
        for p, name in enumerate(names):
            durations = expected.get(name, [])
            assert paths.visits[p, li] == len(durations)
            assert paths.incl[p, li] == sum(durations)
            assert paths.min[p, li] == (min(durations) if durations else 0)
            assert paths.max[p, li] == (max(durations) if durations else 0)
            inner = sum(int(paths.incl[c, li]) for c in children[name])
            assert paths.excl[p, li] == sum(durations) - inner
        assert set(expected) <= set(names)


@pytest.mark.parametrize("spread", [1, 10**9])
def test_keys_of_each_location_are_numbered_as_all_keys_together(spread):
    rng = np.random.default_rng(3)
    keys = [rng.integers(0, 50, n) * spread for n in (300, 0, 1, 2000, 7)]
    uniq, each = intervals._unique_each(keys)
    expected_uniq, expected_inverse = intervals._unique(np.concatenate(keys))
    np.testing.assert_array_equal(uniq, expected_uniq)
    assert uniq.dtype == expected_uniq.dtype
    np.testing.assert_array_equal(np.concatenate(each), expected_inverse)
    assert [k.size for k in each] == [k.size for k in keys]
