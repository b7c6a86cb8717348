"""The experiment directory contract: ids, manifest life cycle, refusals with reasons."""

import json
import threading

import numpy as np
import pytest

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf
from scorep_kernel import region_words as rw


def test_ids_are_unique_and_sortable():
    ids = [ex.new_experiment_id() for _ in range(200)]
    assert len(set(ids)) == 200
    # made one after another, their time parts sort in the order they were made
    times = [i.split("-")[0] for i in ids]
    assert times == sorted(times)


def test_create_uses_explicit_directory_or_default_parent(tmp_path):
    exp_id, path = ex.create_experiment_dir(cwd=tmp_path)
    assert path == tmp_path / "scorep-experiments" / exp_id and path.is_dir()
    _, explicit = ex.create_experiment_dir(cwd=tmp_path, explicit=tmp_path / "mine")
    assert explicit == tmp_path / "mine" and explicit.is_dir()


def test_manifest_life_cycle_merges_files_and_appends_errors(tmp_path):
    m = mf.new_manifest(
        "x1",
        backend="builtin",
        isolation="subprocess",
        cells=[{"cell_id": "c", "execution_count": 3, "code": "f()"}],
    )
    mf.write_manifest(tmp_path, m)
    assert mf.read_manifest(tmp_path)["status"] == "running"
    mf.update_manifest(tmp_path, files={"otf2": "traces.otf2"}, errors=["first"])
    new = mf.update_manifest(
        tmp_path, files={"cubex": "profile.cubex"}, errors=["second"], status="ok"
    )
    assert new["files"] == {"otf2": "traces.otf2", "cubex": "profile.cubex"}
    assert new["errors"] == ["first", "second"] and new["status"] == "ok"
    assert mf.read_manifest(tmp_path) == new


def test_concurrent_updates_lose_nothing(tmp_path):
    mf.write_manifest(tmp_path, mf.new_manifest("x", backend="builtin", isolation="inprocess"))

    def add(i):
        mf.update_manifest(tmp_path, files={f"f{i}": str(i)})

    threads = [threading.Thread(target=add, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(mf.read_manifest(tmp_path)["files"]) == 20


def _manifest(**fields):
    base = {"format_version": 1, "id": "a", "backend": "builtin", "status": "ok"}
    return json.dumps({**base, **fields}).encode()


@pytest.mark.parametrize(
    "content, reason",
    [
        (None, "has no manifest.json"),
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"[1, 2]", "does not hold a JSON object"),
        (
            json.dumps({"format_version": 99, "id": "a", "backend": "b", "status": "ok"}).encode(),
            "format version 99",
        ),
        (json.dumps({"format_version": 1, "backend": "b", "status": "ok"}).encode(), "'id'"),
        (_manifest(status=3), "the field 'status' is an integer, not a string"),
        (_manifest(cells={}), "the field 'cells' is an object, not an array"),
        (
            _manifest(cells=[{"code": "x"}, {"execution_count": "2"}]),
            r"the field 'cells'\[1\]\.'execution_count' is a string, not an integer",
        ),
        (_manifest(files={"otf2": None}), r"'files'\['otf2'\] is null, not a string"),
        (_manifest(end_ns="soon"), "the field 'end_ns' is a string, not an integer or null"),
        (_manifest(start_ns=True), "'start_ns' is true or false, not an integer"),
        (_manifest(errors=["a", 2]), r"'errors'\[1\] is an integer, not a string or an object"),
        (_manifest(writers=[{"pid": "1"}]), r"'writers'\[0\]\.'pid' is a string"),
    ],
)
def test_bad_manifests_are_refused_with_the_reason(tmp_path, content, reason):
    if content is not None:
        (tmp_path / ex.MANIFEST).write_bytes(content)
    with pytest.raises(ex.ExperimentError, match=reason):
        mf.read_manifest(tmp_path)


def test_list_experiments_newest_first_skipping_broken(tmp_path):
    parent = tmp_path / "scorep-experiments"
    for i, start in enumerate((10, 30, 20)):
        d = parent / f"e{i}"
        d.mkdir(parents=True)
        mf.write_manifest(
            d, mf.new_manifest(f"e{i}", backend="builtin", isolation="inprocess", start_ns=start)
        )
    (parent / "broken").mkdir()
    (parent / "broken" / ex.MANIFEST).write_bytes(b"\xff")
    assert [m["id"] for _, m in mf.list_experiments(parent)] == ["e1", "e2", "e0"]


def test_metrics_round_trip_and_mismatch(tmp_path):
    series = [
        {"key": "cpu.total", "label": "CPU", "unit": "%", "group": "cpu"},
        {"key": "mem.rss", "label": "RSS", "unit": "B", "group": "memory"},
    ]
    t = np.arange(5, dtype=np.int64) * 100_000_000
    v = np.arange(10, dtype=np.float64).reshape(5, 2)
    ex.write_metrics(tmp_path, series, t, v, interval_s=0.1, notes=["no GPU"])
    schema, t2, v2 = ex.read_metrics(tmp_path)
    assert schema["series"] == series and schema["notes"] == ["no GPU"]
    assert np.array_equal(t, t2) and np.array_equal(v, v2)
    schema["series"].pop()
    (tmp_path / ex.METRICS_SCHEMA).write_text(json.dumps(schema))
    with pytest.raises(ex.ExperimentError, match="do not match"):
        ex.read_metrics(tmp_path)


def test_new_manifest_starts_running_with_files_pending():
    m = mf.new_manifest("x", backend="builtin", isolation="inprocess")
    assert m["status"] == mf.STATUS_RUNNING and m["status"] in mf.RUN_STATUSES
    assert m["files_status"] == mf.FILES_PENDING and m["files_status"] in mf.FILES_STATUSES
    with pytest.raises(ValueError, match="backend"):
        mf.new_manifest("x", backend="nope", isolation="inprocess")


def test_statuses_are_ordered_from_best_to_worst():
    assert mf.RUN_STATUSES == ("running", "ok", "error", "interrupted", "crashed")
    assert mf.FILES_STATUSES == ("pending", "ready", "failed", "unavailable")
    assert mf.worse_status(mf.STATUS_OK, mf.STATUS_ERROR) == mf.STATUS_ERROR
    assert mf.worse_status(mf.STATUS_CRASHED, mf.STATUS_INTERRUPTED) == mf.STATUS_CRASHED
    assert mf.worse_status(mf.STATUS_OK, mf.STATUS_OK) == mf.STATUS_OK


@pytest.mark.parametrize("role", rw.REGION_ROLES)
def test_region_roles_survive_the_trace(role):
    # what the builtin writer stores as the description, a reader decodes back
    assert rw.decode_region_role(rw.encode_region_role(role), "FUNCTION") == role


def test_region_roles_of_foreign_traces_come_from_the_otf2_role():
    # Score-P writes its own descriptions (or none): the OTF2 region role decides
    assert rw.decode_region_role("", "artificial") == rw.ROLE_ARTIFICIAL
    assert rw.decode_region_role(None, "ARTIFICIAL") == rw.ROLE_ARTIFICIAL
    assert rw.decode_region_role("a Score-P comment", "function") == rw.ROLE_FUNCTION
    assert rw.decode_region_role(None) == rw.ROLE_FUNCTION
    with pytest.raises(ValueError, match="region role"):
        rw.encode_region_role("method")


def test_region_names_follow_the_bindings():
    assert rw.function_region_name("__main__", "f") == "__main__:f"
    assert rw.function_region_name("pkg.mod", "sum", owner="Frame") == "pkg.mod.Frame:sum"
    assert rw.user_region_name("load") == "user:load"
    assert rw.user_region_name("load", module="mymod") == "mymod:load"
    assert rw.import_region_name("numpy.linalg") == "import:numpy.linalg"
    assert rw.region_module("pkg.mod.Frame:sum") == "pkg.mod.Frame"
    assert rw.region_module("import:numpy") == "import"
    assert rw.region_module("MPI_Send") is None


def test_cell_records_and_cell_regions_of_both_backends():
    from scorep_kernel.manifest import cell_record, source_hash
    from scorep_kernel.region_words import cell_region_count

    record = cell_record("abc-1", 4, "x = 1\n")
    assert record == {
        "cell_id": "abc-1",
        "execution_count": 4,
        "code": "x = 1\n",
        "source_sha256": source_hash("x = 1\n"),
    }
    assert source_hash("x = 1\n") != source_hash("x = 2\n") and len(source_hash("")) == 64
    assert cell_region_count("cell [12]") == 12  # the builtin tracer
    assert cell_region_count(":cell [3]") == 3  # Score-P's bindings
    assert cell_region_count("__main__:cell") is None
    assert cell_region_count("user:cell [3]") is None  # a user's region, not ours


def test_unknown_keys_are_kept_and_old_manifests_read(tmp_path):
    """The format grows by new keys: a reader keeps what it does not know, an update
    passes it on, and a manifest with only the four certain keys reads."""
    (tmp_path / ex.MANIFEST).write_bytes(_manifest(future={"x": [1]}, wall_s=2))
    assert mf.read_manifest(tmp_path)["future"] == {"x": [1]}
    mf.update_manifest(tmp_path, files={"otf2": "traces.otf2"})
    assert json.loads((tmp_path / ex.MANIFEST).read_text())["future"] == {"x": [1]}


def test_the_manifest_on_disk_is_unchanged_by_its_type(tmp_path):
    """Byte for byte what the untyped writer wrote: sorted keys, indent 1, a newline."""
    m = mf.new_manifest("x", backend="builtin", isolation="inprocess", start_ns=5)
    mf.write_manifest(tmp_path, m)
    text = (tmp_path / ex.MANIFEST).read_text()
    assert text == json.dumps(m, indent=1, sort_keys=True, default=str) + "\n"
    assert text.startswith('{\n "backend": "builtin",\n "binding_args": [],\n "cells": []')


@pytest.mark.parametrize(
    "time_ns, cpu_ns, queue_ns, cpu_s, queue_s",
    [
        (100, 30, 20, 30e-9, 20e-9),  # readings within the cell's time: as read
        # a loaded machine: the clocks read ~1 ms on (seen in test_heartbeat_verdict)
        (63_718_442, 64_404_514, 350_599, 0.063718442, 0.0),
        (100, 90, 30, 90e-9, 10e-9),  # the excess off the queued time first
    ],
)
def test_the_cells_time_split_adds_up_to_the_cells_time(time_ns, cpu_ns, queue_ns, cpu_s, queue_s):
    ct = mf.cell_time_record(time_ns, cpu_ns, queue_ns)
    assert (ct["cpu_s"], ct["queue_s"]) == pytest.approx((cpu_s, queue_s), abs=1e-12)
    assert ct["cpu_s"] + ct["queue_s"] + ct["wait_s"] == pytest.approx(ct["time_s"], abs=1e-12)
