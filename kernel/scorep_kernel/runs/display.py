"""The display_data a profiled cell shows: the experiment MIME bundle (docs/API.md) plus
``text/plain`` and ``text/html`` summaries for frontends without the extension."""

from __future__ import annotations

import html
from typing import Any

from scorep_kernel import experiment

MIME_TYPE = "application/vnd.scorep.experiment+json"

_BACKEND_WORDS = {"builtin": "the builtin tracer", "scorep": "Score-P"}
_ISOLATION_WORDS = {"subprocess": "in a subprocess", "inprocess": "in the kernel"}
_STATUS_WORDS = {
    experiment.STATUS_OK: "",
    experiment.STATUS_ERROR: " The cell raised an exception.",
    experiment.STATUS_INTERRUPTED: " The cell was interrupted.",
    experiment.STATUS_CRASHED: " The profiling process died.",
    experiment.STATUS_RUNNING: " Still running.",
}


def summary_message(
    backend: str, isolation: str, status: str, wall_s: float | None, events: int | None,
    measured: bool = True, tool: str | None = None,
) -> str:  # fmt: skip
    if not measured:
        head = f"Ran {_ISOLATION_WORDS.get(isolation, isolation)} without measurement"
    else:
        head = (
            f"Profiled with {tool or _BACKEND_WORDS.get(backend, backend)} "
            f"{_ISOLATION_WORDS.get(isolation, isolation)}"
        )
    parts = []
    if wall_s is not None:
        parts.append(f"{wall_s:.2f} s")
    if events is not None:
        parts.append(f"{events:,} events")
    text = head + (": " + ", ".join(parts) if parts else "") + "."
    return text + _STATUS_WORDS.get(status, f" Status: {status}.")


def experiment_bundle(
    *,
    exp_id: str,
    path: str,
    backend: str,
    isolation: str,
    status: str,
    wall_s: float | None,
    events: int | None,
    top: list[tuple[str, float]] | None = None,
    run: str | None = None,
    cell_index_in_run: int = 0,
    measured: bool = True,
    note: str | None = None,
    tool: str | None = None,
) -> dict[str, Any]:
    """``{mime: content}`` for one profiled cell. ``tool`` names what measured, with its
    version ("Score-P 8.4"), when known."""
    message = summary_message(backend, isolation, status, wall_s, events, measured, tool)
    if note:
        message += " " + note
    payload = {
        "id": exp_id,
        "path": path,
        "backend": backend,
        "isolation": isolation,
        "status": status,
        "run": run,
        "cell_index_in_run": cell_index_in_run,
        **({"tool": tool} if tool else {}),
        "summary": {
            "wall_s": wall_s,
            "events": events,
            "top": [[name, float(t)] for name, t in (top or [])],
            "message": message,
        },
    }
    rows = [
        ("backend", tool or backend),
        ("isolation", isolation),
        ("wall time", "" if wall_s is None else f"{wall_s:.3f} s"),
        ("events", "" if events is None else f"{events:,}"),
        ("status", status),
        ("path", path),
    ]
    if run is not None:
        rows.insert(2, ("run", f"{run} (cell {cell_index_in_run + 1})"))
    width = max(len(k) for k, _ in rows)
    plain = "\n".join([message] + [f"  {k.ljust(width)}  {v}" for k, v in rows])
    cells = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
        f"<td style='text-align:left'><code>{html.escape(str(v))}</code></td></tr>"
        for k, v in rows
    )
    html_text = (
        f"<div class='scorep-experiment-summary'><p>{html.escape(message)}</p>"
        f"<table>{cells}</table></div>"
    )
    return {MIME_TYPE: payload, "text/plain": plain, "text/html": html_text}
