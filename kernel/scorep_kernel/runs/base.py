"""What every profiled run does, whatever runs the cells: the experiment directory, the
manifest (written first as "running", rewritten at the end), and the display bundle; and
the one interface the kernel drives both kinds of run through.

A run covers one cell, or several in multi-cell mode; ``subprocess_run`` and
``inprocess_run`` execute the cells. The kernel only calls ``begin``, ``run_cell``,
``finish``, ``abort``, ``interrupt`` and ``kill``; what a run needs of the kernel it asks
through ``KernelSide``, given at construction.
"""

from __future__ import annotations

import abc
import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

from scorep_kernel import experiment
from scorep_kernel import manifest as mf
from scorep_kernel.binding_args import parse as binding_args_of
from scorep_kernel.measure.measure_config import MeasureConfig
from scorep_kernel.runs import named_directory
from scorep_kernel.runs.display import experiment_bundle
from scorep_kernel.runs.faults import RunFailed
from scorep_kernel.settings import CellSettings, SettingsError
from scorep_kernel.worker import protocol as msg

if TYPE_CHECKING:
    from scorep_kernel.background import BackgroundTasks
    from scorep_kernel.mpi.kept_ranks import KeptRanks
    from scorep_kernel.worker.pool import WorkerPool


class CellOutput(Protocol):
    """The kernel's side of publishing for the current cell (see kernel.py)."""

    def stream(self, name: str, text: str) -> None: ...
    def display(self, data: dict, metadata: dict | None = None, transient: dict | None = None,
                update: bool = False) -> None: ...  # fmt: skip
    def execute_result(self, execution_count: int, data: dict, metadata: dict) -> None: ...
    def clear_output(self, wait: bool) -> None: ...
    def error(self, ename: str, evalue: str, traceback: list[str]) -> None: ...


class KernelSide(Protocol):
    """What a run uses of the kernel (kernel.py implements it)."""

    @property
    def shell(self) -> Any: ...  # the kernel's InteractiveShell
    @property
    def output(self) -> CellOutput: ...
    @property
    def pool(self) -> WorkerPool: ...
    @property
    def tasks(self) -> BackgroundTasks: ...
    @property
    def kept_ranks(self) -> KeptRanks: ...  # MPI ranks kept up between cells
    @property
    def panel_frontend(self) -> bool: ...  # the extension's panel shows the experiments

    def defer(self, call: Callable[[], None]) -> None:
        """Run ``call`` once the current cell's reply is sent."""

    def execute_stock(self, request: CellRequest) -> Awaitable[dict[str, Any]]:
        """Run the cell the stock way (ipykernel's do_execute), in the kernel."""

    def read_input(self, prompt: str, password: bool) -> str:
        """Ask the notebook for input (blocking, as ipykernel's input() does)."""

    def worker_imported(self, modules: list[str]) -> None:
        """A worker's cell imported these modules (the next spare preloads them)."""

    def import_ahead(self, module: str) -> None:
        """A worker's cell began importing this package: import it in the kernel too, in
        the background (worker/import_watch.py says why)."""


@dataclass(frozen=True)
class CellRequest:
    """One execute_request for a profiled cell, as the run needs it."""

    code: str
    cell_id: str | None = None
    silent: bool = False
    store_history: bool = True
    allow_stdin: bool = False
    user_expressions: dict[str, Any] | None = None
    last: bool = True  # the run ends with this cell
    # ipykernel's do_execute arguments, for running the cell the stock way
    stock_args: dict[str, Any] = field(default_factory=dict)


def cell_message(request: CellRequest, count: int, state: bytes, shell: Any) -> msg.Cell:
    """The worker protocol's Cell for this request: what a worker (or an MPI rank) runs
    as ``cell [count]``, with the namespace ``state`` and the kernel's traceback colours."""
    return msg.Cell(
        code=request.code,
        label=f"cell [{count}]",
        execution_count=count,
        cell_id=request.cell_id,
        state=state,
        colors=getattr(shell, "colors", None),
        last=request.last,
    )


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
    starts, and creates it itself. A parent chosen for the cell (experiment_dir, from the
    cell, the JupyterLab settings or %scorep) wins over SCOREP_EXPERIMENT_DIRECTORY
    (%%scorep_env or the environment), which names the directory itself, as in Score-P:
    the run is written beside it and the name points at the newest run (named_directory)."""
    exp_id = experiment.new_experiment_id()
    explicit = experiment_location(scorep_env)
    if explicit and not parent:
        named = Path(explicit).expanduser().absolute()
        return exp_id, named_directory.run_directory(named, exp_id)
    return exp_id, experiment_parent(parent) / exp_id


class RunBase(abc.ABC):
    isolation: ClassVar[str] = "subprocess"
    # SIGINT during this run goes to the run (its worker), not to the kernel's own handler
    forwards_sigint: ClassVar[bool] = False
    # the run holds a worker process of its own while it is open
    holds_worker: ClassVar[bool] = False

    def __init__(
        self,
        settings: CellSettings,
        scorep_env: dict[str, str],
        binding_args: list[str],
        side: KernelSide,
    ):
        self.side = side
        self.settings = settings
        self.backend = settings.backend
        self.run_id = settings.run
        self.scorep_env = dict(scorep_env)
        if settings.filter_file and self.backend == "scorep":
            # the cell's filter (e.g. the one the panel suggested) over %%scorep_env's
            self.scorep_env["SCOREP_FILTERING_FILE"] = str(
                Path(settings.filter_file).expanduser().absolute()
            )
        self.cuda: dict[str, Any] | None = None  # Score-P's CUDA adapter (accel.scorep_cuda)
        if self.backend == "scorep":
            from scorep_kernel.accel import scorep_cuda

            wanted = settings.measure.accelerators
            self.scorep_env, choice = scorep_cuda.choose(self.scorep_env, wanted)
            self.cuda = dict(choice)
        self.binding_args = list(binding_args)
        if self.backend == "scorep" and settings.measure.io == "posix":
            # what Score-P 8.4 needs for its POSIX I/O adapter: both of these
            self.scorep_env.setdefault("SCOREP_IO_POSIX", "true")
            if not any(a.startswith("--io=") for a in self.binding_args):
                self.binding_args.append("--io=runtime:posix")
        self.binding = binding_args_of(self.binding_args)
        # the measurement's settings: the cell's, and what the binding arguments say
        self.measure: MeasureConfig = self.binding.measure(settings.measure, self.backend)
        self.exp_id: str | None = None
        self.exp_dir: Path | None = None
        self.cells: list[mf.CellRecord] = []
        self.start_ns = 0
        self.t0 = 0.0
        self.measured = False
        self.events: int | None = None
        self.top: list[tuple[str, float]] = []
        self.measured_s: float | None = None  # what the shares of ``top`` are of
        self.errors: list[str] = []
        self.status = mf.STATUS_OK  # the worst so far (manifest.ENDED_STATUSES order)
        self.finished = False
        # the latest cell: its index in the run and its own run time (for the bundle)
        self.last_cell_index = 0
        self.last_cell_wall: float | None = None
        # Sentences for the latest cell's bundle (what it could not bring back, a directory
        # moved aside): said once, in words, in that cell's output.
        self.cell_notes: list[str] = []
        # Where a profiled cell's time goes, phase -> seconds (summed over the run's cells);
        # the phases follow one another, so their sum is the cell's time in the kernel.
        self.timings: dict[str, float] = {}

    # --- the interface the kernel drives ------------------------------------------

    @abc.abstractmethod
    async def begin(self) -> None:
        """Set up before the run's first cell (experiment directory, worker, tracer)."""

    @abc.abstractmethod
    async def run_cell(self, request: CellRequest) -> dict[str, Any]:
        """Run one cell; returns the execute_reply content."""

    @abc.abstractmethod
    async def finish(self) -> None:
        """Stop measuring, show the bundle; the files follow in the background."""

    @abc.abstractmethod
    async def abort(self) -> None:
        """End the run without files (%%abort_multicellmode)."""

    def interrupt(self) -> None:  # noqa: B027 (most runs let the kernel's own handler act)
        """SIGINT reached the kernel while this run had it (``forwards_sigint``)."""

    @property
    def awaiting_input(self) -> bool:
        """The kernel's loop is blocked in an input request for this run's cell."""
        return False

    def kill(self) -> None:  # noqa: B027
        """The kernel shuts down: stop at once whatever the run started."""

    def tool(self) -> str | None:
        """What measures this run, with its version when known ("Score-P 8.4")."""
        return None

    def manifest_scorep_env(self) -> dict[str, str]:
        """The SCOREP_* variables the manifest records as this run's configuration."""
        return {k: v for k, v in self.scorep_env.items() if k.startswith("SCOREP_")}

    def running_bundle(self) -> dict[str, Any]:
        """The bundle a cell of a run that stays open shows."""
        return self.bundle(self.last_cell_index, mf.STATUS_RUNNING, self.last_cell_wall)

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

    def create_experiment(
        self, reserved: tuple[str, Path] | None = None, writer_pids: list[int] | None = None
    ) -> None:
        """Make the run's experiment directory and write its first manifest; a directory
        that cannot be made is a SettingsError naming it and the setting to change.
        ``writer_pids``: the processes besides the kernel that will say how the run ended
        (the manifest's "writers")."""
        with self.timed("manifest"):
            try:
                self._create_experiment(reserved, writer_pids)
            except OSError as e:
                where = e.filename or self.settings.experiment_parent or "the directory"
                raise SettingsError(
                    f"The experiment directory cannot be made at {where} "
                    f"({e.strerror or type(e).__name__}). Choose a writable directory: the "
                    "cell's metadata 'experiment_dir', the JupyterLab setting 'Experiment "
                    "directory', or SCOREP_EXPERIMENT_DIRECTORY (%%scorep_env)."
                ) from None

    def _create_experiment(
        self, reserved: tuple[str, Path] | None, writer_pids: list[int] | None
    ) -> None:
        if reserved is not None:  # Score-P made it when its process started
            self.exp_id, self.exp_dir = reserved
            self.exp_dir.mkdir(parents=True, exist_ok=True)
        else:
            self.exp_id, self.exp_dir = reserve_experiment(
                self.scorep_env, self.settings.experiment_parent
            )
            self.exp_dir.mkdir(parents=True)
        # SCOREP_EXPERIMENT_DIRECTORY now points at this run (what it held moved aside)
        moved = named_directory.point_at(self.exp_dir, self.exp_id, self.scorep_env)
        if moved:
            self.cell_notes.append(moved)
        self.start_ns = time.time_ns()
        self.t0 = time.perf_counter()
        not_applicable = (
            list(self.binding.not_applicable)
            if self.backend == "builtin" and self.binding.not_applicable
            else None
        )
        manifest = mf.new_manifest(
            self.exp_id,
            backend=self.backend,
            isolation=self.isolation,
            cells=[],
            scorep_env=self.manifest_scorep_env(),
            notebook=os.environ.get("JPY_SESSION_NAME") or None,
            binding_args=self.binding_args,
            start_ns=self.start_ns,
            writer_pids=writer_pids,
            run=self.run_id,
            binding_args_not_applicable=not_applicable,
        )
        if not_applicable:
            self.cell_notes.append(
                "Not applicable under the builtin tracer (Score-P's own options): "
                + " ".join(self.binding.not_applicable)
                + "."
            )
        mf.write_manifest(self.exp_dir, manifest)

    def note_cell_start(self, index: int, epoch_ns: int) -> None:
        """When the cell's own region began (epoch ns): where a trace that carries no wall
        clock (Score-P's) starts, for placing the kernel's metric samples on it."""
        self.cells[index]["start_ns"] = int(epoch_ns)

    def add_cell(self, cell_id: str | None, execution_count: int, code: str) -> int:
        if self.cells:  # what begin() noted belongs to the first cell
            self.cell_notes = []
        self.cells.append(mf.cell_record(cell_id, execution_count, code))
        assert self.exp_dir is not None  # begin() made it before any cell
        with self.timed("manifest"):
            mf.update_manifest(self.exp_dir, cells=list(self.cells))
        return len(self.cells) - 1

    def note_status(self, status: str) -> None:
        self.status = mf.worse_status(self.status, status)

    def cell_time(self, notes: Mapping[str, object] | None) -> mf.CellTimeRecord | None:
        """The measured cells' time from the measurement's notes (manifest.cell_time_record);
        the last cell's time becomes the one the display shows."""
        ct = (notes or {}).get("cell_time")
        if not isinstance(ct, dict) or not isinstance(ct.get("time_s"), (int, float)):
            return None
        if ct.get("cells"):
            self.last_cell_wall = float(ct["cells"][-1])
        return cast(mf.CellTimeRecord, ct)  # cell_time_record's, through the worker

    def finish_manifest(self, extra: mf.ManifestChanges | None = None) -> None:
        elapsed = round(time.perf_counter() - self.t0, 6)
        cell_time = self.cell_time((extra or {}).get("measurement"))
        changes: mf.ManifestChanges = {
            "status": self.status,
            "end_ns": time.time_ns(),
            # one definition of the cells' time (manifest.py); the run's own beside it
            "wall_s": cell_time["time_s"] if cell_time else elapsed,
            "run_s": elapsed,
            "errors": list(self.errors),
            "timings": {k: round(v, 6) for k, v in self.timings.items()},
            "cells": list(self.cells),  # with each cell's start, known once it ran
        }
        if cell_time:
            changes["cell_time"] = mf.cell_time_of(cell_time)
        if not self.measured:
            changes["files_status"] = mf.FILES_UNAVAILABLE
            changes["measurement"] = {
                "note": "No measurement: the cells ran without being measured (the errors say why)."
            }
        changes.update(extra or {})
        assert self.exp_dir is not None  # only runs whose experiment was made get here
        mf.update_manifest(self.exp_dir, **changes)
        self.errors = []

    def finish_manifest_without_files(self) -> None:
        """The run ended with no files to come (aborted, or its process died)."""
        self.finish_manifest(
            {"files_status": mf.FILES_FAILED if self.measured else mf.FILES_UNAVAILABLE}
        )

    def fail_to_start(self, message: str) -> None:
        """``begin`` could not set the run up: record why in the manifest, raise RunFailed."""
        self.finished = True
        self.note_status(mf.STATUS_ERROR)
        self.errors.append(message)
        if self.exp_dir is not None:
            self.finish_manifest({"files_status": mf.FILES_UNAVAILABLE})
        raise RunFailed(message)

    def mark_aborted(self) -> None:
        self.finished = True
        self.note_status(mf.STATUS_INTERRUPTED)
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
            note=" ".join(n for n in (note, *self.cell_notes) if n) or None,
            tool=self.tool(),
            measured_s=self.measured_s,
            open_tools=self.settings.open_tools,
        )
