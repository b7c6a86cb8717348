"""scorep-jupyter's own six test notebooks (kernel/tests/data/scorep_jupyter, vendored
unchanged) under Run All in the Score-P kernel, in the environment that project's
tests/test_kernel.py gives its kernel: every cell ok, nothing on stderr, and the user's own
output lines equal to the outputs stored in the notebooks, compared as that test compares
them (stream text and execute results, line by line, stripped), without the lines that are
only either kernel's status messages (docs/SCOREP_JUPYTER.md, "Status lines", read from
there). Under the backend `make test` finds (Score-P) and the builtin tracer."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from test_kernel_harness import KernelHandle, wait_files

from scorep_kernel import experiment
from scorep_kernel import manifest as mf

pytestmark = pytest.mark.timeout(600)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = Path(__file__).parent / "data" / "scorep_jupyter"
DOC = ROOT / "docs" / "SCOREP_JUPYTER.md"
HAVE_SCOREP = shutil.which("scorep-config") is not None
# scorep-jupyter's tests/test_kernel.py, setUpClass: the kernel's environment and folders
PEER_ENV = {
    "SCOREP_JUPYTER_DISABLE_PROCESSING_ANIMATIONS": "1",
    "SCOREP_ENABLE_TRACING": "1",
    "SCOREP_ENABLE_PROFILING": "0",
    "SCOREP_TOTAL_MEMORY": "3g",
    "SCOREP_EXPERIMENT_DIRECTORY": "test_kernel_tmp/scorep-traces",
}
TRACES = "test_kernel_tmp/scorep-traces"


def _status_lines(heading: str) -> list[re.Pattern[str]]:
    """The lines of one table of the doc's "Status lines", as patterns."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Status lines", 1)[1]
    table = section.split(heading, 1)[1].split("\n\n", 2)[1]
    patterns = []
    for row in table.splitlines():
        found = re.match(r"\| `(.+?)` +\|", row)
        if found:
            parts = re.split(r"<[^>]+>", found.group(1))
            patterns.append(re.compile(".+".join(re.escape(p) for p in parts)))
    assert patterns, f"no status lines under {heading!r} in {DOC}"
    return patterns


PEER_STATUS = _status_lines("scorep-jupyter's:")
OUR_STATUS = _status_lines("This kernel's:")


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def stored_lines(cell: nbformat.NotebookNode) -> list[str]:
    """The cell's stored outputs, as scorep-jupyter's test reads them."""
    out: list[str] = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            out += _lines(output.get("text", ""))
        elif output.output_type == "execute_result":
            out += _lines(output["data"].get("text/plain", ""))
        elif output.output_type == "error":
            out += _lines("\n".join(output["traceback"]))
    return out


def produced_lines(result) -> list[str]:
    """The cell's outputs here, as scorep-jupyter's test reads a kernel's messages."""
    out: list[str] = []
    for _, m in result.messages:
        if m["msg_type"] == "stream":
            text = m["content"]["text"]
        elif m["msg_type"] == "execute_result":
            text = m["content"]["data"]["text/plain"]
        else:
            continue
        if "\x00" not in text and "\r" not in text:
            out += _lines(text)
    return out


def _without(lines: list[str], status: list[re.Pattern[str]]) -> list[str]:
    return [line for line in lines if not any(p.fullmatch(line) for p in status)]


def _without_echo(lines: list[str]) -> list[str]:
    """scorep-jupyter's %%finalize_multicellmode: "Executing cell <n>", the cell's code up
    to a line of dashes, blank lines between the cells."""
    out, echoing = [], False
    for line in lines:
        if re.fullmatch(r"Executing cell \d+", line):
            echoing = True
        elif echoing:
            echoing = not re.fullmatch(r"-+", line)
        elif line:
            out.append(line)
    return out


def blocks(sources: list[str]) -> list[list[int]]:
    """Cells compared together: one each, but a multi-cell run (scorep-jupyter shows its
    outputs under %%finalize_multicellmode) from its %%enable_multicellmode on."""
    groups: list[list[int]] = []
    open_run: list[int] | None = None
    writing = False
    for index, source in enumerate(sources):
        first = source.lstrip().split("\n", 1)[0].strip()
        writing = (writing or first.startswith("%%start_writefile")) and not first.startswith(
            ("%%end_writefile", "%%abort_writefile")
        )
        if not writing and first == "%%enable_multicellmode":
            if open_run:
                groups.append(open_run)
            open_run = [index]
            continue
        if open_run is not None:
            open_run.append(index)
            if first in ("%%finalize_multicellmode", "%%abort_multicellmode"):
                groups.append(open_run)
                open_run = None
            continue
        groups.append([index])
    if open_run:
        groups.append(open_run)
    return groups


BACKENDS = ["auto", "builtin"]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    if request.param == "auto" and not HAVE_SCOREP:
        pytest.skip("without Score-P, auto is builtin (the other run)")
    return request.param


@pytest.fixture(autouse=True)
def _as_python_buffers(monkeypatch):
    """The outputs of a %%bash cell arrive in the chunks its programs write; the stored
    ones were made with Python's own buffering, not PYTHONUNBUFFERED's write per print."""
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)


def run_all(name: str, backend: str, cwd: Path):
    """Run All in a fresh kernel: (notebook, results per code cell)."""
    (cwd / TRACES).mkdir(parents=True)
    kernel = KernelHandle(cwd, {**PEER_ENV, "SCOREP_KERNEL_BACKEND": backend})
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    cells = [c for c in notebook.cells if c.cell_type == "code"]
    try:
        results = [kernel.run(cell.source, timeout=240) for cell in cells]
        for result in results:  # the files are finished after the replies
            for bundle in result.bundles():
                wait_files(Path(bundle["path"]))
    finally:
        kernel.shutdown()
    return cells, results


NAMES = [
    "scorep_pythonargs",
    "ipykernel_exec",
    "scorep_exec",
    "persistence",
    "multicell",
    "writemode",
]


@pytest.mark.parametrize("name", NAMES)
def test_the_notebook_runs_unchanged(name, backend, tmp_path):
    cells, results = run_all(name, backend, tmp_path)
    for number, (cell, result) in enumerate(zip(cells, results), 1):
        assert result.status == "ok", (number, cell.source, result.reply)
        assert result.stderr() == "", (number, cell.source, result.stderr())
    for group in blocks([c.source for c in cells]):
        stored = [line for i in group for line in stored_lines(cells[i])]
        expected = _without_echo(_without(stored, PEER_STATUS))
        produced = [line for i in group for line in produced_lines(results[i])]
        got = _without(produced, OUR_STATUS)
        if len(group) > 1:
            got = [line for line in got if line]
        where = [cells[i].source.split("\n", 1)[0] for i in group]
        assert got == expected, f"cells {[i + 1 for i in group]} {where}"
    finished = [r.bundles()[-1] for r in results if r.bundles()]
    for bundle in finished:  # every profiled run's experiment has its files
        if bundle["status"] == mf.STATUS_RUNNING:
            continue  # a cell of a multi-cell run: its run's last bundle counts
        manifest = mf.read_manifest(bundle["path"])
        assert manifest["files_status"] == mf.FILES_READY, manifest["errors"]


def test_the_write_mode_script_runs_under_the_builtin_tracer_too(tmp_path):
    cells, results = run_all("writemode", "auto" if HAVE_SCOREP else "builtin", tmp_path)
    run_sh = tmp_path / "test_kernel_tmp" / "my_jupyter_to_script_run.sh"
    assert run_sh.is_file() and os.access(run_sh, os.X_OK)
    assert not (tmp_path / "jupyter_to_script.py").exists()  # aborted: removed
    expected = _without(stored_lines(cells[-1]), PEER_STATUS)
    assert expected == ["a + b = 15", "a - b = -5", "c = 350", "Sum(c_vec) = 61030"]
    if HAVE_SCOREP:  # the notebook's own %%bash cell ran it under Score-P
        assert (tmp_path / TRACES / "traces.otf2").is_file()
    env = {**os.environ, "SCOREP_KERNEL_BACKEND": "builtin"}
    done = subprocess.run(
        ["bash", str(run_sh)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    assert _lines(done.stdout) == expected and done.stderr == ""
    # Score-P's rule: the directory of the run before moved aside, this run's in its place
    run_dir = tmp_path / TRACES
    manifest = mf.read_manifest(run_dir)
    assert manifest["backend"] == "builtin" and manifest["status"] == "ok"
    assert manifest["files_status"] == mf.FILES_READY, manifest["errors"]
    import otf2

    with otf2.reader.open(str(run_dir / experiment.OTF2_ANCHOR)) as trace:
        names = {region.name for region in trace.definitions.regions}
    assert "my_jupyter_to_script.py" in names  # the script's own region
    if HAVE_SCOREP:  # Score-P's run (it moved the empty folder of the setup aside itself)
        aside = [p for p in run_dir.parent.iterdir() if p.name.startswith("scorep-traces-")]
        assert [(p / "traces.otf2").is_file() for p in aside].count(True) == 1
