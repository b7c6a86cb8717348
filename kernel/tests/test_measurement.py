"""A measured run end to end: Measurement -> write_files -> traces.otf2 (otf2 reader),
profile.cubex (pycubexr), metrics and the manifest."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import otf2
import pytest
from pycubexr import CubexParser
from test_tracer_util import calls, run_cell

from scorep_kernel import experiment
from scorep_kernel import manifest as mf
from scorep_kernel.measure.measure_config import MeasureConfig
from scorep_kernel.measure.session import Measurement
from scorep_kernel.measure.thread_hooks import ThreadLifetimes

WORKLOAD = """
import time, threading

def f():
    time.sleep(0.05)

def g():
    for _ in range(3):
        f()

t = threading.Thread(target=g, name="worker")
t.start()
g()
t.join()
"""


@pytest.fixture
def exp_dir(tmp_path):
    exp_id, path = experiment.create_experiment_dir(explicit=tmp_path / "exp")
    mf.write_manifest(path, mf.new_manifest(exp_id, backend="builtin", isolation="inprocess"))
    return path


def measured(exp_dir, config=None):
    m = Measurement(exp_dir, config or MeasureConfig(metric_interval_s=0.05))
    m.start()
    run_cell(m, "cell [1]", WORKLOAD)
    run_cell(m, "cell [2]", "g()\n", {"__name__": "__main__", "g": lambda: None})
    return m, m.stop()


def test_files_written_and_read_back(exp_dir):
    m, rec = measured(exp_dir)
    assert m.write_files(rec, background=False) is None
    manifest = mf.read_manifest(exp_dir)
    assert manifest["files_status"] == "ready", manifest["errors"]
    assert manifest["files"] == {
        "otf2": "traces.otf2",
        "cubex": "profile.cubex",
        "metrics": "metrics.json",
        "metrics_data": "metrics.npz",
    }
    meas = manifest["measurement"]
    assert meas["events"] == rec.event_count and meas["threads"] == 2
    assert meas["filters"]["exclude"] and meas["cap_reached"] is False

    # OTF2: per location, enter/leave counts per region equal what was recorded.
    expected = Counter((c.thread, c.name) for c in calls(rec))
    enters, leaves, times = Counter(), Counter(), {}
    with otf2.reader.open(str(exp_dir / "traces.otf2")) as trace:
        for location, event in trace.events:
            if isinstance(event, otf2.events.Enter):
                enters[(location.name, event.region.name)] += 1
            elif isinstance(event, otf2.events.Leave):
                leaves[(location.name, event.region.name)] += 1
            times.setdefault(location.name, []).append(event.time)
    assert enters == expected == leaves
    assert enters[("Master thread", "__main__:f")] == 3
    assert enters[("Thread 1 (worker)", "__main__:f")] == 3
    assert enters[("Master thread", "cell [1]")] == 1 and enters[("Master thread", "cell [2]")] == 1
    for loc, ts in times.items():
        assert ts == sorted(ts), loc

    # CUBE: visits and inclusive time of f below g below cell [1] on each thread.
    with CubexParser(str(exp_dir / "profile.cubex")) as cube:
        visits = cube.get_metric_values(cube.get_metric_by_name("visits"))
        tmetric = cube.get_metric_values(cube.get_metric_by_name("time"))
        found = {}
        for cnode in cube.all_cnodes():
            path, node = [], cnode
            while node is not None:
                path.append(cube.get_region(node).name)
                node = node.parent
            found[tuple(reversed(path))] = (visits.cnode_values(cnode), tmetric.cnode_values(cnode))
    f_paths = {p: v for p, v in found.items() if p[-1] == "__main__:f"}
    master_f = next(v for p, v in f_paths.items() if "cell [1]" in p)
    worker_f = next(v for p, v in f_paths.items() if "threading.Thread:run" in p)
    assert sum(master_f[0]) == 3 and sum(worker_f[0]) == 3
    assert 0.15 <= sum(master_f[1]) < 0.3 and 0.15 <= sum(worker_f[1]) < 0.3

    # Metrics: epoch times within the run, series as the schema says.
    schema, t, v = experiment.read_metrics(exp_dir)
    assert [s["key"] for s in schema["series"]] == [s["key"] for s in rec.metrics.series]
    start_epoch = rec.start_ns + rec.clock_offset_ns
    end_epoch = rec.end_ns + rec.clock_offset_ns
    assert start_epoch <= t[0] and t[-1] <= end_epoch + 1e9
    assert v.shape == (len(t), len(schema["series"])) and len(t) >= 3
    assert np.array_equal(t - rec.clock_offset_ns, rec.metrics.times)


def test_background_write_marks_the_manifest_ready(exp_dir):
    m, rec = measured(exp_dir)
    thread = m.write_files(rec)
    assert thread is not None
    thread.join(60)
    assert mf.read_manifest(exp_dir)["files_status"] == "ready"


def test_a_failing_writer_marks_the_manifest_failed(exp_dir, monkeypatch):
    from scorep_kernel.formats import cube_writer

    def broken(recording, path, **kw):
        raise OSError("disk full")

    monkeypatch.setattr(cube_writer, "write_cubex", broken)
    m, rec = measured(exp_dir)
    thread = m.write_files(rec)
    thread.join(60)
    manifest = mf.read_manifest(exp_dir)
    assert manifest["files_status"] == "failed"
    assert manifest["errors"] == ["profile.cubex: OSError: disk full"]
    assert manifest["files"]["otf2"] == "traces.otf2" and "cubex" not in manifest["files"]


def test_notes_say_what_was_filtered(exp_dir):
    m, rec = measured(exp_dir, MeasureConfig.from_mapping({"exclude": "json", "max_depth": 5}))
    notes = rec.notes
    assert notes["filters"]["max_depth"] == 5 and "json" in notes["filters"]["exclude"]
    assert any("import machinery" in s for s in notes["filters"]["always_out"])
    assert set(notes["dropped"]) == {
        "outside_cells",
        "excluded",
        "paused",
        "too_deep",
        "not_nested",
    }
    assert notes["events"] == rec.event_count
    json.dumps(notes)  # goes into the manifest as is


def test_write_files_into_a_directory_without_manifest_does_not_raise(tmp_path):
    m, rec = measured(tmp_path)
    thread = m.write_files(rec)
    thread.join(60)
    assert (tmp_path / "traces.otf2").exists() and (tmp_path / "profile.cubex").exists()
    assert not (tmp_path / "manifest.json").exists()


def test_threads_but_the_master_get_their_begin_and_end(exp_dir):
    """Score-P's THREAD_BEGIN / _END: the worker thread's span from the hooks on its start
    (before its first event) and its end, within the run; the master has none."""
    _, rec = measured(exp_dir)
    by_name = {t.name: t for t in rec.threads}
    assert by_name["Master thread"].span is None
    worker = by_name["Thread 1 (worker)"]
    assert worker.span is not None
    assert rec.start_ns <= worker.span.begin_ns < int(worker.times[0])
    assert int(worker.times[-1]) <= worker.span.end_ns <= rec.end_ns


def test_a_thread_not_seen_starting_or_ending_spans_what_is_known():
    """Without the hooks (a Python without Thread._set_native_id / _delete) a thread
    begins at its first event and ends with the run; one alive before the run begins
    with it."""
    lifetimes = ThreadLifetimes()
    assert lifetimes.span(7, 50, 60, (10, 100), before_run=False) == (50, 100)
    assert lifetimes.span(7, 50, 60, (10, 100), before_run=True) == (10, 100)
