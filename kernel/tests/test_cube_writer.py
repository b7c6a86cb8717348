"""The CUBE4 writer and the call-path profile: profile.cubex read back with pycubexr and
checked against hand-computed values and a naive stack-walking reference."""

from __future__ import annotations

import math
import struct
import sys
import tarfile

import numpy as np
import pytest
from pycubexr import CubexParser

from scorep_kernel.formats.callpath import RecordingError, build_profile
from scorep_kernel.formats.cube_writer import write_cubex
from scorep_kernel.formats.recording import ENTER, LEAVE, Region, ThreadEvents


def _as_float(values) -> list[float]:
    # pycubexr wraps MINDOUBLE / MAXDOUBLE rows in MinValues / MaxValues
    return [float(v) for v in (values.astype(float) if hasattr(values, "astype") else values)]


def read_cubex(path) -> dict:
    """Everything a test needs from a .cubex, read with pycubexr only."""
    with CubexParser(path) as cx:
        cnodes = sorted(cx.all_cnodes(), key=lambda c: c.id)
        out = {
            "locations": [loc.name for loc in cx.get_locations()],
            "roots": [c.id for c in cx.get_root_cnodes()],
            "names": {c.id: cx.get_region(c).name for c in cnodes},
            "parent": {c.id: (c.parent.id if c.parent else -1) for c in cnodes},
            "regions": {c.id: cx.get_region(c) for c in cnodes},
            "metrics": {
                m.name: (getattr(m.metric_type, "name", str(m.metric_type)), m.data_type, m.units)
                for m in cx.get_metrics()
            },
        }
        for name in ("visits", "time", "min_time", "max_time"):
            mv = cx.get_metric_values(cx.get_metric_by_name(name))
            out[name] = {c.id: _as_float(mv.cnode_values(c)) for c in cnodes}
        mv = cx.get_metric_values(cx.get_metric_by_name("time"))
        out["excl_time"] = {
            c.id: _as_float(mv.cnode_values(c, convert_to_exclusive=True)) for c in cnodes
        }
    return out


def path_names(cube: dict, cnode: int) -> str:
    parts = []
    while cnode != -1:
        parts.append(cube["names"][cnode])
        cnode = cube["parent"][cnode]
    return "/".join(reversed(parts))


def naive_profile(recording) -> dict:
    """{(region index path): {thread: [visits, incl, min, max]}} by walking a stack."""
    out: dict = {}
    for ti, t in enumerate(recording.threads):
        stack: list = []
        for ts, r, k in zip(t.times.tolist(), t.regions.tolist(), t.kinds.tolist()):
            if k == ENTER:
                stack.append((r, ts))
                continue
            r0, t0 = stack.pop()
            assert r0 == r
            path = tuple(x for x, _ in stack) + (r,)
            d = ts - t0
            v = out.setdefault(path, {}).setdefault(ti, [0, 0, math.inf, 0])
            v[0] += 1
            v[1] += d
            v[2] = min(v[2], d)
            v[3] = max(v[3], d)
    return out


def profile_paths(profile) -> dict:
    """cnode -> region index path, without a synthetic root."""
    paths = {}
    for c in range(profile.num_cnodes):
        p = int(profile.parent[c])
        own = () if (c == 0 and profile.synthetic_root) else (int(profile.region[c]),)
        paths[c] = (paths[p] if p >= 0 else ()) + own
    return paths


# --- the known recording: g calls f three times, on two threads ----------------------

KNOWN = {
    # path: (visits, time, min_time, max_time) per location [master, worker]
    "run 1": ([1, 1], [1.0, 0.7], [1.0, 0.7], [1.0, 0.7]),
    "run 1/__main__:<cell 1>": ([1, 0], [1.0, 0], [1.0, 0], [1.0, 0]),
    "run 1/__main__:<cell 1>/__main__:g": ([1, 0], [0.7, 0], [0.7, 0], [0.7, 0]),
    "run 1/__main__:<cell 1>/__main__:g/__main__:f": ([3, 0], [0.6, 0], [0.2, 0], [0.2, 0]),
    "run 1/__main__:<cell 1>/__main__:g/__main__:f/numpy:h": (
        [1, 0],
        [0.05, 0],
        [0.05, 0],
        [0.05, 0],
    ),
    "run 1/__main__:g": ([0, 1], [0, 0.7], [0, 0.7], [0, 0.7]),
    "run 1/__main__:g/__main__:f": ([0, 3], [0, 0.6], [0, 0.2], [0, 0.2]),
}


def test_known_recording_exact_values(tmp_path, known_recording):
    path = tmp_path / "profile.cubex"
    stats = write_cubex(known_recording, path, root_name="run 1")
    assert stats["cnodes"] == 7 and stats["synthetic_root"] is True
    cube = read_cubex(path)

    assert cube["locations"] == ["Master thread", "Thread 1 (worker)"]
    assert cube["roots"] == [0]
    assert cube["metrics"] == {
        "visits": ("EXCLUSIVE", "UINT64", "occ"),
        "time": ("INCLUSIVE", "DOUBLE", "sec"),
        "min_time": ("EXCLUSIVE", "MINDOUBLE", "sec"),
        "max_time": ("EXCLUSIVE", "MAXDOUBLE", "sec"),
    }
    got = {
        path_names(cube, c): (
            cube["visits"][c],
            cube["time"][c],
            cube["min_time"][c],
            cube["max_time"][c],
        )
        for c in cube["names"]
    }
    assert got == KNOWN  # exact: ns / 1e9 rounds to the same doubles as the literals

    by_path = {path_names(cube, c): c for c in cube["names"]}
    cell = by_path["run 1/__main__:<cell 1>"]
    assert cube["excl_time"][cell] == pytest.approx([0.3, 0.0])
    assert cube["excl_time"][by_path["run 1"]] == pytest.approx([0.0, 0.0])

    h = cube["regions"][by_path["run 1/__main__:<cell 1>/__main__:g/__main__:f/numpy:h"]]
    assert (h.mod, h.begin, h.paradigm, h.role, h.description) == (
        "/usr/lib/numpy/h.py",
        77,
        "user:numpy",
        "function",
        "function",
    )
    cell_region = cube["regions"][cell]
    assert (cell_region.role, cell_region.description, cell_region.paradigm) == (
        "code",
        "cell",
        "user:__main__",
    )
    root_region = cube["regions"][0]
    assert (root_region.name, root_region.role, root_region.paradigm) == (
        "run 1",
        "artificial",
        "measurement",
    )


def test_cube_values_equal_the_callpath_profile(tmp_path, known_recording):
    profile = build_profile(known_recording, root_name="run 1")
    write_cubex(known_recording, tmp_path / "p.cubex", profile=profile)
    cube = read_cubex(tmp_path / "p.cubex")
    for c in range(profile.num_cnodes):
        assert cube["parent"][c] == profile.parent[c]
        assert cube["names"][c] == profile.regions[profile.region[c]].name
        assert cube["visits"][c] == profile.visits[c].tolist()
        assert cube["time"][c] == (profile.incl_ns[c] / 1e9).tolist()
        assert cube["min_time"][c] == (profile.min_ns[c] / 1e9).tolist()
        assert cube["max_time"][c] == (profile.max_ns[c] / 1e9).tolist()
        assert cube["excl_time"][c] == pytest.approx((profile.excl_ns()[c] / 1e9).tolist())


def test_inclusive_rows_are_in_wide_search_order(tmp_path, known_recording):
    """Raw files: time (INCLUSIVE) rows follow CubeW's wide search, visits (EXCLUSIVE)
    rows pre-order; in this tree the two differ (g on the worker is the root's second
    child, but comes after the master's whole subtree in pre-order)."""
    profile = build_profile(known_recording, root_name="run 1")
    wide = profile.wide_order().tolist()
    assert wide == [0, 1, 5, 2, 3, 4, 6]
    path = tmp_path / "p.cubex"
    write_cubex(known_recording, path, profile=profile)
    with tarfile.open(path) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    assert list(members) == ["anchor.xml"] + [
        f"{i}.{k}" for i in range(4) for k in ("index", "data")
    ]

    def index_positions(raw):
        assert raw[:11] == b"CUBEX.INDEX"
        one, version, fmt, n = struct.unpack("<IHBI", raw[11:22])
        assert (one, version, fmt) == (1, 0, 1)  # little endian, version 0, sparse
        return list(struct.unpack(f"<{n}I", raw[22:]))

    n_loc = 2
    visits_pos = index_positions(members["0.index"])
    assert visits_pos == list(range(7))
    visits_rows = np.frombuffer(members["0.data"][10:], "<u8").reshape(-1, n_loc)
    assert visits_rows.tolist() == profile.visits.tolist()

    time_pos = index_positions(members["1.index"])
    assert time_pos == list(range(7))
    time_rows = np.frombuffer(members["1.data"][10:], "<f8").reshape(-1, n_loc)
    assert members["1.data"][:10] == b"CUBEX.DATA"
    for position, row in zip(time_pos, time_rows.tolist()):
        assert row == (profile.incl_ns[wide[position]] / 1e9).tolist()
    # Row 2 holds the worker's g (cnode 5), not the master's g (cnode 2).
    assert time_rows[2].tolist() == [0.0, 0.7]


def test_single_root_needs_no_synthetic_root(tmp_path, rec):
    recording = rec.make_recording(rec.known_threads()[:1])
    stats = write_cubex(recording, tmp_path / "p.cubex", root_name="unused")
    assert stats["synthetic_root"] is False and stats["regions"] == 4
    cube = read_cubex(tmp_path / "p.cubex")
    assert cube["names"][0] == "__main__:<cell 1>" and cube["parent"][0] == -1
    assert cube["visits"][0] == [1] and cube["time"][0] == [1.0]


@pytest.mark.parametrize("seed", [3, 11])
def test_random_recordings_against_a_naive_reference(tmp_path, rec, seed):
    recording = rec.random_recording(seed, n_threads=3, n_events=4000, n_regions=9)
    profile = build_profile(recording)
    naive = naive_profile(recording)
    paths = profile_paths(profile)
    assert len(set(paths.values())) == profile.num_cnodes  # one cnode per call path
    assert set(p for p in paths.values() if p) == set(naive)
    for c, p in paths.items():
        if not p:
            continue
        for ti in range(3):
            v, incl, vmin, vmax = naive[p].get(ti, [0, 0, 0, 0])
            assert (
                int(profile.visits[c, ti]),
                int(profile.incl_ns[c, ti]),
                int(profile.min_ns[c, ti]),
                int(profile.max_ns[c, ti]),
            ) == (v, incl, vmin if v else 0, vmax)
    # pre-order ids: every parent precedes its children, siblings by first visit
    assert all(profile.parent[c] < c for c in range(1, profile.num_cnodes))

    write_cubex(recording, tmp_path / "p.cubex", profile=profile)
    cube = read_cubex(tmp_path / "p.cubex")
    for c in range(profile.num_cnodes):
        assert cube["visits"][c] == profile.visits[c].tolist()
        assert cube["time"][c] == (profile.incl_ns[c] / 1e9).tolist()
        assert cube["min_time"][c] == (profile.min_ns[c] / 1e9).tolist()
        assert cube["max_time"][c] == (profile.max_ns[c] / 1e9).tolist()


# --- edge cases ----------------------------------------------------------------------


def _empty(name="Thread 2 (idle)", tid=2):
    return ThreadEvents(
        name, tid, np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int8)
    )


def test_empty_thread_gets_a_zero_column(tmp_path, rec):
    recording = rec.make_recording(rec.known_threads() + [_empty()])
    write_cubex(recording, tmp_path / "p.cubex", root_name="run")
    cube = read_cubex(tmp_path / "p.cubex")
    assert cube["locations"][-1] == "Thread 2 (idle)"
    assert all(v[2] == 0 for v in cube["visits"].values())
    assert all(v[2] == 0.0 for v in cube["time"].values())
    assert cube["visits"][0] == [1, 1, 0]


def test_synthetic_root_is_named_after_the_run(tmp_path, rec):
    recording = rec.make_recording(rec.known_threads())
    assert build_profile(recording).regions[-1].name == "program"
    recording.notes["run_name"] = "run 20261129T080102"
    stats = write_cubex(recording, tmp_path / "p.cubex")
    assert stats["synthetic_root"]
    assert read_cubex(tmp_path / "p.cubex")["names"][0] == "run 20261129T080102"
    assert build_profile(recording, root_name="explicit").regions[-1].name == "explicit"


def test_threads_with_one_name_stay_separate_locations(tmp_path, rec):
    threads = [rec.thread_from_calls("worker", i, [(rec.F, 1, 2 + i)]) for i in range(2)]
    write_cubex(rec.make_recording(threads), tmp_path / "p.cubex")
    cube = read_cubex(tmp_path / "p.cubex")
    assert cube["locations"] == ["worker", "worker [2]"]
    assert cube["time"][0] == [1e-9, 2e-9]


def test_recording_without_events_is_one_empty_root(tmp_path, rec):
    recording = rec.make_recording([_empty("Master thread", 0)])
    stats = write_cubex(recording, tmp_path / "p.cubex", root_name="empty run")
    assert stats["cnodes"] == 1
    cube = read_cubex(tmp_path / "p.cubex")
    assert cube["names"] == {0: "empty run"}
    assert cube["visits"][0] == [0] and cube["time"][0] == [0.0]


def test_single_event_pair(tmp_path, rec):
    t = rec.thread_from_calls("Master thread", 0, [(rec.F, 100, 350)])
    write_cubex(rec.make_recording([t]), tmp_path / "p.cubex")
    cube = read_cubex(tmp_path / "p.cubex")
    assert cube["names"] == {0: "__main__:f"}
    assert cube["visits"][0] == [1]
    assert cube["time"][0] == cube["min_time"][0] == cube["max_time"][0] == [250e-9]


def test_unicode_and_xml_special_names(tmp_path, rec):
    regions = [
        Region('__main__:größe<λ>&"数据"', "__main__", "/tmp/ünï & co.py", 3),
        Region("bad\x01control", "m\x02od", "", 0),
    ]
    t = rec.thread_from_calls("Faden ✓ <1>", 0, [(0, 10, 40, [(1, 20, 30)])])
    write_cubex(rec.make_recording([t], regions), tmp_path / "p.cubex")
    cube = read_cubex(tmp_path / "p.cubex")
    assert cube["locations"] == ["Faden ✓ <1>"]
    assert cube["names"][0] == '__main__:größe<λ>&"数据"'
    assert cube["regions"][0].mod == "/tmp/ünï & co.py"
    # XML 1.0 cannot hold control characters: they become U+FFFD
    assert cube["names"][1] == "bad\ufffdcontrol"


def test_very_deep_stack(tmp_path, rec):
    depth = 1000
    regions = [Region(f"deep:level{i}", "deep") for i in range(depth)]
    levels = np.arange(depth)
    thread = ThreadEvents(
        "Master thread",
        0,
        times=np.arange(2 * depth, dtype=np.int64) + rec.MONO_BASE,
        regions=np.concatenate([levels, levels[::-1]]).astype(np.int32),
        kinds=np.concatenate([np.full(depth, ENTER), np.full(depth, LEAVE)]).astype(np.int8),
    )
    profile = build_profile(rec.make_recording([thread], regions))
    assert profile.num_cnodes == depth and not profile.synthetic_root
    assert profile.depth().max() == depth - 1
    # the call at depth i lasts 2 * (depth - i) - 1 ns
    assert profile.incl_ns[:, 0].tolist() == [2 * (depth - i) - 1 for i in range(depth)]
    assert (profile.excl_ns()[:-1, 0] == 2).all()
    path = tmp_path / "p.cubex"
    write_cubex(rec.make_recording([thread], regions), path)
    # pycubexr parses and walks cnodes recursively: a reader limit, not a file problem
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 10 * depth))
    try:
        cube = read_cubex(path)
    finally:
        sys.setrecursionlimit(old_limit)
    assert len(cube["names"]) == depth
    assert cube["visits"][depth - 1] == [1]
    assert cube["time"][0] == [(2 * depth - 1) / 1e9]


# --- bad input -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("times", "regions", "kinds", "message"),
    [
        ([1, 2, 3], [0, 0, 0], [ENTER, LEAVE, ENTER], "odd number"),
        ([1, 2], [0, 0], [LEAVE, ENTER], "never entered"),
        ([1, 2, 3, 4], [0, 0, 0, 0], [ENTER, ENTER, LEAVE, ENTER], "still open"),
        ([1, 2, 3, 4], [0, 1, 0, 1], [ENTER, ENTER, LEAVE, LEAVE], "leaves region 0"),
        ([5, 2], [0, 0], [ENTER, LEAVE], "goes backwards"),
        ([1, 2], [9, 9], [ENTER, LEAVE], "region index 9"),
    ],
)
def test_unusable_events_are_named(tmp_path, rec, times, regions, kinds, message):
    t = ThreadEvents(
        "Master thread",
        0,
        np.array(times, np.int64),
        np.array(regions, np.int32),
        np.array(kinds, np.int8),
    )
    with pytest.raises(RecordingError, match=message):
        write_cubex(rec.make_recording([t]), tmp_path / "p.cubex")
    assert not (tmp_path / "p.cubex").exists()
