"""Helpers for the headless tests: notebooks built with nbformat and the real command
(`jupyter scorep ...`, `papermill`) run in a subprocess against the real kernel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
PROFILE = {"scorep": {"profile": True}}


def command(name: str) -> str:
    path = BIN / name
    assert path.exists(), (
        f"{path} is missing: install the package with its test extra "
        "(.venv/bin/pip install -e '.[dev,test]'), which makes the console scripts"
    )
    return str(path)


def run(args: list[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """`jupyter scorep <args>` in ``cwd``; stdout and stderr together in ``.stdout``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOREP_KERNEL_")}
    return subprocess.run(
        [command("jupyter"), "scorep", *args],
        cwd=cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout,
    )


def notebook(path: Path, cells: list[tuple[str, str, dict[str, Any] | None]]) -> Path:
    """A notebook of code cells ``(id, source, metadata)`` (``None`` source: markdown)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "scorep-python",
        "display_name": "Python 3 (Score-P)",
        "language": "python",
    }
    for cell_id, source, meta in cells:
        if cell_id.startswith("md"):
            nb.cells.append(nbformat.v4.new_markdown_cell(source, id=cell_id))
        else:
            nb.cells.append(nbformat.v4.new_code_cell(source, id=cell_id, metadata=meta or {}))
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def summary(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    import jsonschema

    from jupyterlab_scorep.headless.run_summary import SCHEMA

    jsonschema.validate(data, SCHEMA)
    return data


def experiment_dirs(parent: Path) -> list[Path]:
    return sorted(p for p in parent.iterdir() if (p / "manifest.json").is_file())


def manifest(exp: Path) -> dict[str, Any]:
    return json.loads((exp / "manifest.json").read_text())
