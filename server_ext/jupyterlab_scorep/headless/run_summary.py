"""scorep-summary.json: what a headless run did, cell by cell, and the final table.

The file is written beside the experiments (``<experiment dir>/scorep-summary.json``) at
the end of every run, also an interrupted or failed one, so a later run can use it as its
``--baseline``. ``SCHEMA`` is its JSON Schema; docs/HEADLESS.md describes each field (a
test checks that it names them all). Experiment paths inside the experiment directory are
written relative to the summary's own directory, so the folder can be moved (a CI
artifact) and still be read as a baseline.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from scorep_kernel import manifest as mf

SUMMARY_NAME = "scorep-summary.json"
SCHEMA_ID = "jupyterlab-scorep/headless-summary"
SUMMARY_VERSION = 1

# A cell's status in a headless run.
CELL_OK = "ok"
CELL_ERROR = "error"  # the cell raised an exception
CELL_INTERRUPTED = "interrupted"  # Ctrl-C (or SIGTERM) stopped it
CELL_TIMEOUT = "timeout"  # it ran past --timeout and was interrupted
CELL_DIED = "died"  # the kernel died while it ran
CELL_NOT_RUN = "not_run"  # the run stopped before it
CELL_SKIPPED = "skipped"  # nothing to run (an empty cell)
CELL_STATUSES = (
    CELL_OK,
    CELL_ERROR,
    CELL_INTERRUPTED,
    CELL_TIMEOUT,
    CELL_DIED,
    CELL_NOT_RUN,
    CELL_SKIPPED,
)

# The run's status, and the exit status of `jupyter scorep run` for it.
RUN_OK = "ok"
RUN_ERROR = "error"  # a cell raised (and was not tagged raises-exception)
RUN_TIMEOUT = "timeout"
RUN_DIED = "died"
RUN_INTERRUPTED = "interrupted"
RUN_FAILED = "failed"  # the kernel could not be started
RUN_STATUSES = (RUN_OK, RUN_ERROR, RUN_TIMEOUT, RUN_DIED, RUN_INTERRUPTED, RUN_FAILED)

EXIT_OK = 0
EXIT_FAILED = 1  # a cell failed, timed out, or the kernel died or could not start
EXIT_USAGE = 2  # a wrong option or an unreadable notebook (argparse's status too)
EXIT_REGRESSION = 3  # --fail-if-slower: a profiled cell regressed beyond the threshold
# --baseline: nothing was compared (the baseline is missing, empty, its experiments are gone
# or it has no cell in common with this run) and --allow-missing-baseline was not given
EXIT_NO_BASELINE = 4
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT
EXIT_CODES = {
    RUN_OK: EXIT_OK,
    RUN_ERROR: EXIT_FAILED,
    RUN_TIMEOUT: EXIT_FAILED,
    RUN_DIED: EXIT_FAILED,
    RUN_FAILED: EXIT_FAILED,
    RUN_INTERRUPTED: EXIT_INTERRUPTED,
}

_NUMBER = {"type": "number"}
_OPT_NUMBER = {"type": ["number", "null"]}
_OPT_STRING = {"type": ["string", "null"]}
_TOP_REGION = {
    "type": "object",
    "required": ["name", "excl_s", "incl_s", "visits", "pct"],
    "properties": {
        "name": {"type": "string"},
        "excl_s": _NUMBER,
        "incl_s": _NUMBER,
        "visits": {"type": "integer"},
        "pct": _NUMBER,
    },
}
_EXPERIMENT = {
    "type": "object",
    "required": ["id", "path", "backend", "isolation", "status", "files_status", "wall_s"],
    "properties": {
        "id": {"type": "string"},
        "path": {"type": "string"},
        "backend": {"enum": list(mf.BACKENDS)},
        "isolation": {"enum": list(mf.ISOLATIONS)},
        "status": {"enum": list(mf.RUN_STATUSES)},
        "files_status": {"enum": [*mf.FILES_STATUSES, None]},
        "wall_s": _OPT_NUMBER,
        "run_s": _OPT_NUMBER,
        "cell_time": {"type": ["object", "null"]},
        "events": {"type": ["integer", "null"]},
        "run": _OPT_STRING,
        "top_regions": {"type": "array", "items": _TOP_REGION},
        "notes": {"type": "array", "items": {"type": "string"}},
    },
}
_CELL = {
    "type": "object",
    "required": [
        "number",
        "index",
        "cell_id",
        "source_sha256",
        "first_line",
        "toggled",
        "profiled",
        "status",
        "wall_s",
        "execution_count",
        "error",
        "experiment",
    ],
    "properties": {
        "number": {"type": "integer", "minimum": 1},
        "index": {"type": "integer", "minimum": 0},
        "cell_id": _OPT_STRING,
        "source_sha256": {"type": "string"},
        "first_line": {"type": "string"},
        "toggled": {"type": "boolean"},
        "profiled": {"type": "boolean"},
        "status": {"enum": list(CELL_STATUSES)},
        "wall_s": _OPT_NUMBER,
        "execution_count": {"type": ["integer", "null"]},
        "error": {
            "type": ["object", "null"],
            "required": ["ename", "evalue", "traceback"],
            "properties": {
                "ename": {"type": "string"},
                "evalue": {"type": "string"},
                "traceback": {"type": "string"},
                "expected": {"type": "boolean"},
            },
        },
        "experiment": {"oneOf": [{"type": "null"}, _EXPERIMENT]},
        "repeats": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "judged_s": _OPT_NUMBER},
            },
        },
    },
}
_GATE_CELL = {
    "type": "object",
    "required": ["number", "cell_id", "matched_by", "verdict"],
    "properties": {
        "number": {"type": "integer"},
        "cell_id": _OPT_STRING,
        "matched_by": {"enum": ["cell_id", "source_sha256", "number", None]},
        "baseline": _OPT_STRING,
        "verdict": {"enum": ["regressed", "ok", "unmatched", "unreadable"]},
        "text": {"type": "string"},
        "basis": {"enum": ["time", "time_less_queued", "running", "running_normalised"]},
        "delta_pct": _OPT_NUMBER,
        # with running_normalised: this run's machine speed as a share of the baseline's
        "speed": _OPT_NUMBER,
        "functions": {"type": "array"},
    },
}
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "scorep-summary.json: one headless run of a notebook (jupyter scorep run)",
    "type": "object",
    "required": [
        "schema",
        "version",
        "notebook",
        "output",
        "kernel",
        "cwd",
        "experiment_dir",
        "options",
        "start",
        "end",
        "wall_s",
        "status",
        "exit_code",
        "cells",
    ],
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "version": {"const": SUMMARY_VERSION},
        "notebook": {"type": "string"},
        "output": _OPT_STRING,
        "kernel": {"type": "string"},
        "cwd": {"type": "string"},
        "experiment_dir": {"type": "string"},
        "options": {"type": "object"},
        "start": {"type": "string"},
        "end": {"type": "string"},
        "wall_s": _NUMBER,
        "status": {"enum": list(RUN_STATUSES)},
        "exit_code": {"type": "integer"},
        "message": {"type": "string"},
        "cells": {"type": "array", "items": _CELL},
        "gate": {
            "type": "object",
            "required": ["baseline", "threshold_pct", "verdict", "cells"],
            "properties": {
                "baseline": {"type": "string"},
                "threshold_pct": _NUMBER,
                "verdict": {"enum": ["pass", "fail", "no_baseline"]},
                "compared": {"type": "integer"},
                "reason": {"type": "string"},
                "noise": {"type": "string"},
                "cells": {"type": "array", "items": _GATE_CELL},
                "unmatched_baseline": {"type": "array"},
            },
        },
    },
}


def experiment_ref(path: str | os.PathLike, summary_dir: Path) -> str:
    """How the summary names an experiment: relative to the summary's directory when it
    lies inside it, else absolute."""
    path = Path(path).absolute()
    try:
        return str(path.relative_to(summary_dir.absolute()))
    except ValueError:
        return str(path)


def resolve_ref(ref: str, summary_dir: Path) -> Path:
    p = Path(ref)
    return p if p.is_absolute() else summary_dir / p


def write_summary(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


class SummaryError(Exception):
    """A file that is not a readable scorep-summary.json; the message says why."""


def read_summary(path: str | os.PathLike) -> dict[str, Any]:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SummaryError(f"cannot read {path}: {e.strerror}") from None
    except ValueError as e:
        raise SummaryError(f"{path} is not JSON ({e})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_ID:
        raise SummaryError(f"{path} is not a {SUMMARY_NAME} written by `jupyter scorep run`")
    if data.get("version") != SUMMARY_VERSION:
        raise SummaryError(
            f"{path} has version {data.get('version')!r}; this version reads {SUMMARY_VERSION}"
        )
    if not isinstance(data.get("cells"), list):
        raise SummaryError(f"{path} has no list of cells")
    return data


# --- the table ----------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.0f} ms"
    if s < 100:
        return f"{s:.2f} s"
    return f"{s:.0f} s"


def top_text(experiment: dict[str, Any] | None, limit: int = 3) -> str:
    if not experiment:
        return ""
    regions = experiment.get("top_regions") or []
    parts = [f"{r['name']} {fmt_seconds(r['excl_s'])} ({r['pct']:.0f}%)" for r in regions[:limit]]
    return ", ".join(parts)


def table_rows(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["cell", "status", "time", "measuring", "profiled", "top regions (exclusive time)"]
    rows = []
    shown: set[str] = set()
    for c in data["cells"]:
        e = c.get("experiment")
        how = f"{e['backend']}/{e['isolation']}" if e else ""
        if e and e.get("status") not in (None, mf.STATUS_OK):
            how += f" ({e['status']})"
        top = top_text(e)
        if e and e.get("run"):
            how += f" run {e['run']}"
        first = not (e and e["path"] in shown)
        if not first:  # a later cell of the same multi-cell run
            top = "(the run above)"
        if e:
            shown.add(e["path"])
        # a profiled cell's time is its experiment's (the cell's region, as the panel shows
        # it); what the measurement added is the rest of the cell's time in the client
        cell_s = e.get("wall_s") if e and first else None
        cost = ""
        if cell_s is not None and c.get("wall_s") is not None and first:
            cost = "+" + fmt_seconds(max(0.0, c["wall_s"] - cell_s))
        rows.append(
            [
                f"[{c['number']}]",
                c["status"] + (" (expected)" if (c.get("error") or {}).get("expected") else ""),
                fmt_seconds(cell_s if cell_s is not None else c.get("wall_s")),
                cost,
                how,
                top,
            ]
        )
    return header, rows


def render_table(data: dict[str, Any]) -> str:
    header, rows = table_rows(data)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = []
    for r in [header, *rows]:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    return "\n".join(lines)


def render_markdown_table(data: dict[str, Any]) -> str:
    header, rows = table_rows(data)
    esc = lambda v: v.replace("|", "\\|")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)
