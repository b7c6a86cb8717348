"""The wrapper kernel, started for real: a profiled cell (worker process) leaves the
namespace exactly as the same cell run unprofiled does; outputs are live and rich."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from test_kernel_harness import MIME, PROFILE_IN, PROFILE_SUB, KernelHandle, wait_files

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kernels")


@pytest.fixture(scope="module")
def kernels(workdir):
    """(profiled, plain): two kernels in one directory."""
    profiled = KernelHandle(workdir)
    plain = KernelHandle(workdir)
    for k in (profiled, plain):
        assert k.run("import os, sys\nimport numpy as np").status == "ok"
    yield profiled, plain
    profiled.shutdown()
    plain.shutdown()


# (setup run unprofiled in both, the cell under test, code run afterwards unprofiled in
# both, the expression compared)
CASES = {
    "new and rebound names": ("a1 = 1", "a1 = 2\nb1 = 'new'", "", "(a1, b1)"),
    "del": ("d1 = 5\nd2 = 6", "del d1", "", "('d1' in globals(), d2)"),
    "list append": ("l1 = [1]", "l1.append(2)", "", "l1"),
    "numpy in place": ("arr1 = np.arange(3)", "arr1 += 1", "", "(arr1.tolist(), arr1.dtype.name)"),
    # (a numpy view made before the cell comes back as a copy: pickle does not keep
    # views, see the report; so no views here)
    "large arrays out of band": (
        "big = np.arange(3_000_000)", "big += 1\nbig2 = big * 2", "big[0] = -5",
        "(int(big.sum()), int(big2[-1]), int(big[0]), big2.dtype.name)",
    ),
    "aliasing made in the cell": (
        "", "al_a = [1]\nal_b = al_a\nal_b.append(2)", "al_a.append(3)", "(al_a is al_b, al_b)"
    ),
    "aliasing made before": ("al_c = {'k': 0}\nal_d = al_c", "al_d['k'] += 1", "", "(al_c is al_d, al_c)"),
    "def lambda class instance": (
        "",
        "K1 = 10\ndef f1(x):\n    return x + K1\nsq = lambda v: v * v\n"
        "class C1:\n    def m(self):\n        return f1(1)\nc1 = C1()",
        "K1 = 20",  # functions must see the notebook's globals, not a copy
        "(f1(1), sq(3), c1.m(), isinstance(c1, C1), type(c1).__name__)",
    ),
    "function defined before": ("def g1():\n    return G1\nG1 = 1", "G1 = 2\nr1 = g1()", "G1 = 3", "(r1, g1())"),
    "import": (
        "", "import json as js1\nfrom collections import OrderedDict as OD1", "",
        "(js1.dumps([1]), OD1.__name__, js1.__name__)",
    ),
    "os.environ": ("", "os.environ['NOTEBOOK_TEST_VAR'] = 'v1'", "",
                   "os.environ.get('NOTEBOOK_TEST_VAR')"),
    "sys.path": ("", "sys.path.append('/nonexistent/scorep-kernel-test')", "",
                 "sys.path.count('/nonexistent/scorep-kernel-test')"),
    "os.chdir": (
        "os.makedirs('sub_chdir', exist_ok=True)", "os.chdir('sub_chdir')", "",
        "os.path.basename(os.getcwd())",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_profiled_cell_changes_namespace_like_plain_cell(kernels, case):
    profiled, plain = kernels
    setup, cell, after, probe = CASES[case]
    for k in (profiled, plain):
        if setup:
            assert k.run(setup).status == "ok"
    result = profiled.run(cell, PROFILE_SUB)
    assert result.status == "ok", result.reply
    assert result.bundle()["isolation"] == "subprocess"
    assert plain.run(cell).status == "ok"
    for k in (profiled, plain):
        if after:
            assert k.run(after).status == "ok"
    assert profiled.value(probe) == plain.value(probe)
    if case == "os.chdir":
        for k in (profiled, plain):
            k.run("os.chdir('..')")


def test_rich_outputs_and_execution_count(kernels):
    profiled, _ = kernels
    result = profiled.run(
        "from IPython.display import display, HTML\n"
        "display(HTML('<b>bold</b>'))\n"
        "print('printed')\n"
        "!echo from-shell\n"
        "{'answer': 42}",
        PROFILE_SUB,
    )
    assert result.status == "ok", result.reply
    html = [
        c for c in result.of("display_data") if "text/html" in c["data"] and MIME not in c["data"]
    ]
    assert html and html[0]["data"]["text/html"] == "<b>bold</b>"
    assert "printed" in result.stdout()
    assert "from-shell" in result.stdout()
    (execute_result,) = result.of("execute_result")
    assert execute_result["data"]["text/plain"] == "{'answer': 42}"
    assert execute_result["execution_count"] == result.reply["execution_count"]
    # the next cell's count follows on, as in a plain kernel
    nxt = profiled.run("1")
    assert nxt.reply["execution_count"] == result.reply["execution_count"] + 1


def test_error_traceback_names_cell_line_and_keeps_partial_state(kernels):
    profiled, _ = kernels
    result = profiled.run("part1 = 'set'\nraise ValueError('boom')\npart2 = 1", PROFILE_SUB)
    assert result.status == "error"
    assert result.reply["ename"] == "ValueError" and result.reply["evalue"] == "boom"
    text = "\n".join(result.reply["traceback"])
    assert "line 2" in text and "boom" in text
    assert result.of("error"), "the error is published on iopub as in a plain kernel"
    assert profiled.value("part1") == "set"
    assert profiled.value("'part2' in globals()") is False
    assert result.manifest()["status"] == "error"


def test_stream_is_live_and_carriage_returns_pass(kernels):
    profiled, _ = kernels
    result = profiled.run(
        "import time\nfor i in range(4):\n    print(f'\\rstep {i}', end='', flush=True)\n"
        "    time.sleep(0.4)\nprint(' done')",
        PROFILE_SUB,
    )
    assert result.status == "ok"
    streams = [(t, m["content"]["text"]) for t, m in result.messages if m["msg_type"] == "stream"]
    end = result.messages[-1][0]
    first_step = next(t for t, text in streams if "step 0" in text)
    assert first_step < end - 0.8, f"output arrived only at the end: {streams}"
    assert "\rstep 3" in "".join(text for _, text in streams)


def test_manifest_and_bundle(kernels, workdir):
    profiled, _ = kernels
    # JupyterLab sends the cell's id with its metadata
    result = profiled.run("total = sum(range(1000))", {**PROFILE_SUB, "cellId": "cell-abc-123"})
    bundle = result.bundle()
    assert set(bundle) >= {"id", "path", "backend", "status", "summary", "isolation", "run"}
    assert bundle["status"] == "ok" and bundle["backend"] in ("builtin", "scorep")
    path = Path(bundle["path"])
    assert path.is_absolute() and path.parent == workdir / "scorep-experiments"
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["id"] == bundle["id"] and manifest["status"] == "ok"
    assert manifest["isolation"] == "subprocess"
    code = "total = sum(range(1000))"
    started = [c.pop("start_ns") for c in manifest["cells"]]  # when the cell's region began
    assert manifest["start_ns"] <= started[0] <= manifest["end_ns"]
    assert manifest["cells"] == [
        {"cell_id": "cell-abc-123", "code": code, "execution_count": result.reply["execution_count"],
         "source_sha256": hashlib.sha256(code.encode()).hexdigest()}
    ]  # fmt: skip
    assert manifest["end_ns"] >= manifest["start_ns"] and manifest["wall_s"] >= 0
    display = next(c for c in result.of("display_data") if MIME in c["data"])
    assert (
        "backend" in display["data"]["text/plain"]
        and "<table class='gt'>" in display["data"]["text/html"]
    )


def test_inprocess_builtin_profile(kernels):
    profiled, _ = kernels
    result = profiled.run("inproc = [i * i for i in range(10)]\nlen(inproc)", PROFILE_IN)
    assert result.status == "ok", result.reply
    assert result.of("execute_result")[0]["data"]["text/plain"] == "10"
    bundle = result.bundle()
    assert bundle["isolation"] == "inprocess" and bundle["backend"] == "builtin"
    assert result.manifest()["isolation"] == "inprocess"
    assert profiled.value("inproc[3]") == 9


def test_bad_settings_give_clear_error_and_kernel_lives(kernels):
    profiled, _ = kernels
    bad = profiled.run("x_bad = 1", {"scorep": {"profile": True, "backend": "bogus"}})
    assert bad.status == "error" and bad.reply["ename"] == "ScorePSettingsError"
    assert "bogus" in bad.reply["evalue"] and "builtin" in bad.reply["evalue"]
    bad = profiled.run("x_bad = 1", {"scorep": {"profile": True, "max_depth": "deep"}})
    assert bad.status == "error" and "max_depth" in bad.reply["evalue"]
    assert profiled.run("%scorep isolation=sideways").status == "error"
    shown = profiled.run("%scorep")
    assert shown.status == "ok" and "backend" in shown.stdout() and "scorep " in shown.stdout()
    assert profiled.value("1 + 1") == 2


def test_execute_with_scorep_magic_and_scorep_env(kernels, workdir):
    profiled, _ = kernels
    target = workdir / "chosen-experiment"
    env = profiled.run(
        f"%%scorep_env\nSCOREP_EXPERIMENT_DIRECTORY={target}\nSCOREP_ENABLE_TRACING=true"
    )
    assert env.status == "ok"
    assert profiled.run("%%scorep_env\nPATH=/bin").status == "error"
    assert profiled.run("%scorep isolation=subprocess").status == "ok"  # kernel-wide default
    result = profiled.run(
        "%%execute_with_scorep\nimport os\nseen = os.environ.get('SCOREP_EXPERIMENT_DIRECTORY')"
    )
    try:
        assert result.status == "ok", result.reply
        run_dir = Path(result.bundle()["path"])  # beside the name, which points at it
        assert run_dir.parent == target.parent and run_dir.name.startswith(target.name + "-")
        assert target.resolve() == run_dir
        assert profiled.value("seen") == str(run_dir)
        assert result.manifest()["scorep_env"]["SCOREP_ENABLE_TRACING"] == "true"
        assert result.manifest()["isolation"] == "subprocess"
        # the worker's Score-P variables stay in the worker
        assert profiled.value("os.environ.get('SCOREP_EXPERIMENT_DIRECTORY')") is None
    finally:
        profiled.run("%%scorep_env\nSCOREP_EXPERIMENT_DIRECTORY=")
        profiled.run("%scorep isolation=default")


def _regions_in_trace(path: Path) -> list[str]:
    import otf2

    with otf2.reader.open(str(path / "traces.otf2")) as trace:
        return [e.region.name for _, e in trace.events if isinstance(e, otf2.events.Enter)]


BUILTIN_SUB = {"scorep": {**PROFILE_SUB["scorep"], "backend": "builtin"}}


# (the builtin tracer's trace and summary; test_real_scorep checks Score-P's)
@pytest.mark.parametrize("meta", [BUILTIN_SUB, PROFILE_IN], ids=["subprocess", "inprocess"])
def test_trace_holds_the_cell_and_its_calls_not_the_machinery(kernels, meta):
    profiled, _ = kernels
    code = "def traced_fn(n):\n    return sum(range(n))\nfor _k in range(3):\n    traced_fn(100)"
    result = profiled.run(code, meta)
    assert result.status == "ok", result.reply
    path = Path(result.bundle()["path"])
    manifest = wait_files(path)
    assert manifest["files_status"] == "ready", manifest["errors"]
    regions = _regions_in_trace(path)
    count = result.reply["execution_count"]
    assert regions[0] == f"cell [{count}]"
    assert sum("traced_fn" in r for r in regions) == 3
    machinery = [r for r in regions if r.split(".")[0].split(":")[0] in
                 ("IPython", "ipykernel", "scorep_kernel", "zmq", "tornado", "asyncio", "threading")]  # fmt: skip
    assert machinery == [], machinery[:5]
    summary = profiled.final_display(result)[MIME]["summary"]
    assert summary["events"] == len(regions) * 2
    assert summary["top"] and any("traced_fn" in name for name, _ in summary["top"])


def test_inline_matplotlib_figure(kernels):
    pytest.importorskip("matplotlib")
    profiled, _ = kernels
    result = profiled.run(
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.show()", PROFILE_SUB
    )
    assert result.status == "ok", result.reply
    figures = [c for c in result.of("display_data") if "image/png" in c["data"]]
    assert len(figures) == 1
    assert figures[0]["data"]["image/png"].startswith("iVBORw0KGgo")  # base64 of the PNG signature


def test_spare_worker_switched_off_while_it_starts(kernels):
    profiled, _ = kernels
    assert profiled.run("spare_a = 1", PROFILE_SUB).status == "ok"  # a spare starts now
    try:
        assert profiled.run("%scorep spare_worker=false").status == "ok"  # cancels that start
        result = profiled.run("spare_b = spare_a + 1", PROFILE_SUB, timeout=60)
        assert result.status == "ok", result.reply
        assert profiled.value("spare_b") == 2
    finally:
        assert profiled.run("%scorep spare_worker=true").status == "ok"


@pytest.mark.parametrize("meta", [PROFILE_SUB, PROFILE_IN], ids=["subprocess", "inprocess"])
def test_experiment_dir_setting_from_the_frontend(kernels, workdir, meta):
    profiled, _ = kernels
    cell_meta = {"scorep": {**meta["scorep"], "experiment_dir": "my-experiments"}}
    result = profiled.run("chosen_parent = 1", cell_meta)
    assert result.status == "ok", result.reply
    path = Path(result.bundle()["path"])
    assert path.parent == workdir / "my-experiments"
    assert result.manifest()["status"] == "ok"


def test_prints_and_displays_keep_their_order(kernels):
    profiled, _ = kernels
    result = profiled.run(
        "from IPython.display import display, Markdown\nimport sys\n"
        "print('one')\ndisplay(Markdown('two'))\nprint('three', file=sys.stderr)\n"
        "for i in range(20000):\n    print(i)\nprint('end')",
        PROFILE_SUB,
    )
    assert result.status == "ok", result.reply
    seq = []
    for _, m in result.messages:
        if m["msg_type"] == "stream":
            seq.append(("stream", m["content"]["name"], m["content"]["text"]))
        elif m["msg_type"] == "display_data" and "text/markdown" in m["content"]["data"]:
            seq.append(("display", "", "two"))
    out = [(k, t) for k, name, t in seq if k == "display" or name == "stdout"]
    shown = next(i for i, (k, _) in enumerate(out) if k == "display")
    before = "".join(t for k, t in out[:shown] if k == "stream")
    assert before == "one\n", f"display came out of order: {out[: shown + 2]}"
    assert "three\n" in "".join(t for k, name, t in seq if name == "stderr")
    numbers = "".join(t for k, name, t in seq if k == "stream" and name == "stdout")
    assert numbers == "one\n" + "".join(f"{i}\n" for i in range(20000)) + "end\n"


def test_last_value_lands_in_out_and_underscore(kernels):
    profiled, _ = kernels
    result = profiled.run("res_list = [1, 2]\nres_list", PROFILE_SUB)
    assert result.status == "ok", result.reply
    count = result.reply["execution_count"]
    assert profiled.value("_ is res_list") is True
    assert profiled.value(f"Out[{count}] is res_list") is True
    assert profiled.value("'_scorep_kernel_cell_result' in globals()") is False
    # a result that cannot travel is simply not kept, without a warning about our plumbing
    gen = profiled.run("(i for i in range(3))", PROFILE_SUB)
    assert gen.status == "ok" and "_scorep_kernel" not in gen.stderr()
    assert "generator" in gen.of("execute_result")[0]["data"]["text/plain"]


def test_manifest_says_which_notebook_and_cell_a_run_came_from(tmp_path):
    """For the history of a cell's runs: the notebook (Jupyter's session sets
    JPY_SESSION_NAME), JupyterLab's cellId and a hash of the source, per cell."""
    kernel = KernelHandle(tmp_path, env={"JPY_SESSION_NAME": "work/analysis.ipynb"})
    try:
        meta = {**PROFILE_IN, "cellId": "7f3c-cell"}
        first = kernel.run("a = 1", meta)
        second = kernel.run("a = 2", meta)
        assert first.status == second.status == "ok"
        one, two = first.manifest(), second.manifest()
        assert one["notebook"] == "work/analysis.ipynb"
        assert one["cells"][0]["cell_id"] == "7f3c-cell"
        assert one["cells"][0]["code"] == "a = 1"
        assert one["cells"][0]["source_sha256"] != two["cells"][0]["source_sha256"]
    finally:
        kernel.shutdown()
