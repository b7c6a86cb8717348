"""What a headless run leaves in scorep-summary.json: each cell's outcome and its
experiment's record (top regions from its call tree), the run's options and status; and
the experiments of cells stopped before they showed their bundle, found on disk."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorep_kernel import manifest as mf

from ..analysis import compare_noise
from . import cells as cellsel
from . import experiments as exps
from . import run_summary as hs
from .run_options import RunOptions


@dataclass
class CellRun:
    """What happened to one code cell."""

    code: cellsel.CodeCell
    toggled: bool
    status: str = hs.CELL_NOT_RUN
    wall_s: float | None = None
    execution_count: int | None = None
    error: dict[str, Any] | None = None
    experiment_paths: list[str] = field(default_factory=list)
    repeats: int = 1  # --repeat: how many times it ran (each its own experiment)


class RunResults:
    """What a run leaves in scorep-summary.json (held by ``execute.Runner``, which fills
    ``cells`` in as they run): the cells, their experiments, the options."""

    def __init__(
        self,
        opts: RunOptions,
        cells: list[CellRun],
        profiling: cellsel.Profiling,
        experiment_dir: Path,
        summary_path: Path,
        session: str,
        cwd: Path,
    ):
        self.opts = opts
        self.cells = cells
        self.profiling = profiling
        self.experiment_dir = experiment_dir
        self.summary_path = summary_path
        self.session = session
        self.cwd = cwd

    def options_record(self) -> dict[str, Any]:
        o = self.opts
        return {
            "profile": self.profiling.mode,
            "cells": o.cells,
            "backend": o.backend,
            "isolation": o.isolation,
            "experiment_dir": str(o.experiment_dir) if o.experiment_dir else None,
            "timeout_s": o.timeout,
            "allow_errors": o.allow_errors,
            "lab_settings": self.profiling.lab_settings,
        }

    def collect_files(self, start_ns: int) -> dict[Path, mf.Manifest | None]:
        """The manifests of the cells' experiments (those of cells stopped before they
        showed one found among the runs since ``start_ns``)."""
        self.find_unshown(start_ns)
        paths = [Path(p) for c in self.cells for p in c.experiment_paths]
        # the kernel is gone: whatever is still pending stays so
        return exps.wait_for_files(paths, 0)

    def find_unshown(self, start_ns: int) -> None:
        """A cell stopped at once (a second Ctrl-C) or killed with the kernel showed no
        bundle, but its experiment may be on disk: found by its cell id among this run's."""
        lost = [
            c
            for c in self.cells
            if not c.experiment_paths
            and c.status in (hs.CELL_INTERRUPTED, hs.CELL_DIED)
            and c.code.cell.get("id")
        ]
        if not lost:
            return
        parents = {self.experiment_dir}
        for c in self.cells:
            parents.update(Path(p).parent for p in c.experiment_paths)
        found = [
            (path, m)
            for parent in parents
            for path, m in mf.list_experiments(parent)
            if (m.get("start_ns") or 0) >= start_ns
        ]
        for c in lost:
            for path, m in found:
                if any(r.get("cell_id") == c.code.cell.id for r in m.get("cells") or []):
                    c.experiment_paths = [str(path)]
                    break

    def experiment_record(self, path: Path, manifest: mf.Manifest | None) -> dict[str, Any] | None:
        if not manifest:
            return None
        rec: dict[str, Any] = {
            "id": manifest["id"],
            "path": hs.experiment_ref(path, self.summary_path.parent),
            "backend": manifest.get("backend"),
            "isolation": manifest.get("isolation"),
            "status": manifest.get("status"),
            "files_status": manifest.get("files_status"),
            "wall_s": manifest.get("wall_s"),
            "run_s": manifest.get("run_s"),
            "cell_time": manifest.get("cell_time"),
            "events": (manifest.get("measurement") or {}).get("events"),
            "run": manifest.get("run"),
            "top_regions": [],
            "notes": [],
        }
        try:
            tree = exps.load_tree(path, manifest)
        except exps.NoCallTree as e:
            rec["notes"].append(str(e))
        else:
            from ..analysis import summary as server_summary

            rec["top_regions"] = server_summary.top_regions(tree, self.opts.top)
        return rec

    def build_summary(
        self,
        start: _dt.datetime,
        wall_s: float,
        status: str,
        message: str,
        manifests: dict[Path, mf.Manifest | None],
    ) -> dict[str, Any]:
        records: dict[str, dict[str, Any] | None] = {}
        cells = []
        for c in self.cells:
            exp = None
            repeats: list[dict[str, Any]] = []
            if c.experiment_paths:
                path = Path(c.experiment_paths[-1])
                if c.repeats > 1:  # --repeat: the best of the runs (the gate's basis)
                    timed = [(_judged_time(manifests.get(Path(p))), p) for p in c.experiment_paths]
                    repeats = [
                        {"path": hs.experiment_ref(p, self.summary_path.parent), "judged_s": j}
                        for j, p in timed
                    ]
                    known = [(j, p) for j, p in timed if j is not None]
                    if known:
                        path = Path(min(known)[1])
                if str(path) not in records:
                    records[str(path)] = self.experiment_record(path, manifests.get(path))
                exp = records[str(path)]
            cells.append(
                {
                    "number": c.code.number,
                    "index": c.code.index,
                    "cell_id": c.code.cell.get("id"),
                    "source_sha256": mf.source_hash(c.code.cell.source),
                    "first_line": cellsel.first_line(c.code.cell.source, 200),
                    "toggled": c.toggled,
                    "profiled": exp is not None,
                    "status": c.status,
                    "wall_s": None if c.wall_s is None else round(c.wall_s, 6),
                    "execution_count": c.execution_count,
                    "error": c.error,
                    "experiment": exp,
                    **({"repeats": repeats} if repeats else {}),
                }
            )
        data: dict[str, Any] = {
            "schema": hs.SCHEMA_ID,
            "version": hs.SUMMARY_VERSION,
            "notebook": self.session,
            "output": str(self.opts.output) if self.opts.output else None,
            "kernel": self.opts.kernel,
            "cwd": str(self.cwd),
            "experiment_dir": str(self.experiment_dir),
            "options": self.options_record(),
            "start": start.isoformat(),
            "end": _dt.datetime.now(_dt.timezone.utc).isoformat(),
            "wall_s": round(wall_s, 6),
            "status": status,
            "exit_code": hs.EXIT_CODES[status],
            "cells": cells,
        }
        if message:
            data["message"] = message
        return data


def _judged_time(manifest: mf.Manifest | None) -> float | None:
    """``compare_noise.judged_time``, None for a run whose manifest could not be read."""
    return compare_noise.judged_time(manifest) if manifest is not None else None
