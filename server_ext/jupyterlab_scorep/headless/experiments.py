"""An experiment read without a server: its manifest, call tree and summary, by the same
code the server's routes use (``calltree``, ``index_store``, ``summary``)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf

from ..analysis import summary
from ..trace import calltree, index_store
from ..trace.calltree import CallTree

# How often the files' status is looked at while the kernel finishes them.
POLL_S = 0.1
# The display_data of a profiled cell (docs/API.md, "MIME bundle")
MIME = "application/vnd.scorep.experiment+json"


def bundles(cell: Any) -> list[dict[str, Any]]:
    """The experiment bundles among a cell's outputs, in order."""
    out = []
    for o in cell.get("outputs", []):
        if o.get("output_type") != "display_data":
            continue
        payload = (o.get("data") or {}).get(MIME)
        if isinstance(payload, dict) and isinstance(payload.get("path"), str):
            out.append(payload)
    return out


def wait_for_files(
    paths: Iterable[Path],
    timeout: float,
    stop: Callable[[], bool] = lambda: False,
) -> dict[Path, mf.Manifest | None]:
    """Wait until no experiment's ``files_status`` is "pending" (the kernel writes trace
    and profile after the cell's reply), at most ``timeout`` seconds or until ``stop()``.
    Returns each experiment's last manifest (None where none can be read)."""
    deadline = time.monotonic() + timeout
    manifests: dict[Path, mf.Manifest | None] = {}
    waiting = list(dict.fromkeys(Path(p) for p in paths))
    while True:
        still = []
        for path in waiting:
            try:
                manifest = manifests[path] = mf.read_manifest(path)
            except ex.ExperimentError:
                manifests[path] = None
                continue
            if manifest.get("files_status") == mf.FILES_PENDING:
                still.append(path)
        waiting = still
        if not waiting or time.monotonic() >= deadline or stop():
            return manifests
        time.sleep(POLL_S)


def experiment_files(exp: Path) -> dict[str, bool]:
    return {
        "otf2": (exp / ex.OTF2_ANCHOR).is_file(),
        "cubex": (exp / ex.CUBEX).is_file(),
        "metrics": (exp / ex.METRICS_SCHEMA).is_file() and (exp / ex.METRICS_DATA).is_file(),
    }


class NoCallTree(Exception):
    """An experiment with no readable profile or trace; the message says why."""


def load_tree(exp: str | os.PathLike, manifest: mf.Manifest | None = None) -> CallTree:
    """The call tree of an experiment: from profile.cubex, else from the trace's index
    (built into ``<experiment>/.index/`` as the server builds it)."""
    exp = Path(exp)
    manifest = manifest if manifest is not None else mf.read_manifest(exp)
    if manifest.get("files_status") == mf.FILES_PENDING:
        raise NoCallTree(
            f"{exp} is still being written (files_status 'pending'): wait for the kernel to "
            "finish the run's files"
        )
    files = experiment_files(exp)
    problems = []
    if files["cubex"]:
        try:
            return calltree.from_cubex(exp / ex.CUBEX)
        except calltree.ProfileReadError as e:
            problems.append(str(e))
    if files["otf2"]:
        try:
            index = index_store.LoadedIndex(index_store.ensure_index(str(exp)))
            return calltree.from_index(index)
        except Exception as e:  # whatever a damaged trace makes the reader raise
            problems.append(f"the OTF2 trace cannot be read ({type(e).__name__}: {e})")
    if not problems:
        problems.append(
            f"it has neither {ex.CUBEX} nor {ex.OTF2_ANCHOR} "
            f"(files_status {manifest.get('files_status')!r})"
        )
    raise NoCallTree(f"no call tree for {exp}: " + "; ".join(problems))


@dataclass
class Experiment:
    """One experiment, read: manifest, call tree (or why there is none) and the server's
    summary of it (wall time, top regions, verdicts)."""

    path: Path
    manifest: mf.Manifest
    tree: CallTree | None
    summary: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def read_experiment(exp: str | os.PathLike, top: int = 10) -> Experiment:
    """Everything ``report`` and the summary need; raises ExperimentError for a directory
    that is no experiment."""
    path = Path(exp).absolute()
    manifest = mf.read_manifest(path)
    notes: list[str] = []
    tree: CallTree | None = None
    try:
        tree = load_tree(path, manifest)
    except NoCallTree as e:
        notes.append(str(e))
    samples = None
    if experiment_files(path)["metrics"]:
        try:
            samples = ex.read_metrics(path)
        except ex.ExperimentError as e:
            notes.append(f"No metrics: {e}")
    result = summary.summarize(manifest, tree, samples, trace_notes=notes)
    if top != 10:
        result["top_regions"] = summary.top_regions(tree, top)
    return Experiment(path, manifest, tree, result, notes)
