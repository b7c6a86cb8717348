"""`jupyter scorep run --repeat N`: a profiled cell runs N times, each its own experiment;
the summary's experiment is the best on the verdict's basis, and a baseline made so gives
its best run and measures the noise from the repetitions' spread. Real runs."""

from __future__ import annotations

import pytest
from headless_helpers import experiment_dirs, notebook, run, summary

from jupyterlab_scorep.analysis import compare_noise
from jupyterlab_scorep.headless import run_summary as hs
from scorep_kernel import manifest as mf

pytestmark = pytest.mark.timeout(300)

BUILTIN = {"scorep": {"profile": True, "backend": "builtin"}}


def test_repeat_runs_a_profiled_cell_n_times_and_keeps_the_best(tmp_path):
    notebook(
        tmp_path / "nb.ipynb",
        [("hot", "sum(i * i for i in range(200_000))", BUILTIN), ("plain", "x = 1", None)],
    )
    out = run(["run", "nb.ipynb", "--repeat", "3", "--experiment-dir", "base"], cwd=tmp_path)
    assert out.returncode == 0, out.stdout
    data = summary(tmp_path / "base" / hs.SUMMARY_NAME)
    hot, plain = data["cells"]
    assert len(experiment_dirs(tmp_path / "base")) == 3  # the unprofiled cell ran once
    assert "repeats" not in plain and plain["experiment"] is None
    judged = {r["path"]: r["judged_s"] for r in hot["repeats"]}
    assert len(judged) == 3 and all(j is not None for j in judged.values())
    assert hot["experiment"]["path"] == min(judged, key=lambda p: judged[p])
    for path, j in judged.items():
        assert j == compare_noise.judged_time(mf.read_manifest(tmp_path / "base" / path))

    # a gate against it: the baseline is the best of the three, the noise their spread
    out = run(
        ["run", "nb.ipynb", "--experiment-dir", "again", "--baseline", "base",
         "--fail-if-slower", "200%"],
        cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout
    gate = summary(tmp_path / "again" / hs.SUMMARY_NAME)["gate"]
    [cell] = gate["cells"]
    best = min(judged, key=lambda p: judged[p])
    assert cell["verdict"] == "ok" and cell["baseline"].endswith(best)
    assert "measured: 3 runs of the same source" in gate["noise"]


def test_repeat_needs_a_count(tmp_path, capsys):
    from jupyterlab_scorep.headless import app

    path = notebook(tmp_path / "n.ipynb", [("a", "1", None)])
    assert app.main(["run", str(path), "--repeat", "0"]) == 2
    assert "--repeat needs a count" in capsys.readouterr().err
