"""A cell's runs on disk: which experiments came from a notebook and cell (the manifests'
``notebook`` and ``cells[].cell_id``), the disk they use, where a run's cell begins in
its trace (to align two timelines), and which directories may be deleted.

File-system work only, called in threads by ``service``; the roots are checked before
anything is read (``paths.list_experiments``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf
from scorep_kernel import region_words as rw

from ..domain_errors import BadParameter, Conflict, OutsideRoots, ScorePError, Unprocessable
from ..paths import Roots, list_experiments
from ..trace.index_store import LoadedIndex
from . import compare_noise


def cell_ids(manifest: mf.Manifest) -> list[str]:
    """The JupyterLab cellIds of a run's cells (those the frontend sent)."""
    out = []
    for cell in manifest.get("cells") or []:
        cell_id = cell.get("cell_id")
        if isinstance(cell_id, str):
            out.append(cell_id)
    return out


def cell_record(manifest: mf.Manifest, cell: str) -> mf.CellRecord | None:
    for rec in manifest.get("cells") or []:
        if rec.get("cell_id") == cell:
            return rec
    return None


def of_notebook(manifest: mf.Manifest, notebook: str | None) -> bool:
    """Whether a run came from ``notebook`` (None or "": any notebook)."""
    return not notebook or manifest.get("notebook") == notebook


def disk_bytes(directory: str | os.PathLike) -> int:
    """Bytes the directory occupies on disk, as ``du -sB1`` counts them (allocated blocks
    of the directory, its files and subdirectories, the index included); symlinks are
    counted as links, never followed."""
    try:
        st = os.lstat(directory)
        total = st.st_blocks * 512
    except OSError:
        return 0
    stack = [str(directory)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += st.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    return total


def parents_for(roots: Roots, notebook: str | None, given: Path | None) -> list[str | Path]:
    """Where a notebook's runs lie: the given directory (and its scorep-experiments/), the
    notebook's own folder's scorep-experiments/ (a kernel's working directory is the
    notebook's folder), and the places GET experiments lists without ``dir``."""
    parents: list[str | Path] = []
    if given is not None:
        parents += [given / ex.DEFAULT_PARENT, given]
    if notebook:
        folder = os.path.dirname(notebook)
        try:
            parents.append(roots.resolve(folder or ".", "notebook") / ex.DEFAULT_PARENT)
        except ScorePError:
            pass  # a notebook outside the roots has no runs we may list
    parents += [*(f"{p}/{ex.DEFAULT_PARENT}" for p in roots.all), *roots.extra]
    return parents


def runs(
    roots: Roots, parents: Iterable[str | Path], notebook: str | None, cell: str | None
) -> dict[str, Any]:
    """GET experiments?notebook=&cell=: the cell's runs newest first, each with its disk
    use, and the disk used by all of the notebook's runs."""
    found = list_experiments(roots, parents)
    listed = []
    notebook_bytes = 0
    notebook_runs = 0
    for path, manifest in found:
        mine = bool(notebook) and manifest.get("notebook") == notebook
        if cell is None:
            wanted = mine
        else:
            # a run whose kernel did not know its notebook still belongs to its cell
            wanted = cell in cell_ids(manifest) and manifest.get("notebook") in (
                None,
                notebook or manifest.get("notebook"),
            )
        if not (mine or wanted):
            continue
        size = disk_bytes(path)
        if mine:
            notebook_bytes += size
            notebook_runs += 1
        if wanted:
            listed.append({"path": str(path), "manifest": manifest, "disk_bytes": size})
    return {
        "experiments": listed,
        "notebook": notebook or None,
        "cell": cell,
        "disk": {"notebook_bytes": notebook_bytes, "notebook_runs": notebook_runs},
    }


def same_source_walls(
    roots: Roots, exp: Path, manifest: mf.Manifest, limit: int = 20
) -> list[float]:
    """Wall times of the runs beside ``exp`` (same folder) of the same cells, source,
    backend and isolation that ended ok, newest first: the material for the noise."""
    cells = manifest.get("cells") or []
    key = [(c.get("cell_id"), c.get("source_sha256")) for c in cells if isinstance(c, dict)]
    if not key or any(cid is None or sha is None for cid, sha in key):
        return []
    walls = []
    for _path, m in list_experiments(roots, [exp.parent]):
        other = [(c.get("cell_id"), c.get("source_sha256")) for c in m.get("cells") or []]
        if (
            other == key
            and m.get("backend") == manifest.get("backend")
            and m.get("isolation") == manifest.get("isolation")
            and m.get("status") == mf.STATUS_OK
            and compare_noise.judged_time(m) is not None
        ):
            walls.append(float(compare_noise.judged_time(m) or 0.0))
            if len(walls) >= limit:
                break
    return walls


def cell_span(index: LoadedIndex) -> list[int] | None:
    """[first enter, last leave] of the run's cell regions in its trace (ns since the run's
    start), None when the trace has no cell region. Two runs' timelines align at their
    cells' start: Score-P's trace begins with the interpreter's start-up."""
    cells = [
        int(ref)
        for ref, info in index.regions.items()
        if info.get("role") == rw.ROLE_CELL
        or rw.is_cell_region(str(info.get("name")), str(info.get("group") or ""))
    ]
    if not cells:
        return None
    wanted = np.asarray(cells, np.int64)
    lo, hi = None, None
    for loc in index.locations:
        if not loc.get("calls"):
            continue
        i = loc["id"]
        ptr = index.array(f"L{i}.ptr")[0]
        start, end, region = (index.array(f"L{i}.{n}") for n in ("start", "end", "region"))
        for d in range(min(3, len(ptr) - 1)):  # a cell is a top-level call, or under one
            a, b = int(ptr[d]), int(ptr[d + 1])
            hit = np.flatnonzero(np.isin(region[a:b], wanted))
            if hit.size:
                s, e = int(start[a + hit[0]]), int(end[a:b][hit].max())
                lo = s if lo is None else min(lo, s)
                hi = e if hi is None else max(hi, e)
    return None if lo is None or hi is None else [lo, hi]


# What an experiment directory may hold: the contract's files, the server's index, the
# manifest's lock and temporary files, and what Score-P itself writes beside them.
_EXPERIMENT_NAMES = {
    ex.MANIFEST,
    ex.OTF2_ANCHOR,
    ex.OTF2_DEFS,
    ex.OTF2_EVENTS_DIR,
    ex.CUBEX,
    ex.METRICS_SCHEMA,
    ex.METRICS_DATA,
    ex.INDEX_DIR,
    ".manifest.lock",
    "MANIFEST.md",
    "scorep.cfg",
    "scorep.filter",
}
_EXPERIMENT_PREFIXES = (".manifest-",)


def deletable(roots: Roots, exp: Path, manifest: mf.Manifest, expected_id: str | None) -> None:
    """Raise unless ``exp`` (already resolved inside the roots, with a manifest) may be
    deleted: the request names its manifest's id, the run has ended, it is not a root,
    and it holds nothing but experiment files (an explicit SCOREP_EXPERIMENT_DIRECTORY
    may be a folder with the user's own files; it is never deleted)."""
    if not expected_id:
        raise BadParameter(
            "the id parameter is missing: pass the experiment's id (its manifest's 'id') "
            "to confirm which run to delete",
        )
    if manifest.get("id") != expected_id:
        raise Conflict(
            f"the experiment at this path is {manifest.get('id')!r}, not {expected_id!r}; "
            "reload the list of runs and confirm again",
            "Not that experiment",
        )
    if (
        manifest.get("status") == mf.STATUS_RUNNING
        or manifest.get("files_status") == mf.FILES_PENDING
    ):
        raise Conflict(
            "this run is still being measured or written; delete it once it has ended",
            "Still running",
        )
    if any(os.path.realpath(r) == str(exp) for r in roots.all):
        raise OutsideRoots("refusing to delete a configured root directory", "Outside the roots")
    try:
        names = os.listdir(exp)
    except OSError as e:
        raise Unprocessable(f"cannot list the experiment directory: {e.strerror}") from None
    strange = sorted(
        n for n in names if n not in _EXPERIMENT_NAMES and not n.startswith(_EXPERIMENT_PREFIXES)
    )
    if strange:
        shown = ", ".join(strange[:5]) + (" ..." if len(strange) > 5 else "")
        raise Conflict(
            f"the directory holds files that are not part of an experiment ({shown}); "
            "it is not deleted. Remove it by hand if it is what you mean.",
            "Not only an experiment",
        )


def delete(exp: Path) -> int:
    """Remove the experiment directory; the bytes freed. Symlinks inside are removed as
    links (shutil.rmtree never follows them)."""
    import shutil

    size = disk_bytes(exp)
    shutil.rmtree(exp)
    return size
