"""The fast reader against the otf2 package's public reader, event by event, and the
interval pairing against a plain stack walk."""

from __future__ import annotations

import dataclasses

import numpy as np
import otf2
import pytest
from experiment_factory import REGIONS, default_metrics, write_experiment

from jupyterlab_scorep.trace import intervals
from jupyterlab_scorep.trace.otf2_read import TraceReadError, read_trace
from scorep_kernel.formats.recording import ENTER, LEAVE, Region, ThreadEvents

pytestmark = pytest.mark.timeout(120)


def random_thread(
    seed: int, name: str, tid: int, n_events: int = 3000, n_regions: int = 12, max_depth: int = 9
) -> ThreadEvents:
    rng = np.random.default_rng(seed)
    kinds, regs, stack = [], [], []
    while len(kinds) < n_events or stack:
        if stack and (len(stack) >= max_depth or len(kinds) >= n_events or rng.random() < 0.45):
            kinds.append(LEAVE)
            regs.append(stack.pop())
        else:
            r = int(rng.integers(0, n_regions))
            stack.append(r)
            kinds.append(ENTER)
            regs.append(r)
    # zero-length steps too: equal timestamps must survive
    times = 5_000_000_000 + np.cumsum(rng.integers(0, 900, size=len(kinds)))
    return ThreadEvents(
        name, tid, times.astype(np.int64), np.asarray(regs, np.int32), np.asarray(kinds, np.int8)
    )


RANDOM_REGIONS = [
    Region(f"mod{i % 3}:fn{i}", f"mod{i % 3}", f"/src/mod{i % 3}.py", i + 1) for i in range(12)
]


@pytest.fixture(params=[1, 2])
def random_experiment(request, tmp_path):
    seed = request.param
    threads = [
        random_thread(seed * 10 + t, "Master thread" if t == 0 else f"Thread {t}", t)
        for t in range(3)
    ]
    return write_experiment(
        tmp_path / f"rand{seed}",
        threads=threads,
        regions=RANDOM_REGIONS,
        metrics=default_metrics(),
        cubex=False,
    )


def public_events(anchor):
    """{location name: [(kind, time, region ref or (metric values))]} via otf2.reader."""
    out = {}
    with otf2.reader.open(anchor) as trace:
        refs = {id(r): i for i, r in enumerate(trace.definitions.regions)}
        for location, event in trace.events:
            if isinstance(event, otf2.events.Enter):
                item = ("enter", event.time, refs[id(event.region)])
            elif isinstance(event, otf2.events.Leave):
                item = ("leave", event.time, refs[id(event.region)])
            elif isinstance(event, otf2.events.Metric):
                item = ("metric", event.time, tuple(float(v) for v in event.values))
            else:
                continue
            out.setdefault(location.name, []).append(item)
    return out


def test_fast_reader_matches_public_reader_event_by_event(random_experiment):
    anchor = str(random_experiment / "traces.otf2")
    defs, events = read_trace(anchor)
    expected = public_events(anchor)
    names = [loc["name"] for loc in defs.locations]
    assert set(names) == set(expected)
    for info, ev in zip(defs.locations, events):
        got = []
        for t, r in zip(ev.times.tolist(), ev.signed_regions.tolist()):
            got.append(("enter", t, r) if r >= 0 else ("leave", t, ~r))
        calls = [e for e in expected[info["name"]] if e[0] != "metric"]
        assert got == calls, info["name"]
        metrics = [e for e in expected[info["name"]] if e[0] == "metric"]
        if metrics:
            n_members = len(metrics[0][2])
            values = ev.metric_values.reshape(-1, n_members)
            assert [
                ("metric", int(t), tuple(v))
                for t, v in zip(ev.metric_times[::n_members].tolist(), values.tolist())
            ] == metrics
            names_of = [defs.metric_members[m]["name"] for m in ev.metric_members[:n_members]]
            assert names_of == ["cpu.total", "cpu.core0", "cpu.core1", "mem.rss"]
    with otf2.reader.open(anchor) as trace:
        clock = trace.definitions.clock_properties
        assert (defs.global_offset, defs.trace_length) == (clock.global_offset, clock.trace_length)
        assert [r["name"] for r in defs.regions.values()] == [
            r.name for r in trace.definitions.regions
        ]


def stack_walk(times, signed):
    """Reference pairing with an explicit stack: [(depth, start, end, region)]."""
    stack, out = [], []
    for t, r in zip(times.tolist(), signed.tolist()):
        if r >= 0:
            stack.append((t, r))
        else:
            start, region = stack.pop()
            out.append((len(stack), start, t, region))
    return sorted(out)


def test_pairing_matches_a_stack_walk(random_experiment):
    defs, events = read_trace(str(random_experiment / "traces.otf2"))
    for ev in events:
        if not ev.times.size:
            continue
        iv = intervals.pair_calls(ev.times, ev.signed_regions)
        depth = np.repeat(np.arange(iv.max_depth + 1), np.diff(iv.depth_ptr))
        got = sorted(zip(depth.tolist(), iv.start.tolist(), iv.end.tolist(), iv.region.tolist()))
        assert got == stack_walk(ev.times, ev.signed_regions)
        assert iv.mismatched == iv.closed_at_end == iv.opened_at_start == 0
        for d in range(iv.max_depth + 1):  # within a depth, starts and ends are sorted
            a, b = iv.depth_ptr[d], iv.depth_ptr[d + 1]
            assert np.all(np.diff(iv.start[a:b]) >= 0) and np.all(np.diff(iv.end[a:b]) >= 0)


def test_each_location_is_handed_over_as_it_is_read(random_experiment):
    """read_trace's ``each`` gets every location's events, in order, and its answer is
    kept in their place; what it raises passes as it is (not as a TraceReadError)."""
    anchor = str(random_experiment / "traces.otf2")
    _defs, plain = read_trace(anchor)
    seen = []

    def each(ev):
        seen.append(ev)
        return dataclasses.replace(ev, times=ev.times[:0])

    _defs, kept = read_trace(anchor, each=each)
    assert [ev.ref for ev in seen] == [ev.ref for ev in plain] == [ev.ref for ev in kept]
    for a, b, c in zip(seen, plain, kept):
        np.testing.assert_array_equal(a.times, b.times)
        np.testing.assert_array_equal(a.signed_regions, b.signed_regions)
        assert c.times.size == 0

    def fails(ev):
        raise ValueError("from each")

    with pytest.raises(ValueError, match="from each"):
        read_trace(anchor, each=fails)


def test_unbalanced_streams_are_closed_at_the_ends():
    # leave of an unseen call, then a call, then an enter that never leaves
    times = np.array([5, 10, 20, 30], np.int64)
    signed = np.array([~7, 3, ~3, 4], np.int64)
    iv = intervals.pair_calls(times, signed)
    assert iv.opened_at_start == 1 and iv.closed_at_end == 1
    calls = sorted(zip(iv.start.tolist(), iv.end.tolist(), iv.region.tolist()))
    assert calls == [(5, 5, 7), (10, 20, 3), (30, 30, 4)]


def both_definitions(anchor: str):
    """The archive's Definitions from the otf2 package's objects (read_definitions) and
    from the ctypes records read_trace uses (definitions_of)."""
    import _otf2
    import otf2

    from jupyterlab_scorep.trace.otf2_definitions import definitions_of, read_definitions
    from jupyterlab_scorep.trace.otf2_global_defs import read_global_records

    with otf2.reader.open(anchor) as trace:
        public = read_definitions(trace)
    handle = _otf2.Reader_Open(anchor)
    try:
        _otf2.Reader_SetSerialCollectiveCallbacks(handle)
        native = definitions_of(read_global_records(handle))
    finally:
        _otf2.Reader_Close(handle)
    return public, native


def test_definitions_by_ctypes_are_the_packages(random_experiment, tmp_path):
    for exp in (random_experiment, write_experiment(tmp_path / "known")):
        public, native = both_definitions(str(exp / "traces.otf2"))
        assert public.metric_members and public.metric_classes and public.regions
        assert native == public


def test_missing_and_foreign_archives_raise_trace_read_error(tmp_path):
    with pytest.raises(TraceReadError, match="missing"):
        read_trace(str(tmp_path / "traces.otf2"))
    (tmp_path / "traces.otf2").write_bytes(b"not an otf2 anchor at all")
    (tmp_path / "traces.def").write_bytes(b"")
    with pytest.raises(TraceReadError, match="cannot open"):
        read_trace(str(tmp_path / "traces.otf2"))


def test_known_recording_reads_back(tmp_path):
    exp = write_experiment(tmp_path / "known")
    defs, events = read_trace(str(exp / "traces.otf2"))
    assert [loc["name"] for loc in defs.locations] == [
        "Master thread",
        "Thread 1 (worker)",
        "System metrics",
    ]
    assert [loc["kind"] for loc in defs.locations] == ["thread", "thread", "metric"]
    assert sorted({r["name"] for r in defs.regions.values()}) == sorted(r.name for r in REGIONS)
    roles = {r["name"]: r["role"] for r in defs.regions.values()}
    assert roles["__main__:<cell 1>"] == "cell" and roles["__main__:f"] == "function"
    assert [e.times.size for e in events] == [12, 8, 0]
    assert events[2].metric_times.size == 11 * 4


def test_score_p_thread_names_are_looked_up_by_group_then_by_name(tmp_path):
    """Under MPI every rank has its "Orphan thread 1": the manifest's group_thread_names
    names a location in its group; a group it does not name falls back to thread_names
    (what older manifests hold), and without either the names are the trace's."""
    from scorep_kernel import manifest as mf
    from scorep_kernel.mpi.otf2_ranks import RankLocation, write_otf2_ranks

    times = 1_700_000_000_000_000_000 + np.array([10, 20], np.int64)
    regions, kinds = np.array([0, 0], np.int32), np.array([1, 0], np.int8)
    locations = [
        RankLocation(rank, "a", ThreadEvents(name, 1, times, regions, kinds))
        for rank in (0, 1)
        for name in ("Master thread", "Orphan thread 1")
    ]
    write_otf2_ranks(locations, [Region("m:f", "m")], [], {}, tmp_path)

    def names() -> list[tuple[str, str]]:
        definitions, _events = read_trace(str(tmp_path / "traces.otf2"))
        return [(x["group"], x["name"]) for x in definitions.locations]

    mf.write_manifest(tmp_path, mf.new_manifest("x", backend="scorep", isolation="subprocess"))
    as_written = [
        (f"MPI Rank {r}", n) for r in (0, 1) for n in ("Master thread", "Orphan thread 1")
    ]
    assert names() == as_written
    mf.update_manifest(tmp_path, thread_names={"Orphan thread 1": "Thread 1 (old)"})
    assert [n for _g, n in names()] == ["Master thread", "Thread 1 (old)"] * 2
    mf.update_manifest(
        tmp_path, group_thread_names={"MPI Rank 1": {"Orphan thread 1": "Thread 1 (work)"}}
    )
    assert names() == [
        ("MPI Rank 0", "Master thread"), ("MPI Rank 0", "Thread 1 (old)"),
        ("MPI Rank 1", "Master thread"), ("MPI Rank 1", "Thread 1 (work)"),
    ]  # fmt: skip
