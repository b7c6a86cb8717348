"""`jupyter scorep run` end to end: the real command, the real kernel (builtin backend),
examples/quickstart.ipynb and notebooks built here. Files, exit statuses and the printed
report are asserted; no timing."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time

import nbformat
import pytest
from headless_helpers import (
    PROFILE,
    REPO,
    command,
    experiment_dirs,
    manifest,
    notebook,
    run,
    summary,
)

from jupyterlab_scorep.headless.experiments import MIME

pytestmark = pytest.mark.timeout(300)

QUICKSTART = REPO / "examples" / "quickstart.ipynb"


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    """examples/quickstart.ipynb run as CI would: its toggled cells, builtin backend."""
    root = tmp_path_factory.mktemp("quickstart")
    (root / "nb").mkdir()
    shutil.copy(QUICKSTART, root / "nb" / "quickstart.ipynb")
    out = run(
        ["run", "nb/quickstart.ipynb", "--backend", "builtin", "-o", "out/executed.ipynb"],
        cwd=root,
    )
    return root, out


def test_quickstart_profiles_the_toggled_cells_only(quickstart):
    root, out = quickstart
    assert out.returncode == 0, out.stdout
    nb = nbformat.read(QUICKSTART, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    toggled = [c.id for c in code if c.metadata.get("scorep", {}).get("profile")]
    assert len(toggled) == 2

    exp_parent = root / "nb" / "scorep-experiments"
    exps = experiment_dirs(exp_parent)
    manifests = [manifest(e) for e in exps]
    assert sorted(m["cells"][0]["cell_id"] for m in manifests) == sorted(toggled)
    for m in manifests:
        assert m["backend"] == "builtin" and m["status"] == "ok"
        assert m["files_status"] == "ready"
        assert m["notebook"] == "nb/quickstart.ipynb"  # JPY_SESSION_NAME, relative to cwd

    data = summary(exp_parent / "scorep-summary.json")
    assert data["status"] == "ok" and data["exit_code"] == 0
    assert [c["profiled"] for c in data["cells"]] == [c.id in toggled for c in code]
    assert [c["toggled"] for c in data["cells"]] == [c.id in toggled for c in code]
    assert all(c["status"] == "ok" for c in data["cells"])
    for c in data["cells"]:
        if c["profiled"]:
            assert (exp_parent / c["experiment"]["path"]).resolve() in [e.resolve() for e in exps]
            assert c["experiment"]["top_regions"], c
    names = {
        r["name"] for c in data["cells"] if c["experiment"] for r in c["experiment"]["top_regions"]
    }
    assert "__main__:step" in names

    # the progress lines and the final table
    assert "[3/6] profiled ok" in " ".join(out.stdout.split())
    assert "2 of 6 code cells profiled" in out.stdout


def test_quickstart_last_cell_finds_its_experiments(quickstart):
    """Under plain nbconvert the last cell failed with FileNotFoundError on
    scorep-experiments (nothing was profiled); here it lists the two runs."""
    root, _out = quickstart
    nb = nbformat.read(root / "out" / "executed.ipynb", as_version=4)
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    assert not [o for o in last.outputs if o.output_type == "error"]
    text = "".join(o.get("data", {}).get("text/plain", "") for o in last.outputs)
    ids = sorted(e.name for e in experiment_dirs(root / "nb" / "scorep-experiments"))
    assert all(i in text for i in ids), text


def test_executed_notebook_renders_panels_and_html_summaries(quickstart):
    root, _out = quickstart
    executed = root / "out" / "executed.ipynb"
    nb = nbformat.read(executed, as_version=4)
    bundles = [
        o["data"]
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "display_data" and MIME in o.get("data", {})
    ]
    assert len(bundles) == 2
    for b in bundles:
        # the panel's bundle points at the experiment, and the fallbacks are there
        assert (root / "nb" / "scorep-experiments" / b[MIME]["id"]).samefile(b[MIME]["path"])
        assert "scorep-experiment-summary" in b["text/html"]
        # written again from the finished files: the summary's verdicts, the path relative
        # to the written notebook (out/executed.ipynb: ../nb/... is outside its folder)
        assert "  Verdict" in b["text/plain"] and "<b>Verdict</b>" in b["text/html"]
        assert f"files      {b[MIME]['path']}" in b["text/plain"]
    assert "__main__:step" in bundles[0]["text/plain"]
    html = subprocess.run(
        [command("jupyter"), "nbconvert", "--to", "html", str(executed), "--output", "page"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert html.returncode == 0, html.stderr
    page = (root / "out" / "page.html").read_text()
    assert page.count("scorep-experiment-summary") == 2
    assert page.count("Profiled with the builtin tracer") >= 2


def test_report_prints_summary_top_functions_and_call_tree(quickstart):
    root, _out = quickstart
    data = json.loads((root / "nb" / "scorep-experiments" / "scorep-summary.json").read_text())
    cell = next(c for c in data["cells"] if c["number"] == 3)
    exp = root / "nb" / "scorep-experiments" / cell["experiment"]["path"]

    text = run(["report", str(exp), "--depth", "3"], cwd=root)
    assert text.returncode == 0, text.stdout
    assert "Top functions by exclusive time" in text.stdout
    assert "Call tree to depth 3" in text.stdout
    step_line = next(ln for ln in text.stdout.splitlines() if "__main__:step" in ln)
    assert "300" in step_line  # simulate(300) calls step 300 times

    as_json = run(["report", str(exp), "--format", "json"], cwd=root)
    body = json.loads(as_json.stdout)
    step = next(r for r in body["summary"]["top_regions"] if r["name"] == "__main__:step")
    assert step["visits"] == 300
    assert body["experiment"]["cells"][0]["cell_id"] == cell["cell_id"]

    md = run(["report", str(root / "nb" / "scorep-experiments"), "--format", "markdown"], cwd=root)
    assert md.returncode == 0, md.stdout
    assert md.stdout.startswith("## Score-P profile of nb/quickstart.ipynb: ok")
    assert "| cell | status |" in md.stdout and "`__main__:step`" in md.stdout

    missing = run(["report", str(root / "nowhere")], cwd=root)
    assert missing.returncode == 2 and "no such experiment directory" in missing.stdout


def test_a_failing_cell_gives_its_traceback_and_exit_status_1(tmp_path):
    nb = notebook(
        tmp_path / "fails.ipynb",
        [
            ("ok", "x = sum(range(1000))", {"scorep": {"profile": True, "backend": "builtin"}}),
            (
                "boom",
                "def explode(v):\n    raise ValueError(f'bad value {v}')\n\nexplode(x)",
                {"scorep": {"profile": True, "backend": "builtin"}},
            ),
            ("after", "y = 1", None),
        ],
    )
    out = run(["run", nb.name], cwd=tmp_path)
    assert out.returncode == 1, out.stdout
    assert "ValueError: bad value 499500" in out.stdout
    assert "explode" in out.stdout and "Traceback" in out.stdout
    assert "cell [2] failed: ValueError: bad value 499500" in out.stdout
    data = summary(tmp_path / "scorep-experiments" / "scorep-summary.json")
    assert data["status"] == "error" and data["exit_code"] == 1
    ok, boom, after = data["cells"]
    assert ok["status"] == "ok" and after["status"] == "not_run" and not after["profiled"]
    assert boom["status"] == "error" and boom["error"]["ename"] == "ValueError"
    assert "explode" in boom["error"]["traceback"]
    assert "\x1b[" not in boom["error"]["traceback"]
    assert boom["experiment"]["status"] == "error"  # what was measured is kept


def test_ctrl_c_stops_cleanly_keeps_the_measurement_and_exits_130(tmp_path):
    P = {"scorep": {"profile": True, "backend": "builtin"}}
    notebook(
        tmp_path / "long.ipynb",
        [
            ("first", "total = sum(range(10_000))", P),
            (
                "long",
                "import pathlib, time\npathlib.Path('started').touch()\n"
                "for _ in range(6000):\n    time.sleep(0.1)",
                P,
            ),
            ("never", "z = 3", None),
        ],
    )
    proc = subprocess.Popen(
        [command("jupyter"), "scorep", "run", "long.ipynb", "-o", "done.ipynb"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "started").exists():  # the long cell is running
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "the long cell never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        # the cell would run 10 minutes: an interrupt that did not stop it fails by timeout
        stdout, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout
    assert "SIGINT" in stdout
    data = summary(tmp_path / "scorep-experiments" / "scorep-summary.json")
    assert data["status"] == "interrupted" and data["exit_code"] == 130
    first, long, never = data["cells"]
    assert first["status"] == "ok" and first["experiment"]["files_status"] == "ready"
    assert long["status"] == "interrupted"
    assert long["experiment"]["status"] == "interrupted"
    assert never["status"] == "not_run"
    assert len(experiment_dirs(tmp_path / "scorep-experiments")) == 2
    # the notebook as far as it ran
    nb = nbformat.read(tmp_path / "done.ipynb", as_version=4)
    assert any(MIME in o.get("data", {}) for o in nb.cells[0].outputs)


def test_papermill_engine_profiles_a_parameterised_notebook(tmp_path):
    notebook(
        tmp_path / "param.ipynb",
        [
            ("params", "n = 1", {"tags": ["parameters"]}),
            ("defs", "def tick(i):\n    return i * i", None),
            ("hot", "s = sum(tick(i) for i in range(n))", {**PROFILE}),
            ("plain", "t = tick(3)", None),
        ],
    )
    nb = nbformat.read(tmp_path / "param.ipynb", as_version=4)
    nb.cells[2].metadata["scorep"]["backend"] = "builtin"
    nbformat.write(nb, tmp_path / "param.ipynb")
    out = subprocess.run(
        [command("papermill"), "--engine", "scorep", "param.ipynb", "out.ipynb", "-p", "n", "7"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    exps = experiment_dirs(tmp_path / "scorep-experiments")
    assert len(exps) == 1  # the toggled cell only
    m = manifest(exps[0])
    assert m["cells"][0]["cell_id"] == "hot" and m["notebook"] == "param.ipynb"
    from jupyterlab_scorep.headless.experiments import load_tree

    tree = load_tree(exps[0])
    visits = sum(
        tree.visits[i].sum() for i, node in enumerate(tree.nodes) if node["name"] == "__main__:tick"
    )
    assert visits == 7  # papermill's parameter reached the profiled cell
    # the written notebook's gist is the finished profile's, paths relative to it
    cell = nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[3]
    text = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
    assert "__main__:tick" in text and "  Verdict" in text, text
    assert f"files      scorep-experiments/{m['id']}" in text


def test_the_kernel_is_told_of_the_profiled_cells_before_the_first_runs(tmp_path):
    """As JupyterLab does when a kernel is ready, `jupyter scorep run` sends the kernel the
    notebook's profiled cells (profiled_cells_notice): the first cell profiled in a
    subprocess, after an unprofiled one, takes a spare prepared for it, not a fresh worker."""
    sub = {"scorep": {"profile": True, "backend": "builtin", "isolation": "subprocess"}}
    nb = notebook(
        tmp_path / "notice.ipynb",
        [("setup", "import json\nx = json.loads('[1, 2]')", None), ("profiled", "y = sum(x)", sub)],
    )
    out = run(["run", nb.name], cwd=tmp_path)
    assert out.returncode == 0, out.stdout
    (exp,) = experiment_dirs(tmp_path / "scorep-experiments")
    timings = manifest(exp)["timings"]
    assert "worker_fresh" not in timings, timings
    assert {"worker_spare_ready", "worker_spare_starting", "worker_forked"} & set(timings), timings
