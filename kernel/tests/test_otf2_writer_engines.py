"""The fast engines against the one that uses only the otf2 package's public API: same
Recording, same archive content, and byte-identical event files. "fast" encodes event
files itself (``_otf2_encode``), so its bytes are checked against libotf2's own, also
across the 1 MiB chunk boundaries of long locations."""

from __future__ import annotations

import numpy as np
import otf2
import pytest

from scorep_kernel import experiment, otf2_layout
from scorep_kernel.formats import _otf2_encode, _otf2_fast
from scorep_kernel.formats.otf2_writer import write_otf2
from scorep_kernel.formats.recording import (
    ENTER,
    LEAVE,
    MetricSamples,
    Region,
    ThreadEvents,
    ThreadSpan,
)


def _event_files(exp_dir) -> dict[str, bytes]:
    folder = exp_dir / experiment.OTF2_EVENTS_DIR
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.evt"))}


def _definitions(anchor):
    with otf2.reader.open(str(anchor)) as trace:
        d = trace.definitions
        return {
            "locations": [
                (l.name, str(l.type), l.number_of_events, l.group.name) for l in d.locations
            ],
            "regions": [
                (
                    r.name,
                    r.canonical_name,
                    r.description,
                    str(r.region_role),
                    str(r.paradigm),
                    r.source_file,
                    r.begin_line_number,
                )
                for r in d.regions
            ],
            "groups": [(g.name, [m.name for m in g.members]) for g in d.groups],
            "members": [
                (m.name, m.description, m.unit, str(m.value_type)) for m in d.metric_members
            ],
            "system_tree": [(n.name, n.class_name) for n in d.system_tree_nodes],
            "resolution": d.clock_properties.timer_resolution,
        }


def _write_both(recording, tmp_path, other="highlevel"):
    fast, high = tmp_path / "fast", tmp_path / other
    fast_stats = write_otf2(recording, fast, engine="fast")
    high_stats = write_otf2(recording, high, engine=other)
    assert fast_stats["events"] == high_stats["events"]
    assert _event_files(fast) == _event_files(high)  # byte for byte
    return fast / experiment.OTF2_ANCHOR, high / experiment.OTF2_ANCHOR


def test_engines_write_identical_event_streams(tmp_path, rec, readback):
    recording = rec.random_recording(seed=7, n_threads=3, n_events=3000, n_regions=25)
    times = rec.MONO_BASE + np.arange(0, 40, dtype=np.int64) * 25_000
    recording.metrics = MetricSamples(
        series=[
            {"key": "cpu.total", "label": "CPU", "unit": "%", "group": "cpu"},
            {"key": "net.recv", "label": "Received", "unit": "bytes/s", "group": "network"},
        ],
        times=times,
        values=np.random.default_rng(1).random((times.size, 2)) * 100,
    )
    fast, high = _write_both(recording, tmp_path)

    fast_events = readback.read_events(fast)
    high_events = readback.read_events(high)
    assert len(fast_events) == recording.event_count + times.size
    assert fast_events == high_events  # location, kind, time, region / metric values
    # and both are the recording, event by event
    per_location = readback.events_by_location(fast_events)
    for name, expected in readback.expected_thread_events(recording).items():
        assert per_location[name] == expected

    assert _definitions(fast) == _definitions(high)


def test_engines_agree_on_the_known_recording(tmp_path, known_recording, readback):
    fast, high = _write_both(known_recording, tmp_path)
    assert readback.read_events(fast) == readback.read_events(high)
    assert _definitions(fast) == _definitions(high)


def test_clock_properties_differ_only_as_documented(tmp_path, known_recording):
    """The public API cannot set the clock: the high-level archive starts at its first
    event; the fast one at the recording's start, as Score-P does."""
    fast, high = _write_both(known_recording, tmp_path)
    with otf2.reader.open(str(fast)) as f, otf2.reader.open(str(high)) as h:
        fc, hc = f.definitions.clock_properties, h.definitions.clock_properties
    offset = known_recording.clock_offset_ns
    first_event = min(int(t.times[0]) for t in known_recording.threads) + offset
    assert fc.global_offset == known_recording.start_ns + offset
    assert hc.global_offset == first_event
    assert fc.global_offset < hc.global_offset


@pytest.mark.parametrize("engine", ["fast", "ctypes", "highlevel"])
def test_archive_is_not_left_half_written_on_bad_input(tmp_path, rec, engine):
    recording = rec.make_recording(rec.known_threads())
    recording.threads[1].times = recording.threads[1].times[::-1].copy()
    with pytest.raises(ValueError, match="goes backwards"):
        write_otf2(recording, tmp_path, engine=engine)
    assert not (tmp_path / experiment.OTF2_ANCHOR).exists()


def test_encoded_event_files_match_libotf2_across_chunks(tmp_path, rec):
    """~450k events per location fill several 1 MiB chunks; repeated timestamps (no
    timestamp record) and region refs of 1 and 2 bytes all occur, also at boundaries.
    (The events are correct if libotf2 wrote the same bytes; other tests read back.)"""
    rng = np.random.default_rng(5)
    regions = [Region(f"mod:f{i}", "mod") for i in range(300)]
    unit = rec.random_recording(
        seed=20, n_threads=1, n_events=1000, n_regions=300, max_depth=12
    ).threads[0]
    threads = []
    for tid in range(2):
        copies = 450
        # the same call shape, each copy with its regions shifted
        shift = np.repeat(rng.integers(0, 300, copies), len(unit))
        regs = (np.tile(unit.regions, copies) + shift) % 300
        steps = rng.integers(0, 3, copies * len(unit)) * rng.integers(1, 500, copies * len(unit))
        times = rec.MONO_BASE + np.cumsum(steps)  # about a third repeat the previous time
        threads.append(
            ThreadEvents(
                f"Thread {tid}",
                tid,
                times.astype(np.int64),
                regs.astype(np.int32),
                np.tile(unit.kinds, copies),
            )
        )
    recording = rec.make_recording(threads, regions)
    fast, _ = _write_both(recording, tmp_path, other="ctypes")
    files = _event_files(fast.parent)
    assert len(files) == 2
    assert all(len(b) > 2 * otf2_layout.CHUNK_SIZE for b in files.values())
    with otf2.reader.open(str(fast)) as trace:
        counts = [loc.number_of_events for loc in trace.definitions.locations]
    assert counts == [len(t) for t in threads]


def test_encoder_matches_libotf2_for_every_region_ref_width(tmp_path):
    """Compressed refs of 0, 1, 2 and 3 bytes, written into a bare archive by libotf2 and
    by the encoder (no region definitions needed to compare bytes)."""
    refs = np.array([0, 1, 255, 256, 65535, 65536, 0xFFFFFF, 7], dtype=np.int64)
    refs = np.repeat(refs, 2)
    kinds = np.tile([ENTER, LEAVE], refs.size // 2)
    times = 1_700_000_000_000_000_000 + np.array(
        [0, 0, 5, 9, 9, 9, 20, 21, 21, 30, 31, 31, 40, 40, 41, 50], dtype=np.int64
    )
    with otf2.writer.open(
        str(tmp_path), timer_resolution=10**9, chunk_size_events=otf2_layout.CHUNK_SIZE
    ) as trace:
        node = trace.definitions.system_tree_node("n")
        group = trace.definitions.location_group("g", system_tree_parent=node)
        location = trace.definitions.location("l", group=group)
        writer = trace.event_writer_from_location(location)
        _otf2_fast.write_enter_leave(
            _otf2_fast.handle_address(writer), times, refs, kinds, "test events"
        )
    assert _otf2_encode.supported(times, refs)
    encoded = _otf2_encode.encode(times, refs, kinds).tobytes()
    assert encoded == (tmp_path / "traces" / "0.evt").read_bytes()
    # encoding in blocks (bounded temporary memory) changes nothing
    assert _otf2_encode.encode(times, refs, kinds, block=3).tobytes() == encoded


def test_fast_engine_falls_back_where_the_encoder_does_not_apply(tmp_path, rec, readback):
    """A time of 0 makes libotf2 repeat timestamp records; the encoder leaves that to the
    per-event path, and the archive is still right."""
    t = rec.thread_from_calls("Master thread", 0, [(0, 10, 20)])
    recording = rec.make_recording([t], [Region("m:f", "m")])
    recording.clock_offset_ns = -10  # the first event lands on time 0
    recording.start_ns = 10
    assert not _otf2_encode.supported(t.times + recording.clock_offset_ns, t.regions)
    fast, ctypes_ = _write_both(recording, tmp_path, other="ctypes")
    assert readback.read_events(fast) == [
        ("Master thread", "Enter", 0, "m:f"),
        ("Master thread", "Leave", 10, "m:f"),
    ]


def _with_spans(recording, before=(100, 0), after=(0, 50)):
    """Every thread but the first gets THREAD_BEGIN / _END: begin ``before[i % 2]`` ns
    before its first event, end ``after[i % 2]`` ns after its last (0: at the event)."""
    for i, t in enumerate(recording.threads[1:]):
        first, last = int(t.times[0]), int(t.times[-1])
        t.span = ThreadSpan(first - before[i % 2], last + after[i % 2])
    return recording


def test_engines_write_identical_thread_records(tmp_path, rec, readback):
    """THREAD_BEGIN first and THREAD_END last on each thread but the master, the same
    bytes from every engine; the begin and end at the event's time or apart from it."""
    recording = _with_spans(rec.random_recording(seed=3, n_threads=3, n_events=2000))
    fast, high = _write_both(recording, tmp_path)
    _, ctypes_ = _write_both(recording, tmp_path / "c", other="ctypes")
    assert _event_files(fast.parent) == _event_files(ctypes_.parent)
    per_location = readback.events_by_location(readback.read_events(fast))
    for t in recording.threads:
        kinds = [e[0] for e in per_location[t.name]]
        if t.span is None:
            assert "ThreadBegin" not in kinds and "ThreadEnd" not in kinds
            continue
        assert kinds[0] == "ThreadBegin" and kinds[-1] == "ThreadEnd"
        assert "ThreadBegin" not in kinds[1:] and "ThreadEnd" not in kinds[:-1]
        offset = recording.clock_offset_ns
        assert per_location[t.name][0][1] == t.span.begin_ns + offset
        assert per_location[t.name][-1][1] == t.span.end_ns + offset
    assert _definitions(fast) == _definitions(high)
    with otf2.reader.open(str(fast)) as trace:
        for location, event in trace.events:
            if type(event).__name__ in ("ThreadBegin", "ThreadEnd"):
                assert event.thread_contingent.name == ""
                assert event.thread_contingent.group.name == "SCOREP_GROUP_PTHREAD"
                assert event.sequence_count == 2**64 - 1
            if type(event).__name__ == "ThreadBegin":
                thread = next(t for t in recording.threads if t.name == location.name)
                assert {a.name: v for a, v in event.attributes.items()} == {
                    "ThreadId": thread.thread_id
                }


def test_thread_records_match_libotf2_where_the_end_needs_a_chunk_of_its_own(tmp_path, rec):
    """A location of one chunk and a little: the events shifted by the begin records, and
    THREAD_END in the last chunk or, when libotf2's request no longer fits, in a chunk of
    its own; every case byte for byte as libotf2 writes it."""
    rng = np.random.default_rng(11)
    regions = [Region(f"mod:f{i}", "mod") for i in range(300)]
    n_max = 140_000
    steps = rng.integers(0, 3, n_max) * rng.integers(1, 500, n_max)
    times = rec.MONO_BASE + np.cumsum(steps)
    regs = rng.integers(0, 300, n_max).astype(np.int32)
    kinds = np.tile([ENTER, LEAVE], n_max // 2).astype(np.int8)  # unbalanced: bytes only
    # where the first chunk ends without thread records: the cases straddle it
    plain = _otf2_encode.encode(times + 1, regs, kinds)
    last_of_first = int(np.frombuffer(plain[10:18].tobytes(), "<u8")[0])
    own_chunk = in_last = 0
    for n in range(last_of_first - 30, last_of_first + 4):
        master = ThreadEvents("Master thread", 1, times[:2], regs[:2], kinds[:2])
        t = ThreadEvents("Thread 1", 2, times[:n], regs[:n], kinds[:n])
        t.span = ThreadSpan(int(times[0]) - (n % 2), int(times[n - 1]) + (n % 3 == 0))
        recording = rec.make_recording([master, t], regions)
        fast, _ = _write_both(recording, tmp_path / str(n), other="ctypes")
        data = _event_files(fast.parent)["1.evt"]
        chunks = (len(data) - 1) // otf2_layout.CHUNK_SIZE + 1
        last_chunk = data[(chunks - 1) * otf2_layout.CHUNK_SIZE :]
        if (
            last_chunk[otf2_layout.HEADER_SIZE + otf2_layout.TIMESTAMP_SIZE]
            == otf2_layout.THREAD_END
        ):
            own_chunk += 1
        else:
            in_last += 1
    assert own_chunk and in_last
