"""Multi-cell runs (one worker, one measurement, a region per cell) via the paper's magics
and via cell metadata; and two kernels in one directory profiling at the same time."""

from __future__ import annotations

import json
import re
from pathlib import Path

import otf2
import pytest
from test_kernel_harness import KernelHandle, wait_files

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("multicell")


@pytest.fixture(scope="module")
def kernel(workdir):
    k = KernelHandle(workdir)
    yield k
    k.shutdown()


def cell_regions(path: Path) -> list[str]:
    """Names of the cell regions entered, in time order: "cell [n]" under both backends
    (Score-P's worker begins it through Score-P's user API, not the bindings, which would
    write ":cell [n]")."""
    names = []
    with otf2.reader.open(str(path / "traces.otf2")) as trace:
        for _location, event in trace.events:
            if isinstance(event, otf2.events.Enter):
                cell = re.fullmatch(r"(cell \[\d+\])", event.region.name)
                if cell:
                    names.append(cell.group(1))
    return names


def check_run(results, expected_counts):
    paths = {r.bundle()["path"] for r in results}
    assert len(paths) == 1, f"the cells went to several experiments: {paths}"
    path = Path(paths.pop())
    assert [r.bundle()["status"] for r in results] == ["running"] * (len(results) - 1) + ["ok"]
    assert [r.bundle()["cell_index_in_run"] for r in results] == list(range(len(results)))
    manifest = wait_files(path)
    assert manifest["status"] == "ok"
    assert [c["execution_count"] for c in manifest["cells"]] == expected_counts
    assert manifest["files_status"] == "ready", manifest["errors"]
    assert cell_regions(path) == [f"cell [{n}]" for n in expected_counts]
    return path


def test_multicell_via_magics(kernel):
    first = kernel.run("%%enable_multicellmode\nrun_total = 1\nprint('first')")
    second = kernel.run("run_total += 10\nprint('second', run_total)")
    third = kernel.run("%%finalize_multicellmode\nrun_total += 100\nrun_total")
    for r in (first, second, third):
        assert r.status == "ok", r.reply
    # each cell's output appears in its own cell
    assert first.stdout() == "first\n"
    assert second.stdout() == "second 11\n"
    assert third.of("execute_result")[0]["data"]["text/plain"] == "111"
    counts = [r.reply["execution_count"] for r in (first, second, third)]
    check_run([first, second, third], counts)
    # the namespace is synchronised after each cell; the run is closed now
    assert kernel.value("run_total") == 111
    after = kernel.run("plain_after = 1")
    assert after.bundles() == []


def test_multicell_namespace_follows_unprofiled_cells_between(kernel):
    first = kernel.run("%%enable_multicellmode\nbetween = 'a'")
    assert first.status == "ok"
    second = kernel.run("between += 'b'")
    aborted = kernel.run("%%abort_multicellmode")
    assert aborted.status == "ok"
    assert kernel.value("between") == "ab"
    manifest = json.loads((Path(second.bundle()["path"]) / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and "aborted" in " ".join(manifest["errors"])
    assert kernel.run("%%finalize_multicellmode").status == "error"  # none open


def test_multicell_via_metadata(kernel):
    meta = {"profile": True, "isolation": "subprocess", "run": "run-A"}
    a = kernel.run("meta_x = [1]", {"scorep": meta})
    plain = kernel.run("meta_x.append(2)")  # unprofiled, between the cells of the run
    b = kernel.run("meta_x.append(3)\nprint(meta_x)", {"scorep": meta})
    c = kernel.run("meta_x.append(4)", {"scorep": {**meta, "last": True}})
    for r in (a, plain, b, c):
        assert r.status == "ok", r.reply
    assert b.stdout() == "[1, 2, 3]\n"
    assert kernel.value("meta_x") == [1, 2, 3, 4]
    counts = [r.reply["execution_count"] for r in (a, b, c)]
    check_run([a, b, c], counts)


def test_metadata_run_left_open_is_finished_by_the_next_run(kernel):
    open_run = kernel.run("left_open = 1", {"scorep": {"profile": True, "isolation": "subprocess",
                                                       "run": "run-B"}})  # fmt: skip
    single = kernel.run("single = 1", {"scorep": {"profile": True, "isolation": "subprocess"}})
    assert open_run.status == single.status == "ok"
    closed = [b for b in single.bundles() if b["run"] == "run-B"]
    assert closed and closed[0]["status"] == "ok"
    assert single.bundles()[-1]["run"] is None


def test_two_kernels_in_one_directory_profile_at_once(workdir):
    a, b = KernelHandle(workdir), KernelHandle(workdir)
    try:
        code = "import time\nwho = {}\nfor i in range(3):\n    time.sleep(0.2)\n    print(i)"
        meta = {"scorep": {"profile": True, "isolation": "subprocess"}}
        ids = [(k, k.send(code.format(n), meta)) for n, k in enumerate((a, b))]
        results = [k.collect(msg_id) for k, msg_id in ids]
        for r in results:
            assert r.status == "ok", r.reply
            assert r.stdout() == "0\n1\n2\n"
        paths = [Path(r.bundle()["path"]) for r in results]
        assert paths[0] != paths[1] and all(
            p.parent == workdir / "scorep-experiments" for p in paths
        )
        for p in paths:
            assert wait_files(p)["files_status"] in ("ready", "unavailable")
        assert a.value("who") == 0 and b.value("who") == 1
    finally:
        a.shutdown()
        b.shutdown()


def test_multicell_inprocess_via_metadata(kernel):
    meta = {"profile": True, "backend": "builtin", "isolation": "inprocess", "run": "run-in"}
    a = kernel.run("def inproc_fn():\n    return 1\ninproc_fn()", {"scorep": meta})
    b = kernel.run("inproc_fn() + 1", {"scorep": {**meta, "last": True}})
    for r in (a, b):
        assert r.status == "ok", r.reply
    assert b.of("execute_result")[0]["data"]["text/plain"] == "2"
    assert [x["isolation"] for x in a.bundles() + b.bundles()] == ["inprocess", "inprocess"]
    path = check_run([a, b], [a.reply["execution_count"], b.reply["execution_count"]])
    with otf2.reader.open(str(path / "traces.otf2")) as trace:
        calls = [e.region.name for _, e in trace.events
                 if isinstance(e, otf2.events.Enter) and "inproc_fn" in e.region.name]  # fmt: skip
    assert len(calls) == 2
