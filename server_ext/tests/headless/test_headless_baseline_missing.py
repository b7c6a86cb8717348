"""`jupyter scorep run --baseline ...` where the baseline yields nothing to compare: the
gate fails with its own exit status (4) and the reason, unless --allow-missing-baseline
(the first run of a new notebook). Real runs of the real command and kernel."""

from __future__ import annotations

import shutil

import pytest
from headless_helpers import notebook, run, summary

from jupyterlab_scorep.headless import run_summary as hs

pytestmark = pytest.mark.timeout(300)

BUILTIN = {"scorep": {"profile": True, "backend": "builtin"}}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A baseline run of a notebook's first cell only."""
    root = tmp_path_factory.mktemp("missing")
    notebook(
        root / "nb.ipynb",
        [("one", "sum(range(1000))", BUILTIN), ("two", "sorted(range(2000))", None)],
    )
    out = run(["run", "nb.ipynb", "--cells", "1", "--experiment-dir", "base"], cwd=root)
    assert out.returncode == 0, out.stdout
    return root


def gate_run(root, name, baseline, *extra):
    out = run(
        ["run", "nb.ipynb", "--cells", "1", "--experiment-dir", name,
         "--baseline", baseline, "--fail-if-slower", "20%", *extra],
        cwd=root,
    )  # fmt: skip
    return out, summary(root / name / hs.SUMMARY_NAME)


def test_a_summary_without_its_experiments_fails_with_its_own_exit(base):
    (base / "only").mkdir()
    shutil.copy(base / "base" / hs.SUMMARY_NAME, base / "only" / hs.SUMMARY_NAME)
    out, data = gate_run(base, "r1", "only/scorep-summary.json")
    assert out.returncode == hs.EXIT_NO_BASELINE == 4, out.stdout
    assert "FAILED: nothing compared" in out.stdout
    assert "needs its experiment folders beside it" in out.stdout
    assert data["exit_code"] == 4 and data["status"] == "ok"
    gate = data["gate"]
    assert gate["verdict"] == "no_baseline" and gate["compared"] == 0
    assert "experiment folders" in gate["reason"]
    assert [c["verdict"] for c in gate["cells"]] == ["unreadable"]


def test_allow_missing_baseline_passes_and_says_nothing_was_compared(base):
    out, data = gate_run(base, "r2", "only/scorep-summary.json", "--allow-missing-baseline")
    assert out.returncode == 0, out.stdout
    assert "passed: --allow-missing-baseline" in out.stdout
    assert data["gate"]["verdict"] == "pass" and data["gate"]["compared"] == 0


def test_a_baseline_path_that_does_not_exist_fails_after_the_run(base):
    out, data = gate_run(base, "r3", "no-such-cache")
    assert out.returncode == 4, out.stdout
    assert "no such file or directory" in data["gate"]["reason"]
    # the run itself happened: its experiments can serve as the next baseline
    assert data["cells"][0]["experiment"] is not None
    out, data = gate_run(base, "r4", "no-such-cache", "--allow-missing-baseline")
    assert out.returncode == 0, out.stdout


def test_an_empty_baseline_folder_fails(base):
    (base / "empty").mkdir()
    out, data = gate_run(base, "r5", "empty")
    assert out.returncode == 4, out.stdout
    assert "holds no experiments" in data["gate"]["reason"]


def test_no_cell_in_common_fails(base):
    # the baseline ran cell 1; this run profiles only cell 2 (another id, source, number)
    out = run(
        ["run", "nb.ipynb", "--cells", "2", "--experiment-dir", "r6",
         "--baseline", "base", "--fail-if-slower", "20%"],
        cwd=base,
    )  # fmt: skip
    assert out.returncode == 4, out.stdout
    data = summary(base / "r6" / hs.SUMMARY_NAME)
    assert "no cell in common" in data["gate"]["reason"]
    assert [c["verdict"] for c in data["gate"]["cells"]] == ["unmatched"]
