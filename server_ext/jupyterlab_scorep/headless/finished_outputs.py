"""A profiled cell's text, written again once its files are: the gist with the panel's
summary (top functions by exclusive time with their share, the summary's verdicts).

The kernel shows its bundle when the cell ends, before the trace and profile are on disk,
so its ``text/plain`` and ``text/html`` hold what it knew then (scorep_kernel/runs/
display_text.py: no verdicts yet, no top functions under Score-P, which writes them as its
process exits). A headless run (``jupyter scorep run``, ``papermill --engine scorep``, our
nbconvert preprocessor) waits for the files before it writes the notebook, so it rewrites
those two texts from the finished experiment, read as ``jupyter scorep report`` reads it
(``experiments.read_experiment``: the server's call tree and summary code). The bundle's
JSON, which the panel reads, is left as the kernel wrote it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scorep_kernel import manifest as mf
from scorep_kernel.runs.display import MIME_TYPE, gist_rows
from scorep_kernel.runs.display_text import (
    TOP_SHOWN,
    Gist,
    TopFunction,
    html_text,
    plain_text,
    shown_path,
    top_functions,
)

from . import experiments as exps


def _finished_gist(payload: dict[str, Any], exp: exps.Experiment, base: Path) -> Gist:
    summary = exp.summary
    manifest = exp.manifest
    regions = summary.get("top_regions") or []
    if regions:
        top = tuple(
            TopFunction(str(r["name"]), float(r["excl_s"]), float(r["pct"]))
            for r in regions[:TOP_SHOWN]
        )
    else:  # no call tree could be read: what the kernel knew
        kernel = payload.get("summary") or {}
        top = top_functions([tuple(t) for t in kernel.get("top") or []], kernel.get("measured_s"))
    # a multi-cell run's earlier cells showed "running": say how the run ended
    facts = {**payload, "status": manifest.get("status", payload.get("status"))}
    message = str((payload.get("summary") or {}).get("message") or "")
    return Gist(
        message=message,
        rows=gist_rows(facts),
        path=shown_path(str(payload["path"]), str(base)),
        top=top,
        verdicts=tuple(str(v["text"]) for v in summary.get("verdicts") or []),
        notes=tuple(exp.notes),
    )


def finish_outputs(nb: Any, base: Path) -> int:
    """Rewrite the texts of every profiled cell's bundle in ``nb`` whose experiment's files
    are ready; paths are shown relative to ``base`` (the written notebook's folder) when
    they lie in it. Returns how many outputs were rewritten; a run that cannot be read
    keeps the kernel's text."""
    read: dict[str, exps.Experiment | None] = {}
    done = 0
    for cell in nb.cells:
        for output in cell.get("outputs") or []:
            if output.get("output_type") != "display_data":
                continue
            data = output.get("data") or {}
            payload = data.get(MIME_TYPE)
            if not isinstance(payload, dict) or not isinstance(payload.get("path"), str):
                continue
            path = payload["path"]
            if path not in read:
                read[path] = _read(Path(path))
            exp = read[path]
            if exp is None:
                continue
            gist = _finished_gist(payload, exp, base)
            data["text/plain"] = plain_text(gist)
            data["text/html"] = html_text(gist)
            done += 1
    return done


def _read(path: Path) -> exps.Experiment | None:
    try:
        if mf.read_manifest(path).get("files_status") != mf.FILES_READY:
            return None
        return exps.read_experiment(path, top=TOP_SHOWN)
    except Exception:  # an experiment that cannot be read: the kernel's text stays
        return None
