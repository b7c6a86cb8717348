"""The fast engine (libotf2 through ctypes, private parts of otf2 3.2) against the engine
that uses only the otf2 package's public API: same Recording, same archive content."""

from __future__ import annotations

import numpy as np
import otf2
import pytest

from scorep_kernel import experiment
from scorep_kernel.formats.otf2_writer import write_otf2
from scorep_kernel.recording import MetricSamples


def _definitions(anchor):
    with otf2.reader.open(str(anchor)) as trace:
        d = trace.definitions
        return {
            "locations": [(l.name, str(l.type), l.number_of_events, l.group.name)
                          for l in d.locations],
            "regions": [(r.name, r.canonical_name, r.description, str(r.region_role),
                         str(r.paradigm), r.source_file, r.begin_line_number)
                        for r in d.regions],
            "groups": [(g.name, [m.name for m in g.members]) for g in d.groups],
            "members": [(m.name, m.description, m.unit, str(m.value_type))
                        for m in d.metric_members],
            "system_tree": [(n.name, n.class_name) for n in d.system_tree_nodes],
            "resolution": d.clock_properties.timer_resolution,
        }


def _write_both(recording, tmp_path):
    fast, high = tmp_path / "fast", tmp_path / "highlevel"
    fast_stats = write_otf2(recording, fast, engine="fast")
    high_stats = write_otf2(recording, high, engine="highlevel")
    assert fast_stats["events"] == high_stats["events"]
    return fast / experiment.OTF2_ANCHOR, high / experiment.OTF2_ANCHOR


def test_engines_write_identical_event_streams(tmp_path, rec, readback):
    recording = rec.random_recording(seed=7, n_threads=3, n_events=3000, n_regions=25)
    times = rec.MONO_BASE + np.arange(0, 40, dtype=np.int64) * 25_000
    recording.metrics = MetricSamples(
        series=[{"key": "cpu.total", "label": "CPU", "unit": "%", "group": "cpu"},
                {"key": "net.recv", "label": "Received", "unit": "bytes/s", "group": "network"}],
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


@pytest.mark.parametrize("engine", ["fast", "highlevel"])
def test_archive_is_not_left_half_written_on_bad_input(tmp_path, rec, engine):
    recording = rec.make_recording(rec.known_threads())
    recording.threads[1].times = recording.threads[1].times[::-1].copy()
    with pytest.raises(ValueError, match="goes backwards"):
        write_otf2(recording, tmp_path, engine=engine)
    assert not (tmp_path / experiment.OTF2_ANCHOR).exists()
