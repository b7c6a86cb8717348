"""The text/plain and text/html of a profiled cell (what VS Code, GitHub and nbconvert's HTML
show): the top functions with their share, what measured, the wall time, the files relative
to the notebook. The real kernel for the bundle; the gist's own rules without one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_kernel_harness import PROFILE_IN, PROFILE_SUB, KernelHandle

from scorep_kernel.runs.display import MIME_TYPE, experiment_bundle
from scorep_kernel.runs.display_text import Gist, TopFunction, html_text, plain_text, shown_path

pytestmark = pytest.mark.timeout(180)

CELL = """\
def busy(n):
    return sum(i * i for i in range(n))

def rarely(n):
    return busy(n // 20)

total = 0
for _ in range(40):
    total += busy(20_000) + rarely(20_000)
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k = KernelHandle(tmp_path_factory.mktemp("gist"), env={"SCOREP_KERNEL_BACKEND": "builtin"})
    yield k
    k.shutdown()


@pytest.mark.parametrize("where", [PROFILE_IN, PROFILE_SUB], ids=["inprocess", "subprocess"])
def test_a_profiled_cells_text_carries_its_top_functions_with_their_share(kernel, where):
    result = kernel.run(CELL, where)
    assert result.status == "ok", result.reply
    display = kernel.final_display(result)  # in-process: updated once the build is done
    summary = display[MIME_TYPE]["summary"]
    top = dict(summary["top"])
    assert summary["measured_s"] >= sum(top.values()) > 0
    plain, page = display["text/plain"], display["text/html"]
    # busy and its generator expression are where the time goes (about half each: with
    # the C recorder a generator's resume costs little); the top line names the first of
    # the kernel's top functions (top_regions' order), with its share
    first = plain.splitlines()[2]
    name = summary["top"][0][0]
    assert {name, summary["top"][1][0]} == {"__main__:busy", "__main__:<genexpr>"}, summary
    share = 100 * top[name] / summary["measured_s"]
    assert first.strip().startswith(f"{share:.1f} %") and first.endswith(name), plain
    assert "busy" in plain and f"<code>{name.replace('<', '&lt;').replace('>', '&gt;')}" in page
    # the files relative to the notebook (the kernel runs in its folder), as a command to use
    rel = f"scorep-experiments/{display[MIME_TYPE]['id']}"
    assert f"files      {rel}" in plain and f"jupyter scorep report {rel}" in plain
    assert Path(display[MIME_TYPE]["path"]).is_absolute()  # the panel's contract keeps it
    assert re.search(r"backend +builtin, in (a subprocess|the kernel)", plain), plain
    assert "wall time" in plain and "share of all measured time" in page


def test_shares_bars_and_verdicts_in_both_texts():
    gist = Gist(
        message="Profiled with Score-P 8.4 in a subprocess: 2.00 s.",
        rows=(("backend", "Score-P 8.4, in a subprocess"), ("wall time", "2.000 s")),
        path="scorep-experiments/x",
        top=(TopFunction("__main__:step", 1.5, 75.0), TopFunction("a:<lambda>", 0.0004, None)),
        verdicts=("Mostly waiting: 0.10 cores busy.",),
    )
    plain = plain_text(gist)
    assert "   75.0 %  1.50 s  __main__:step" in plain
    assert "400 µs  a:<lambda>" in plain
    assert "  Verdict:\n    - Mostly waiting: 0.10 cores busy." in plain
    assert "(call tree; the panel in JupyterLab)" in plain  # the verdicts are here already
    page = html_text(gist)
    assert "width:75.0%" in page and "a:&lt;lambda&gt;" in page
    assert "<li>Mostly waiting: 0.10 cores busy.</li>" in page
    # no colour of its own: the theme's text colour draws everything
    assert not re.search(r"#[0-9a-fA-F]{3,6}\b|rgb\(|color:\s*(?!currentColor)", page), page
    judged = plain_text(Gist("m", (), "p", verdicts=()))
    assert "Verdict: nothing stood out" in judged
    assert "Verdict" not in plain_text(Gist("m", (), "p"))  # not judged yet: no claim


def test_paths_are_shown_relative_to_the_notebook_only_inside_its_folder(tmp_path):
    inside = tmp_path / "scorep-experiments" / "r1"
    assert shown_path(str(inside), str(tmp_path)) == "scorep-experiments/r1"
    assert shown_path("/scratch/runs/r1", str(tmp_path)) == "/scratch/runs/r1"
    assert shown_path(str(tmp_path), str(tmp_path)) == str(tmp_path)


def test_a_bundle_without_measured_time_shows_times_without_shares():
    bundle = experiment_bundle(
        exp_id="e", path="/abs/e", backend="scorep", isolation="subprocess", status="ok",
        wall_s=1.0, events=None, top=[("f", 0.5)],
    )  # fmt: skip
    assert "measured_s" not in bundle[MIME_TYPE]["summary"]
    line = next(ln for ln in bundle["text/plain"].splitlines() if ln.endswith(" f"))
    assert "%" not in line and "500 ms" in line
