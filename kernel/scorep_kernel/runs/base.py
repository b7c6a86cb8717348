"""What every profiled run does, whatever runs the cells: the experiment directory, the
manifest (written first as "running", rewritten at the end), and the display bundle.

A run covers one cell, or several in multi-cell mode; ``subprocess_run`` and
``inprocess_run`` execute the cells.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from scorep_kernel import experiment
from scorep_kernel.runs.display import experiment_bundle
from scorep_kernel.settings import CellSettings


class CellOutput(Protocol):
    """The kernel's side of publishing for the current cell (see kernel.py)."""

    def stream(self, name: str, text: str) -> None: ...
    def display(self, data: dict, metadata: dict | None = None, transient: dict | None = None,
                update: bool = False) -> None: ...  # fmt: skip
    def execute_result(self, execution_count: int, data: dict, metadata: dict) -> None: ...
    def clear_output(self, wait: bool) -> None: ...
    def error(self, ename: str, evalue: str, traceback: list[str]) -> None: ...


def error_reply(ename: str, evalue: str, traceback: list[str], execution_count: int) -> dict:
    return {
        "status": "error",
        "ename": ename,
        "evalue": evalue,
        "traceback": traceback,
        "execution_count": execution_count,
        "user_expressions": {},
        "payload": [],
    }


def experiment_location(scorep_env: dict[str, str]) -> str | None:
    """The user's SCOREP_EXPERIMENT_DIRECTORY (%%scorep_env first, then the environment)."""
    return scorep_env.get("SCOREP_EXPERIMENT_DIRECTORY") or os.environ.get(
        "SCOREP_EXPERIMENT_DIRECTORY"
    ) or None  # fmt: skip


def experiment_parent(parent: str | None) -> Path:
    """Where run directories go: the user's choice (absolute, or relative to the kernel's
    working directory), else ``<cwd>/scorep-experiments``."""
    if parent:
        return Path(parent).expanduser().absolute()
    return experiment.default_parent().absolute()


def reserve_experiment(scorep_env: dict[str, str], parent: str | None = None) -> tuple[str, Path]:
    """An (id, path) not yet created: Score-P must be told its directory when its process
    starts, and creates it itself."""
    exp_id = experiment.new_experiment_id()
    explicit = experiment_location(scorep_env)
    if explicit:
        return exp_id, Path(explicit).expanduser().absolute()
    return exp_id, experiment_parent(parent) / exp_id


class RunBase:
    isolation = "subprocess"

    def __init__(self, settings: CellSettings, scorep_env: dict[str, str], binding_args: list[str]):
        self.settings = settings
        self.backend = settings.backend
        self.run_id = settings.run
        self.scorep_env = dict(scorep_env)
        self.binding_args = list(binding_args)
        self.exp_id: str | None = None
        self.exp_dir: Path | None = None
        self.cells: list[dict[str, Any]] = []
        self.start_ns = 0
        self.t0 = 0.0
        self.measured = False
        self.events: int | None = None
        self.top: list[tuple[str, float]] = []
        self.errors: list[str] = []
        self.status = "ok"  # worst so far: ok < error < interrupted < crashed
        self.finished = False
        # the latest cell: its index in the run and its own run time (for the bundle)
        self.last_cell_index = 0
        self.last_cell_wall: float | None = None
        # Where a profiled cell's time goes, phase -> seconds (summed over the run's cells);
        # the phases follow one another, so their sum is the cell's time in the kernel.
        self.timings: dict[str, float] = {}

    # --- the overhead's parts --------------------------------------------------------

    def add_time(self, phase: str, seconds: float) -> None:
        self.timings[phase] = self.timings.get(phase, 0.0) + max(0.0, seconds)

    @contextlib.contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add_time(phase, time.perf_counter() - start)

    # --- experiment directory and manifest -----------------------------------------

    def create_experiment(self, reserved: tuple[str, Path] | None = None) -> None:
        with self.timed("manifest"):
            self._create_experiment(reserved)

    def _create_experiment(self, reserved: tuple[str, Path] | None) -> None:
        if reserved is not None:
            self.exp_id, self.exp_dir = reserved
            self.exp_dir.mkdir(parents=True, exist_ok=True)
        elif experiment_location(self.scorep_env) or not self.settings.experiment_parent:
            self.exp_id, self.exp_dir = experiment.create_experiment_dir(
                explicit=experiment_location(self.scorep_env)
            )
        else:
            self.exp_id, self.exp_dir = reserve_experiment({}, self.settings.experiment_parent)
            self.exp_dir.mkdir(parents=True, exist_ok=False)
        self.start_ns = time.time_ns()
        self.t0 = time.perf_counter()
        manifest = experiment.new_manifest(
            self.exp_id,
            backend=self.backend,
            isolation=self.isolation,
            cells=[],
            scorep_env={k: v for k, v in self.scorep_env.items() if k.startswith("SCOREP_")},
            binding_args=self.binding_args if self.backend == "scorep" else [],
            start_ns=self.start_ns,
        )
        if self.run_id is not None:
            manifest["run"] = self.run_id
        experiment.write_manifest(self.exp_dir, manifest)

    def add_cell(self, cell_id: str | None, execution_count: int, code: str) -> int:
        self.cells.append({"cell_id": cell_id, "execution_count": execution_count, "code": code})
        with self.timed("manifest"):
            experiment.update_manifest(self.exp_dir, cells=list(self.cells))
        return len(self.cells) - 1

    def note_status(self, status: str) -> None:
        order = ("ok", "error", "interrupted", "crashed")
        if order.index(status) > order.index(self.status):
            self.status = status

    def finish_manifest(self, extra: dict[str, Any] | None = None) -> None:
        changes: dict[str, Any] = {
            "status": self.status,
            "end_ns": time.time_ns(),
            "wall_s": round(time.perf_counter() - self.t0, 6),
            "errors": list(self.errors),
            "timings": {k: round(v, 6) for k, v in self.timings.items()},
        }
        if not self.measured:
            changes["files_status"] = "unavailable"
            changes["measurement"] = {
                "note": "No measurement: the tracer for this backend is not installed; the "
                "cells ran without being measured."
            }
        changes.update(extra or {})
        experiment.update_manifest(self.exp_dir, **changes)
        self.errors = []

    def finish_manifest_without_files(self) -> None:
        """The run ended with no files to come (aborted, or its process died)."""
        self.finish_manifest({"files_status": "failed" if self.measured else "unavailable"})

    def mark_aborted(self) -> None:
        self.finished = True
        self.note_status("interrupted")
        self.errors.append("The multi-cell run was aborted (%%abort_multicellmode).")

    def bundle(self, cell_index: int, status: str, wall_s: float | None, note: str | None = None):
        return experiment_bundle(
            exp_id=self.exp_id or "",
            path=str(self.exp_dir),
            backend=self.backend,
            isolation=self.isolation,
            status=status,
            wall_s=wall_s,
            events=self.events,
            top=self.top,
            run=self.run_id,
            cell_index_in_run=cell_index,
            measured=self.measured,
            note=note,
        )
