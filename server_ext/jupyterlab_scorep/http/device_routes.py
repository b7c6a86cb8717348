"""The service's side of the accelerator views: GET device, GET link, the device part of
GET summary, and POST import (a torch.profiler trace from outside the notebook)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf

from ..analysis import device_analysis
from ..domain_errors import BadParameter, NotFound, Unreadable
from ..paths import Roots
from .experiment_reads import ExperimentReads

IMPORT_TIMEOUT_S = 600
TRACE_SUFFIXES = (".json", ".json.gz")


async def analysis_of(
    reads: ExperimentReads, exp: Path, manifest: mf.Manifest
) -> dict[str, Any] | None:
    """``device_analysis.analyze`` of the experiment's trace, once per index build."""
    from ..trace import device_read

    index = await reads.index(exp, manifest)
    key = "device_analysis"
    found = getattr(index, "_derived", {}).get(key)  # (LoadedIndex.cached's store)
    if found is not None:
        return found or None
    if not any(loc.get("kind") == "gpu" for loc in index.locations):
        return index.cached(key, lambda _index: {}) or None
    records = await reads.in_worker(
        "the device records of the OTF2 trace",
        device_read.read_device_records,
        str(exp / ex.OTF2_ANCHOR),
    )
    analysis = await reads.compute("the device analysis", device_analysis.analyze, index, records)
    return index.cached(key, lambda _index: analysis or {}) or None


async def answer(reads: ExperimentReads, path: str | None) -> dict[str, Any]:
    """GET device (docs/API.md): 404 for a run without device streams."""
    exp, manifest = await reads.open(path)
    analysis = await analysis_of(reads, exp, manifest)
    if analysis is None:
        raise NotFound(device_absent_message(manifest))
    return device_analysis.public(analysis)


async def link(
    reads: ExperimentReads, path: str | None, location: int | None, start: int | None
) -> dict[str, Any]:
    """GET link: the other ends of the launch links of one span."""
    if location is None or start is None:
        raise BadParameter(
            "GET link needs location= (a location id) and start= (the span's start, ns)"
        )
    exp, manifest = await reads.open(path)
    analysis = await analysis_of(reads, exp, manifest)
    if analysis is None:
        return {"links": []}
    index = await reads.index(exp, manifest)
    if not 0 <= location < len(index.locations):
        raise BadParameter(f"location={location} is not a location of this trace")
    host = index.locations[location].get("kind") != "gpu"
    return {"links": device_analysis.links_of(analysis, location, start, host)}


def _note(manifest: mf.Manifest, key: str) -> Mapping[str, object]:
    """The measurement's note ``key`` (an object, {} when there is none)."""
    return cast("Mapping[str, object]", (manifest.get("measurement") or {}).get(key) or {})


def device_absent_message(manifest: mf.Manifest) -> str:
    """Why a run has no device lanes, in words, with what to do."""
    accel = _note(manifest, "accelerator")
    cuda = _note(manifest, "cuda")
    if cuda.get("message"):
        return str(cuda["message"])
    if accel.get("error"):
        return str(accel["error"])
    if accel.get("activities") == ["cpu"]:
        return ("torch.profiler recorded the CPU only: torch.cuda.is_available() was false "
                "in the process that ran the cell, so there is no device activity.")  # fmt: skip
    return ("This run has no device streams: the cell used no GPU through PyTorch (or the "
            "accelerators setting was off).")  # fmt: skip


async def summary_part(
    reads: ExperimentReads, exp: Path, manifest: mf.Manifest
) -> tuple[dict | None, list[dict]]:
    """The ``device`` section and verdict of GET summary, or the panel's word that Score-P
    could not record the device; never fails the summary."""
    verdicts: list[dict] = []
    cuda = _note(manifest, "cuda")
    if cuda.get("message") and not cuda.get("enabled"):
        verdicts.append({"kind": "gpu", "level": "info", "text": cuda["message"], "numbers": {}})
    try:
        analysis = await analysis_of(reads, exp, manifest)
    except Exception:
        return None, verdicts
    if analysis is None:
        return None, verdicts
    body = device_analysis.public(analysis)
    return body, [body["verdict"], *verdicts]


def import_trace(roots: Roots, trace: str | None) -> dict[str, Any]:
    """POST import: a torch.profiler trace (``export_chrome_trace`` or
    tensorboard_trace_handler's ``*.pt.trace.json``) inside the roots becomes an experiment
    in ``scorep-experiments/`` beside it. The kernel's package converts it in a process of
    its own (the experiment directory is the seam between the two)."""
    if not trace:
        raise BadParameter(
            "POST import needs trace= (a torch.profiler trace, relative to the server root)"
        )
    path = roots.resolve(trace, "trace")
    if not path.is_file():
        raise NotFound(f"{trace} is not a file: give the path of a *.pt.trace.json")
    if not str(path).endswith(TRACE_SUFFIXES):
        raise BadParameter(f"{trace} is not a torch.profiler trace (*.json or *.json.gz)")
    parent = path.parent / ex.DEFAULT_PARENT
    cmd = [sys.executable, "-m", "scorep_kernel.accel.import_trace", str(path), str(parent)]
    try:
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    except subprocess.TimeoutExpired:
        raise Unreadable(
            f"reading {trace} took over {IMPORT_TIMEOUT_S} s; it is too large to import"
        ) from None
    if done.returncode != 0:
        message = (done.stderr.strip().splitlines() or ["the converter failed"])[-1]
        raise Unreadable(message)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"path": result["path"], "manifest": mf.read_manifest(result["path"])}
