"""The display_data a profiled cell shows: the experiment MIME bundle (docs/API.md) plus
``text/plain`` and ``text/html`` summaries for frontends without the extension."""

from __future__ import annotations

from typing import Any

from scorep_kernel import manifest as mf
from scorep_kernel.runs.display_text import Gist, html_text, plain_text, shown_path, top_functions

MIME_TYPE = "application/vnd.scorep.experiment+json"

_BACKEND_WORDS = {"builtin": "the builtin tracer", "scorep": "Score-P"}
_ISOLATION_WORDS = {"subprocess": "in a subprocess", "inprocess": "in the kernel"}
_STATUS_WORDS = {
    mf.STATUS_OK: "",
    mf.STATUS_ERROR: " The cell raised an exception.",
    mf.STATUS_INTERRUPTED: " The cell was interrupted.",
    mf.STATUS_CRASHED: " The profiling process died.",
    mf.STATUS_RUNNING: " Still running.",
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
    measured_s: float | None = None,
    open_tools: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``{mime: content}`` for one profiled cell. ``tool`` names what measured, with its
    version ("Score-P 8.4"), when known; ``measured_s`` is the exclusive time of every
    region on every thread, what the shares of ``top`` are of; ``open_tools`` the tools the
    panel opens the files in once they are ready ("vampir":
    %%enable_vampir_launch_on_scorep_instrumented)."""
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
        **({"open": list(open_tools)} if open_tools else {}),
        "summary": {
            "wall_s": wall_s,
            "events": events,
            "top": [[name, float(t)] for name, t in (top or [])],
            **({"measured_s": round(measured_s, 6)} if measured_s else {}),
            "message": message,
        },
    }
    gist = Gist(message, gist_rows(payload), shown_path(path), top_functions(top or [], measured_s))
    return {MIME_TYPE: payload, "text/plain": plain_text(gist), "text/html": html_text(gist)}


def gist_rows(payload: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The facts a bundle's text shows under its top functions, from the bundle itself."""
    summary = payload.get("summary") or {}
    wall_s, events = summary.get("wall_s"), summary.get("events")
    backend = str(payload.get("tool") or payload.get("backend"))
    where = _ISOLATION_WORDS.get(str(payload.get("isolation")), str(payload.get("isolation")))
    rows = [("backend", f"{backend}, {where}")]
    if payload.get("run") is not None:
        rows.append(("run", f"{payload['run']} (cell {int(payload['cell_index_in_run']) + 1})"))
    rows.append(("wall time", "" if wall_s is None else f"{wall_s:.3f} s"))
    if events is not None:
        rows.append(("events", f"{events:,}"))
    rows.append(("status", str(payload.get("status"))))
    return tuple(rows)
