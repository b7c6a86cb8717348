"""SCOREP_EXPERIMENT_DIRECTORY in a notebook (runs/named_directory.py): Score-P's rule for
many runs, and nothing of a run's background work in a later cell's output."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_kernel_harness import PROFILE_IN, KernelHandle, wait_files

from scorep_kernel import experiment
from scorep_kernel import manifest as mf
from scorep_kernel.measure.files import write_all
from scorep_kernel.runs import named_directory
from scorep_kernel.settings import SettingsError

pytestmark = pytest.mark.timeout(240)

BUILTIN_SUB = {"scorep": {"profile": True, "backend": "builtin", "isolation": "subprocess"}}
SCOREP_SUB = {"scorep": {"profile": True, "backend": "scorep", "isolation": "subprocess"}}
HAVE_SCOREP = shutil.which("scorep-config") is not None


def test_each_run_beside_the_name_and_the_name_points_at_the_newest(tmp_path):
    named = tmp_path / "traces"
    first = named_directory.run_directory(named, "id-1")
    second = named_directory.run_directory(named, "id-2")
    assert first == tmp_path / "traces-id-1"
    assert named_directory.named_for(first, "id-1") == named
    assert named_directory.named_for(tmp_path / "id-1", "id-1") is None  # a default run
    for run, exp_id in ((first, "id-1"), (second, "id-2")):
        run.mkdir()
        assert named_directory.point_at(run, exp_id) is None
        assert named.is_symlink() and named.resolve() == run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces", "traces-id-1", "traces-id-2"]


def test_what_was_at_the_name_is_moved_aside_as_score_p_does(tmp_path):
    named = tmp_path / "traces"
    named.mkdir()
    (named / "old-run.txt").write_text("kept")
    run = named_directory.run_directory(named, "id-1")
    run.mkdir()
    said = named_directory.point_at(run, "id-1")
    assert said is not None and "moved aside" in said
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("traces-2")]
    assert len(aside) == 1 and (aside[0] / "old-run.txt").read_text() == "kept"
    assert named.resolve() == run
    # an empty directory holds nothing to keep: it goes, silently
    empty = tmp_path / "empty"
    empty.mkdir()
    run2 = named_directory.run_directory(empty, "id-2")
    run2.mkdir()
    assert named_directory.point_at(run2, "id-2") is None
    assert empty.resolve() == run2


def test_overwrite_false_refuses_with_the_variable_and_the_fix(tmp_path):
    named = tmp_path / "traces"
    named.mkdir()
    (named / "x").write_text("x")
    run = named_directory.run_directory(named, "id-1")
    run.mkdir()
    env = {"SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY": "false"}
    with pytest.raises(SettingsError, match="SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY"):
        named_directory.point_at(run, "id-1", env)
    assert (named / "x").exists()


def test_failed_file_writing_is_in_the_manifest_and_never_printed(tmp_path, capfd, known_recording):
    exp_id = "e1"
    mf.write_manifest(tmp_path, mf.new_manifest(exp_id, backend="builtin", isolation="inprocess"))
    (tmp_path / experiment.OTF2_ANCHOR).write_text("in the way")
    result = write_all(tmp_path, known_recording)
    assert any("traces.otf2" in e for e in result["errors"])
    manifest = mf.read_manifest(tmp_path)
    assert manifest["files_status"] == mf.FILES_FAILED
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err  # it went to the kernel's log, not a stream


@pytest.fixture(scope="module")
def named_kernel(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("named")
    (cwd / "runs").mkdir()
    (cwd / "runs" / "traces").mkdir()  # the peer's test setup makes it before the kernel
    (cwd / "runs" / "traces" / "earlier.txt").write_text("a plain Score-P run's files")
    env = {"SCOREP_EXPERIMENT_DIRECTORY": "runs/traces"}
    kernel = KernelHandle(cwd, env)
    yield kernel, cwd
    kernel.shutdown()


def test_every_profiled_cell_gets_its_files_and_later_cells_stay_clean(named_kernel):
    kernel, cwd = named_kernel
    kinds = [PROFILE_IN, BUILTIN_SUB, PROFILE_IN, BUILTIN_SUB]
    if HAVE_SCOREP:
        kinds += [SCOREP_SUB, SCOREP_SUB]
    paths = []
    for n, meta in enumerate(kinds):
        result = kernel.run(f"v{n} = sum(range({1000 + n}))", meta)
        assert result.status == "ok", result.reply
        assert result.stderr() == ""
        path = Path(result.bundle()["path"])
        manifest = wait_files(path)
        assert manifest["files_status"] == mf.FILES_READY, manifest["errors"]
        assert manifest["errors"] == []
        assert (cwd / "runs" / "traces").resolve() == path  # the name: the newest run
        paths.append(path)
        message = result.bundle()["summary"]["message"]
        assert ("moved aside" in message) == (n == 0)  # said once, by the run that did it
        after = kernel.run(f"print(v{n})")
        assert after.stdout() == f"{sum(range(1000 + n))}\n" and after.stderr() == ""
    assert len(set(paths)) == len(paths)
    assert all(p.parent == cwd / "runs" and p.name.startswith("traces-") for p in paths)
    aside = [p for p in (cwd / "runs").iterdir() if (p / "earlier.txt").exists()]
    assert len(aside) == 1 and not aside[0].is_symlink()
    listed = [p for p, _ in mf.list_experiments(cwd / "runs")]
    assert sorted(listed) == sorted(paths)  # every run, once (the link is not listed twice)


def test_a_log_line_of_background_work_stays_out_of_the_cell_running_then(tmp_path):
    kernel = KernelHandle(tmp_path)
    try:
        setup = (
            "import logging, threading\n"
            "go, done = threading.Event(), threading.Event()\n"
            "def later():\n"
            "    go.wait()\n"
            "    logging.getLogger('scorep_kernel').warning('background work failed')\n"
            "    done.set()\n"
            "threading.Thread(target=later).start()"
        )
        assert kernel.run(setup).status == "ok"
        result = kernel.run("go.set(); done.wait(30)")
        assert result.status == "ok"
        assert result.stderr() == "" and result.stdout() == ""
    finally:
        kernel.shutdown()


def test_the_profiled_process_is_told_its_own_run_directory(named_kernel):
    kernel, cwd = named_kernel
    result = kernel.run("import os\nseen = os.environ['SCOREP_EXPERIMENT_DIRECTORY']", BUILTIN_SUB)
    assert result.status == "ok"
    assert Path(kernel.value("seen")) == Path(result.bundle()["path"])
    # the kernel's own variable stays the user's name
    assert kernel.value("os.environ['SCOREP_EXPERIMENT_DIRECTORY']") == "runs/traces"
    assert os.readlink(cwd / "runs" / "traces") == Path(result.bundle()["path"]).name
