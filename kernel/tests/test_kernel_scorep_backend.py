"""The Score-P backend's plumbing, with a stand-in for Score-P (none is installed here).

A fake ``scorep-config`` on PATH and a fake ``scorep`` package (``python -m scorep`` runs
the script; ``user.region`` and ``instrumenter.register/unregister`` log what they are
asked) make the kernel choose the Score-P backend. The test checks what the kernel does
with it: the command line with the binding arguments, SCOREP_EXPERIMENT_DIRECTORY and
%%scorep_env variables set when the process starts, a user region around each cell with the
instrumenter on only inside it, and an honest manifest when no trace appears.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest
from test_kernel_harness import KernelHandle, wait_files

pytestmark = pytest.mark.timeout(180)

FAKE_MAIN = """
import json, os, runpy, sys
args = sys.argv[1:]
binding_args = []
while args and args[0].startswith("-"):
    binding_args.append(args.pop(0))
with open(os.environ["FAKE_SCOREP_LOG"], "a") as f:
    f.write(json.dumps({"event": "start", "binding_args": binding_args, "script": args[0],
                        "env": {k: v for k, v in os.environ.items() if k.startswith("SCOREP_")},
                        "pid": os.getpid()}) + "\\n")
sys.argv = args
runpy.run_path(args[0], run_name="__main__")
"""
FAKE_LOG = """
import json, os
def log(**event):
    with open(os.environ["FAKE_SCOREP_LOG"], "a") as f:
        f.write(json.dumps({**event, "pid": os.getpid()}) + "\\n")
"""
FAKE_USER = (
    FAKE_LOG
    + """
import contextlib
@contextlib.contextmanager
def region(name):
    log(event="region_begin", name=name)
    try:
        yield
    finally:
        log(event="region_end", name=name)
"""
)
FAKE_INSTRUMENTER = (
    FAKE_LOG
    + """
def register():
    log(event="register")
def unregister():
    log(event="unregister")
"""
)


@pytest.fixture(scope="module")
def fake_scorep(tmp_path_factory):
    root = tmp_path_factory.mktemp("fake-scorep")
    pkg = root / "site" / "scorep"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(FAKE_MAIN)
    (pkg / "user.py").write_text(FAKE_USER)
    (pkg / "instrumenter.py").write_text(FAKE_INSTRUMENTER)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    config = bin_dir / "scorep-config"
    config.write_text("#!/bin/sh\necho fake\n")
    config.chmod(config.stat().st_mode | stat.S_IXUSR)
    log = root / "calls.jsonl"
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(root / "site"), os.environ.get("PYTHONPATH", "")]),
        "FAKE_SCOREP_LOG": str(log),
    }
    kernel = KernelHandle(root, env=env)
    yield kernel, log
    kernel.shutdown()


def events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_scorep_backend_runs_cells_under_python_m_scorep(fake_scorep):
    kernel, log = fake_scorep
    shown = kernel.run("%scorep")
    assert "scorep         available" in shown.stdout()
    assert (
        kernel.run("%%scorep_python_binding_arguments\n--instrumenter-type=cTrace").status == "ok"
    )
    assert kernel.run("%%scorep_env\nSCOREP_ENABLE_TRACING=true").status == "ok"
    result = kernel.run("%%execute_with_scorep\nimport os\nanswer = 6 * 7\nprint(answer)")
    assert result.status == "ok", result.reply
    assert result.stdout() == "42\n"
    bundle = result.bundle()
    assert bundle["backend"] == "scorep" and bundle["isolation"] == "subprocess"
    path = Path(bundle["path"])
    assert kernel.value("answer") == 42

    # The process that ran the cell: a spare, started ahead (perhaps before `before`);
    # spares with earlier settings may have logged too.
    calls = events(log)
    start = next(
        c
        for c in calls
        if c["event"] == "start" and c["env"].get("SCOREP_EXPERIMENT_DIRECTORY") == bundle["path"]
    )
    calls = [c for c in calls if c["pid"] == start["pid"]]
    assert start["binding_args"] == ["--instrumenter-type=cTrace"]
    assert start["script"].endswith("worker/entry.py")
    # fixed when the process starts, as Score-P needs
    assert start["env"]["SCOREP_EXPERIMENT_DIRECTORY"] == str(path)
    assert start["env"]["SCOREP_ENABLE_TRACING"] == "true"
    count = result.reply["execution_count"]
    kinds = [c["event"] for c in calls if c["event"] != "start"]
    assert kinds[:4] == ["unregister", "region_begin", "register", "unregister"]
    assert kinds[4] == "region_end"
    assert [c["name"] for c in calls if c["event"] == "region_begin"] == [f"cell [{count}]"]

    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["backend"] == "scorep"
    assert manifest["binding_args"] == ["--instrumenter-type=cTrace"]
    assert manifest["scorep_env"]["SCOREP_ENABLE_TRACING"] == "true"
    manifest = wait_files(path, 30.0)
    # the stand-in writes no trace, and the manifest says so
    assert manifest["files_status"] == "failed"
    assert any("Score-P wrote no trace" in e for e in manifest["errors"])


def test_inprocess_is_refused_for_scorep(fake_scorep):
    kernel, _ = fake_scorep
    result = kernel.run(
        "x = 1", {"scorep": {"profile": True, "backend": "scorep", "isolation": "inprocess"}}
    )
    assert result.status == "error" and result.reply["ename"] == "ScorePSettingsError"
    assert "process of its own" in result.reply["evalue"]


def test_changed_binding_arguments_replace_the_spare(fake_scorep):
    kernel, log = fake_scorep
    assert kernel.run("%%scorep_python_binding_arguments\n--noinstrumenter").status == "ok"
    time.sleep(1.0)  # a spare with the old arguments may be starting
    result = kernel.run("%%execute_with_scorep\ny = 1")
    assert result.status == "ok", result.reply
    # (the spare that ran it started with the kernel's settings of its time: maybe early)
    starts = [c for c in events(log) if c["event"] == "start"]
    used = [
        c for c in starts if c["env"].get("SCOREP_EXPERIMENT_DIRECTORY") == result.bundle()["path"]
    ]
    assert used and used[0]["binding_args"] == ["--noinstrumenter"]
