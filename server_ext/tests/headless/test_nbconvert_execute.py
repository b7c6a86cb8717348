"""`jupyter nbconvert --execute` end to end, the real command and the real kernel (builtin
backend): with our preprocessor a toggled notebook converts with its profiles, each cell
run once, and the profiled cells' text holds the finished profile's gist; without it the
kernel says, in the first cell, that no cell metadata came and how to profile. The example
notebooks run top to bottom as plain nbclient runs them. The gist's HTML is rendered in
Chromium, nbconvert's light and dark theme and VS Code's notebook webview (approximated,
see ``vscode_page``), and read back: every text readable, names left, numbers right."""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from headless_helpers import PROFILE, REPO, command, experiment_dirs, manifest, notebook

from jupyterlab_scorep.headless.experiments import MIME
from scorep_kernel.frontend_metadata import NOTE

pytestmark = pytest.mark.timeout(300)

PREPROCESSOR = "--Exporter.preprocessors=jupyterlab_scorep.ScorePExecutePreprocessor"
FIRST_LINE = NOTE.splitlines()[0]
STEP = "def step(n):\n    return sum(i * i for i in range(n))\nprint('defined')"
WORK = "total = 0\nfor _ in range(40):\n    total += step(20_000)\ntotal"
CELLS = [
    ("a", STEP, None),
    ("b", WORK, PROFILE),
    ("c", "total * 2", None),
    ("d", "%%execute_with_scorep\nstep(1000)", None),
]


def nbconvert(args: list[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """`jupyter nbconvert <args>` in ``cwd``, the builtin backend for every profiled cell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOREP_KERNEL_")}
    env["SCOREP_KERNEL_BACKEND"] = "builtin"
    return subprocess.run(
        [command("jupyter"), "nbconvert", *args],
        cwd=cwd, env=env, text=True, capture_output=True, timeout=timeout,
    )  # fmt: skip


def outputs_text(cell) -> str:
    return "".join(
        o.get("text", "") + (o.get("data") or {}).get("text/plain", "") for o in cell.outputs
    )


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """The toggled notebook through `--to notebook --execute` with our preprocessor."""
    root = tmp_path_factory.mktemp("nbconvert")
    notebook(root / "toggled.ipynb", CELLS)
    out = nbconvert(["--to", "notebook", "--execute", PREPROCESSOR, "toggled.ipynb"], root)
    return root, out


def test_the_preprocessor_sends_the_cells_metadata_and_runs_the_notebook_once(converted):
    root, out = converted
    assert out.returncode == 0, out.stderr
    nb = nbformat.read(root / "toggled.nbconvert.ipynb", as_version=4)
    cells = {c.id: c for c in nb.cells}
    exps = experiment_dirs(root / "scorep-experiments")
    # the toggled cell and the marked one, each once: the stock ExecutePreprocessor gave way
    assert sorted(manifest(e)["cells"][0]["cell_id"] for e in exps) == ["b", "d"]
    for e in exps:
        m = manifest(e)
        assert m["files_status"] == "ready" and m["status"] == "ok"
        assert m["notebook"] == "toggled.ipynb"  # JPY_SESSION_NAME: the history finds it
    assert [c.execution_count for c in nb.cells] == [1, 2, 3, 4]
    assert FIRST_LINE not in outputs_text(cells["a"]), "metadata came: nothing to say"
    assert not [o for o in cells["a"].outputs if MIME in (o.get("data") or {})]
    assert "213317333600000" in outputs_text(cells["c"])  # 2 * total: the state carried on


def test_the_converted_notebooks_text_holds_the_finished_gist(converted):
    root, _out = converted
    nb = nbformat.read(root / "toggled.nbconvert.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.id == "b")
    display = next(o for o in cell.outputs if MIME in (o.get("data") or {}))
    payload, plain, page = display.data[MIME], display.data["text/plain"], display.data["text/html"]
    rel = f"scorep-experiments/{payload['id']}"
    lines = plain.splitlines()
    assert lines[1] == "  Top functions (exclusive time, share of all measured time):"
    # the summary's top functions (the panel's own reading of the profile), with their
    # shares: step and its generator expression, about half the time each (which of the
    # two comes first depends on where the tracer's own cost per call falls)
    top_two = {line.split("  ")[-1].split(" ")[0] for line in lines[2:4]}
    assert top_two == {"__main__:step", "__main__:<genexpr>"}, plain
    assert lines[2].strip().split()[1] == "%", plain
    assert "  Verdict:" in plain or "  Verdict: nothing stood out" in plain
    assert f"files      {rel}" in plain and f"jupyter scorep report {rel}" in plain
    assert "(call tree; the panel in JupyterLab)" in plain
    assert "__main__:step" in page and "<b>Verdict</b>" in page and html.escape(rel) in page
    assert Path(payload["path"]).is_absolute(), "the panel's bundle is the kernel's"


def test_html_execute_converts_with_the_profiles(tmp_path):
    notebook(tmp_path / "toggled.ipynb", CELLS)
    out = nbconvert(["--to", "html", "--execute", PREPROCESSOR, "toggled.ipynb"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(experiment_dirs(tmp_path / "scorep-experiments")) == 2
    page = (tmp_path / "toggled.html").read_text()
    assert page.count("scorep-experiment-summary scorep-gist") == 2
    assert "__main__:step" in page and FIRST_LINE not in page


def test_plain_execute_is_told_in_the_first_cell_and_profiles_only_marked_cells(tmp_path):
    notebook(tmp_path / "toggled.ipynb", CELLS)
    out = nbconvert(["--to", "notebook", "--execute", "toggled.ipynb"], tmp_path)
    assert out.returncode == 0, out.stderr
    nb = nbformat.read(tmp_path / "toggled.nbconvert.ipynb", as_version=4)
    texts = [outputs_text(c) for c in nb.cells]
    assert texts[0].startswith(FIRST_LINE) and "--Exporter.preprocessors=" in texts[0]
    assert texts[0].endswith("defined\n")
    assert not any(FIRST_LINE in t for t in texts[1:]), "said once"
    exps = experiment_dirs(tmp_path / "scorep-experiments")
    # no cell id came either; the magic still marks its cell
    assert [manifest(e)["cells"][0]["code"] for e in exps] == ["step(1000)"]


def test_naming_the_preprocessor_without_execute_says_so_and_runs_nothing(tmp_path):
    notebook(tmp_path / "toggled.ipynb", CELLS)
    out = nbconvert(["--to", "html", PREPROCESSOR, "toggled.ipynb"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "is named, but the notebook is not executed: add --execute" in out.stderr
    assert not (tmp_path / "scorep-experiments").exists()


@pytest.mark.parametrize("name", ["quickstart", "gpt"])
def test_the_examples_run_top_to_bottom_in_a_frontend_without_metadata(tmp_path, name):
    if name == "gpt":
        pytest.importorskip("torch", reason="the GPT example needs torch")
    for f in (REPO / "examples").iterdir():
        if f.suffix in (".ipynb", ".py"):
            shutil.copy(f, tmp_path / f.name)
    # nbclient, as plain `jupyter nbconvert --execute` runs it: no cell metadata
    out = nbconvert(
        ["--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=600", f"{name}.ipynb"],
        tmp_path,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    nb = nbformat.read(tmp_path / f"{name}.nbconvert.ipynb", as_version=4)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert outputs_text(code[0]).startswith(FIRST_LINE)


# --- the gist on screen ------------------------------------------------------------------

PLAYWRIGHT = REPO / "ui-tests" / "node_modules"
CHROMIUM = os.environ.get("SCOREP_UI_CHROMIUM", "/usr/lib/chromium/chromium")

# VS Code's notebook output webview: its stylesheet for tables (backLayerWebView.ts) and the
# webview's defaults for body and code, over the colours of its default themes, Light Modern
# and Dark Modern (extensions/theme-defaults/themes/*_modern.json).
VSCODE_THEMES = {
    "light": {"bg": "#FFFFFF", "fg": "#3B3B3B", "pre_fg": "#3B3B3B", "pre_bg": "#0000001F"},
    "dark": {"bg": "#1F1F1F", "fg": "#CCCCCC", "pre_fg": "#D0D0D0", "pre_bg": "#3C3C3C"},
}
VSCODE_CSS = """
body { background: var(--vscode-editor-background); color: var(--vscode-editor-foreground);
  font-family: -apple-system, BlinkMacSystemFont, "Segoe WPC", "Segoe UI", "Ubuntu",
  "Droid Sans", sans-serif; font-size: 13px; margin: 0; padding: 0 20px; }
code { font-family: "Droid Sans Mono", "monospace", monospace;
  color: var(--vscode-textPreformat-foreground);
  background-color: var(--vscode-textPreformat-background); padding: 1px 3px;
  border-radius: 4px; }
table, thead, tr, th, td, tbody { border: none !important; border-color: transparent;
  border-spacing: 0; border-collapse: collapse; }
table, th, tr { vertical-align: middle; text-align: right; }
thead { font-weight: bold; background-color: rgba(130, 130, 130, 0.16); }
th, td { padding: 4px 8px; }
tr:nth-child(even) { background-color: rgba(130, 130, 130, 0.08); }
tbody th { font-weight: normal; }
.output { padding: 8px 8px 8px 8px; }
pre.gist-plain { font-family: "Droid Sans Mono", monospace; font-size: 13px;
  color: var(--vscode-editor-foreground); white-space: pre; }
"""


def vscode_page(path: Path, scheme: str, gists: list[tuple[str, str]]) -> Path:
    t = VSCODE_THEMES[scheme]
    theme = (
        f":root {{ --vscode-editor-background: {t['bg']}; --vscode-editor-foreground: {t['fg']};"
        f" --vscode-textPreformat-foreground: {t['pre_fg']};"
        f" --vscode-textPreformat-background: {t['pre_bg']}; }}"
    )
    body = "".join(
        f"<div class='output'>{page}</div><div class='output'><pre class='gist-plain'>"
        f"{html.escape(plain)}</pre></div>"
        for page, plain in gists
    )
    path.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><style>{theme}{VSCODE_CSS}</style>"
        f"</head><body>{body}</body></html>"
    )
    return path


def test_the_gist_reads_in_light_and_dark_in_nbconverts_html_and_vscode(converted, tmp_path):
    if not (PLAYWRIGHT / "playwright").is_dir() or not os.access(CHROMIUM, os.X_OK):
        pytest.skip("needs ui-tests/node_modules (make setup) and Chromium")
    root, _out = converted
    executed = root / "toggled.nbconvert.ipynb"
    pages = []
    for scheme in ("light", "dark"):
        out = nbconvert(
            ["--to", "html", f"--HTMLExporter.theme={scheme}", str(executed),
             "--output-dir", str(tmp_path), "--output", f"nbconvert-{scheme}"],
            root,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        pages.append({"name": f"nbconvert-{scheme}", "file": str(tmp_path / f"nbconvert-{scheme}.html"), "scheme": scheme})  # fmt: skip
    nb = nbformat.read(executed, as_version=4)
    gists = [
        (o.data["text/html"], o.data["text/plain"])
        for c in nb.cells
        for o in c.outputs
        if MIME in (o.get("data") or {})
    ]
    for scheme in ("light", "dark"):
        page = vscode_page(tmp_path / f"vscode-{scheme}.html", scheme, gists)
        pages.append({"name": f"vscode-{scheme}", "file": str(page), "scheme": scheme})
    shots = Path(os.environ.get("SCOREP_GIST_SHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    config = {"modules": str(PLAYWRIGHT), "chromium": CHROMIUM, "out": str(shots), "pages": pages}
    run = subprocess.run(
        ["node", str(Path(__file__).with_name("gist_render.js")), json.dumps(config)],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    for name, r in seen.items():
        assert r["gists"] == 2, (name, r)
        # WCAG AA for body text, everywhere in the gist (opacity and backgrounds composited)
        assert r["minContrast"] >= 4.5, (name, r["worst"], r["minContrast"])
        assert set(r["names"]) == {"left"} and set(r["labels"]) == {"left"}, (name, r)
        assert set(r["numbers"]) == {"right"}, (name, r)
        assert r["bars"] and all(b["fill"] == b["color"] for b in r["bars"]), (name, r["bars"])
        assert max(b["width"] for b in r["bars"]) > 10, "the top function's bar is drawn"


async def test_nbconverts_html_says_what_the_panel_says(api, jp_root_dir):
    """nbconvert's HTML (what VS Code and a shared page show; nbconvert writes the
    attributes again, in double quotes) against the panel's own
    answers at the REST API for the same run: the same cell time (GET experiment's
    manifest, the header), the same top functions in the same order with the same shares
    (GET summary's top_regions, the TOP line and the Summary's order) and the same
    verdicts."""
    import re

    root = Path(jp_root_dir)
    notebook(root / "toggled.ipynb", CELLS[:2])
    out = nbconvert(["--to", "html", "--execute", PREPROCESSOR, "toggled.ipynb"], root)
    assert out.returncode == 0, out.stderr
    [exp] = experiment_dirs(root / "scorep-experiments")
    page = (root / "toggled.html").read_text()
    gists = re.findall(
        r"<div class=[\"']scorep-experiment-summary scorep-gist[\"']>.*?</div>", page, re.S
    )
    assert len(gists) == 1, page[:2000]
    gist = gists[0]

    code, body = await api("experiment", path=str(exp))
    assert code == 200, body
    code, summ = await api("summary", path=str(exp))
    assert code == 200, summ
    wall = body["manifest"]["wall_s"]
    assert f"<th>wall time</th><td>{wall:.3f} s</td>" in gist, gist
    assert abs(summ["wall_s"] - wall) < 1e-6

    rows = re.findall(
        r"<tr><td class=[\"']num[\"']>([0-9.]+) %</td>.*?<code>(.*?)</code></td></tr>", gist, re.S
    )
    shown = [(html.unescape(name), float(pct)) for pct, name in rows]
    top = [(r["name"], r["pct"]) for r in summ["top_regions"][: len(shown)]]
    assert shown and shown == top, (shown, top)
    assert {name.split(" ")[0] for name, _ in shown[:2]} == {
        "__main__:step",
        "__main__:<genexpr>",
    }, shown
    verdicts = [html.unescape(v) for v in re.findall(r"<li>(.*?)</li>", gist, re.S)]
    assert verdicts == [v["text"] for v in summ["verdicts"]], (verdicts, summ["verdicts"])
