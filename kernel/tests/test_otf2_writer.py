"""The OTF2 writer: archives read back with the otf2 package's reader and with otf2-print."""

from __future__ import annotations

import shutil

import numpy as np
import otf2
import pytest
from otf2.enums import (
    LocationGroupType,
    LocationType,
    MetricOccurrence,
    Paradigm,
    RegionRole,
    SystemTreeDomain,
)

from scorep_kernel import experiment
from scorep_kernel.formats.otf2_writer import write_otf2
from scorep_kernel.formats.recording import (
    ENTER,
    LEAVE,
    ROLE_ARTIFICIAL,
    ROLE_IMPORT,
    ROLE_USER,
    MetricSamples,
    Region,
    ThreadEvents,
)

needs_otf2_print = pytest.mark.skipif(
    shutil.which("otf2-print") is None,
    reason="otf2-print not installed (Debian package otf2-tools): cannot cross-check",
)


@pytest.fixture(params=["fast", "ctypes", "highlevel"])
def engine(request):
    return request.param


def test_known_recording_definitions(tmp_path, known_recording):
    stats = write_otf2(known_recording, tmp_path)
    assert stats["engine"] == "fast"
    # 20 enter/leave + 11 metric samples
    assert stats["events"] == 31
    for name in (experiment.OTF2_ANCHOR, experiment.OTF2_DEFS, experiment.OTF2_EVENTS_DIR):
        assert (tmp_path / name).exists()

    with otf2.reader.open(str(tmp_path / experiment.OTF2_ANCHOR)) as trace:
        d = trace.definitions
        clock = d.clock_properties
        assert clock.timer_resolution == 10**9
        start_epoch = known_recording.start_ns + known_recording.clock_offset_ns
        assert clock.global_offset == start_epoch
        assert clock.realtime_timestamp == start_epoch
        assert clock.trace_length == known_recording.end_ns - known_recording.start_ns

        nodes = {n.class_name: n for n in d.system_tree_nodes}
        assert nodes["machine"].name == "Linux" and nodes["machine"].parent is None
        assert nodes["node"].name == "testhost" and nodes["node"].parent is nodes["machine"]
        domains = {
            (x.system_tree_node.name, x.system_tree_node_domain) for x in d.system_tree_node_domains
        }
        assert domains == {
            ("Linux", SystemTreeDomain.MACHINE),
            ("testhost", SystemTreeDomain.SHARED_MEMORY),
        }
        (group,) = list(d.location_groups)
        assert group.name == "Process"
        assert group.location_group_type == LocationGroupType.PROCESS
        assert group.system_tree_parent is nodes["node"]

        locations = [(l.name, l.type, l.number_of_events, l.group.name) for l in d.locations]
        assert locations == [
            ("Master thread", LocationType.CPU_THREAD, 12, "Process"),
            ("Thread 1 (worker)", LocationType.CPU_THREAD, 8, "Process"),
            ("System metrics", LocationType.METRIC, 11, "Process"),
        ]

        regions = [
            (
                r.name,
                r.canonical_name,
                r.source_file,
                r.begin_line_number,
                r.region_role,
                r.paradigm,
                r.description,
            )
            for r in d.regions
        ]
        assert regions == [
            (
                "__main__:<cell 1>",
                "__main__:<cell 1>",
                "<cell 1>",
                1,
                RegionRole.CODE,
                Paradigm.USER,
                "cell",
            ),
            (
                "__main__:g",
                "__main__:g",
                "<cell 1>",
                4,
                RegionRole.FUNCTION,
                Paradigm.USER,
                "function",
            ),
            (
                "__main__:f",
                "__main__:f",
                "<cell 1>",
                1,
                RegionRole.FUNCTION,
                Paradigm.USER,
                "function",
            ),
            (
                "numpy:h",
                "numpy:h",
                "/usr/lib/numpy/h.py",
                77,
                RegionRole.FUNCTION,
                Paradigm.USER,
                "function",
            ),
        ]
        groups = {g.name: [m.name for m in g.members] for g in d.groups}
        assert groups == {
            "__main__": ["__main__:<cell 1>", "__main__:g", "__main__:f"],
            "numpy": ["numpy:h"],
        }

        members = [(m.name, m.description, m.unit) for m in d.metric_members]
        assert members == [("cpu.total", "CPU total", "%"), ("mem.rss", "Memory (RSS)", "bytes")]
        (metric_class,) = list(d.metric_classes)
        assert metric_class.occurrence == MetricOccurrence.ASYNCHRONOUS
        assert [m.name for m in metric_class.members] == ["cpu.total", "mem.rss"]
        (recorder,) = list(d.metric_class_recorders)
        assert recorder.recorder.name == "System metrics"


def test_known_recording_events(tmp_path, known_recording, rec, readback, engine):
    write_otf2(known_recording, tmp_path, engine=engine)
    anchor = tmp_path / experiment.OTF2_ANCHOR
    per_location = readback.events_by_location(readback.read_events(anchor))
    expected = readback.expected_thread_events(known_recording)
    for thread_name, events in expected.items():
        assert per_location[thread_name] == events

    # Nesting, spelled out: the master's f calls last 0.2 s and h nests in the first one.
    ms, base = rec.MS, rec.EPOCH_BASE
    master = per_location["Master thread"]
    f_enters = [t for kind, t, name in master if kind == "Enter" and name == "__main__:f"]
    f_leaves = [t for kind, t, name in master if kind == "Leave" and name == "__main__:f"]
    assert [b - a for a, b in zip(f_enters, f_leaves)] == [200 * ms] * 3
    max_depth, stack = 0, []
    for kind, _t, name in master:
        if kind == "Enter":
            stack.append(name)
            max_depth = max(max_depth, len(stack))
        else:
            assert stack.pop() == name
    assert not stack and max_depth == 4
    h_at = master.index(("Enter", base + 150 * ms, "numpy:h"))
    assert master[h_at - 1] == ("Enter", base + 100 * ms, "__main__:f")

    metrics = per_location["System metrics"]
    samples = known_recording.metrics
    assert [m[1] for m in metrics] == (samples.times + known_recording.clock_offset_ns).tolist()
    for m, row in zip(metrics, samples.values.tolist()):
        assert m[0] == "Metric"
        assert m[2] == ("cpu.total", "mem.rss")
        assert list(m[3]) == row


@needs_otf2_print
def test_known_recording_through_otf2_print(tmp_path, known_recording, readback):
    write_otf2(known_recording, tmp_path)
    anchor = tmp_path / experiment.OTF2_ANCHOR
    printed = readback.otf2_print_events(anchor)

    expected = readback.expected_thread_events(known_recording)
    location_ids = {"Master thread": 0, "Thread 1 (worker)": 1}
    for name, loc_id in location_ids.items():
        got = [
            (kind.capitalize(), t, region)
            for kind, loc, t, region in printed
            if loc == loc_id and kind != "METRIC"
        ]
        assert got == expected[name]

    metric_events = [e for e in printed if e[0] == "METRIC"]
    assert len(metric_events) == len(known_recording.metrics.times)
    first = metric_events[0]
    assert first[1] == 2  # the METRIC location
    assert first[2] == known_recording.metrics.times[0] + known_recording.clock_offset_ns
    assert [(n, t) for n, t, _ in first[3]] == [("cpu.total", "DOUBLE"), ("mem.rss", "DOUBLE")]
    # otf2-print shows 6 significant digits
    assert [v for *_, v in first[3]] == pytest.approx(
        known_recording.metrics.values[0].tolist(), rel=1e-5
    )

    defs = readback.otf2_print_definitions(anchor)
    assert "Ticks per Seconds: 1000000000" in defs
    offset = known_recording.start_ns + known_recording.clock_offset_ns
    assert f"Global Offset: {offset}" in defs
    assert f"Length: {known_recording.end_ns - known_recording.start_ns}" in defs
    assert 'Name: "Linux" <' in defs and 'Class: "machine"' in defs
    assert 'Name: "testhost" <' in defs and 'Class: "node"' in defs
    assert 'Name: "Process" <' in defs and "Type: PROCESS" in defs
    assert 'Name: "System metrics" <' in defs and "Type: METRIC" in defs
    assert (
        'Name: "numpy:h"' in defs and 'File: "/usr/lib/numpy/h.py"' in defs and "Begin: 77" in defs
    )
    assert "Role: CODE" in defs and "Role: FUNCTION" in defs


def test_roles_map_to_otf2_roles(tmp_path, rec):
    regions = [
        Region("user:phase", "user", "<cell 2>", 3, ROLE_USER),
        Region("import numpy", "numpy", "", 0, ROLE_IMPORT),
        Region("recording stopped: event cap reached", "", "", 0, ROLE_ARTIFICIAL),
    ]
    t = rec.thread_from_calls("Master thread", 0, [(0, 10, 20, [(1, 11, 12)]), (2, 30, 31)])
    write_otf2(rec.make_recording([t], regions), tmp_path)
    with otf2.reader.open(str(tmp_path / experiment.OTF2_ANCHOR)) as trace:
        got = [
            (r.name, r.region_role, r.paradigm, r.description, r.source_file)
            for r in trace.definitions.regions
        ]
        groups = {g.name for g in trace.definitions.groups}
    assert got == [
        ("user:phase", RegionRole.FUNCTION, Paradigm.USER, "user", "<cell 2>"),
        ("import numpy", RegionRole.FUNCTION, Paradigm.USER, "import", None),
        (
            "recording stopped: event cap reached",
            RegionRole.ARTIFICIAL,
            Paradigm.MEASUREMENT_SYSTEM,
            "artificial",
            None,
        ),
    ]
    assert groups == {"user", "numpy"}  # the artificial region has no group


# --- edge cases ----------------------------------------------------------------------


def test_empty_thread_single_pair_and_no_metrics(tmp_path, rec, readback, engine):
    empty = ThreadEvents(
        "Thread 2 (idle)", 2, np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int8)
    )
    single = rec.thread_from_calls("Master thread", 0, [(rec.F, 1000, 1500)])
    recording = rec.make_recording([single, empty])
    assert recording.metrics is None
    stats = write_otf2(recording, tmp_path, engine=engine)
    assert stats["events"] == 2
    anchor = tmp_path / experiment.OTF2_ANCHOR
    with otf2.reader.open(str(anchor)) as trace:
        locations = [(l.name, l.type, l.number_of_events) for l in trace.definitions.locations]
        assert list(trace.definitions.metric_members) == []
    assert locations == [
        ("Master thread", LocationType.CPU_THREAD, 2),
        ("Thread 2 (idle)", LocationType.CPU_THREAD, 0),
    ]
    offset = recording.clock_offset_ns
    assert readback.read_events(anchor) == [
        ("Master thread", "Enter", 1000 + offset, "__main__:f"),
        ("Master thread", "Leave", 1500 + offset, "__main__:f"),
    ]


def test_threads_with_one_name_stay_separate_locations(tmp_path, rec, readback, engine):
    threads = [
        rec.thread_from_calls("worker", i, [(rec.F, 10 * i + 1, 10 * i + 5)]) for i in range(3)
    ]
    write_otf2(rec.make_recording(threads), tmp_path, engine=engine)
    per_location = readback.events_by_location(
        readback.read_events(tmp_path / experiment.OTF2_ANCHOR)
    )
    assert sorted(per_location) == ["worker", "worker [2]", "worker [3]"]
    assert [e[1] for e in per_location["worker [3]"]] == [
        21 + rec.EPOCH_BASE - rec.MONO_BASE,
        25 + rec.EPOCH_BASE - rec.MONO_BASE,
    ]


def test_recording_without_threads(tmp_path, rec):
    recording = rec.make_recording([], metrics=rec.known_metrics())
    stats = write_otf2(recording, tmp_path)
    assert stats["events"] == 11
    with otf2.reader.open(str(tmp_path / experiment.OTF2_ANCHOR)) as trace:
        assert [l.type for l in trace.definitions.locations] == [LocationType.METRIC]


def test_metrics_with_no_series_write_no_metric_location(tmp_path, rec):
    empty = MetricSamples(series=[], times=np.zeros(0, np.int64), values=np.zeros((0, 0)))
    recording = rec.make_recording(rec.known_threads(), metrics=empty)
    write_otf2(recording, tmp_path)
    with otf2.reader.open(str(tmp_path / experiment.OTF2_ANCHOR)) as trace:
        assert [l.type for l in trace.definitions.locations] == [LocationType.CPU_THREAD] * 2


def test_unicode_region_and_thread_names(tmp_path, rec, readback, engine):
    regions = [
        Region("__main__:größe_λ", "__main__", "/tmp/ünï.py", 7),
        Region("__main__:数据", "__main__", "<cell 1>", 1),
    ]
    t = rec.thread_from_calls("Hauptfaden ✓", 0, [(0, 10, 40, [(1, 20, 30)])])
    write_otf2(rec.make_recording([t], regions), tmp_path, engine=engine)
    anchor = tmp_path / experiment.OTF2_ANCHOR
    names = [e[3] for e in readback.read_events(anchor)]
    assert names == ["__main__:größe_λ", "__main__:数据", "__main__:数据", "__main__:größe_λ"]
    with otf2.reader.open(str(anchor)) as trace:
        assert [l.name for l in trace.definitions.locations] == ["Hauptfaden ✓"]
        assert trace.definitions.regions[0].source_file == "/tmp/ünï.py"
    if readback.otf2_print_available():
        assert [e[3] for e in readback.otf2_print_events(anchor)] == names


def test_very_deep_stack(tmp_path, rec, readback):
    depth = 1000
    regions = [Region(f"deep:level{i}", "deep") for i in range(depth)]
    levels = np.arange(depth)
    thread = ThreadEvents(
        "Master thread",
        0,
        times=np.arange(2 * depth, dtype=np.int64) * 10 + rec.MONO_BASE,
        regions=np.concatenate([levels, levels[::-1]]).astype(np.int32),
        kinds=np.concatenate([np.full(depth, ENTER), np.full(depth, LEAVE)]).astype(np.int8),
    )
    recording = rec.make_recording([thread], regions)
    write_otf2(recording, tmp_path)
    events = readback.read_events(tmp_path / experiment.OTF2_ANCHOR)
    assert len(events) == 2 * depth
    assert [e[3] for e in events[:depth]] == [r.name for r in regions]
    assert [e[3] for e in events[depth:]] == [r.name for r in reversed(regions)]


def test_many_metric_series_split_into_classes_of_255(tmp_path, rec, readback, engine):
    n_series = 300
    series = [
        {"key": f"cpu.core{i}", "label": f"Core {i}", "unit": "%", "group": "cpu"}
        for i in range(n_series)
    ]
    times = rec.MONO_BASE + np.arange(3, dtype=np.int64) * 100 * rec.MS
    values = np.arange(3 * n_series, dtype=np.float64).reshape(3, n_series)
    recording = rec.make_recording(
        rec.known_threads(), metrics=MetricSamples(series, times, values)
    )
    write_otf2(recording, tmp_path, engine=engine)
    events = [
        e for e in readback.read_events(tmp_path / experiment.OTF2_ANCHOR) if e[1] == "Metric"
    ]
    assert len(events) == 6  # two classes (255 + 45 members) per sample
    for sample in range(3):
        first, second = events[2 * sample], events[2 * sample + 1]
        assert len(first[3]) == 255 and len(second[3]) == 45
        assert list(first[4]) + list(second[4]) == values[sample].tolist()
        assert first[2] == second[2] == times[sample] + recording.clock_offset_ns


# --- errors --------------------------------------------------------------------------


def test_refuses_to_overwrite_an_archive(tmp_path, known_recording):
    write_otf2(known_recording, tmp_path)
    with pytest.raises(FileExistsError, match="fresh experiment directory"):
        write_otf2(known_recording, tmp_path)


def test_bad_engine_and_bad_events_are_named(tmp_path, rec, known_recording):
    with pytest.raises(ValueError, match="engine must be one of"):
        write_otf2(known_recording, tmp_path, engine="turbo")
    backwards = ThreadEvents(
        "Master thread",
        0,
        np.array([10, 5], np.int64),
        np.array([0, 0], np.int32),
        np.array([ENTER, LEAVE], np.int8),
    )
    with pytest.raises(ValueError, match="event 1 goes backwards"):
        write_otf2(rec.make_recording([backwards]), tmp_path / "a")
    unknown = ThreadEvents(
        "Master thread",
        0,
        np.array([1, 2], np.int64),
        np.array([7, 7], np.int32),
        np.array([ENTER, LEAVE], np.int8),
    )
    with pytest.raises(ValueError, match="region index 7"):
        write_otf2(rec.make_recording([unknown]), tmp_path / "b")
    bad_role = [Region("x:y", "x", role="method")]
    single = rec.thread_from_calls("Master thread", 0, [(0, 1, 2)])
    with pytest.raises(ValueError, match="role 'method'"):
        write_otf2(rec.make_recording([single], bad_role), tmp_path / "c")
