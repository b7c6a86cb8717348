"""A profiled run inside the kernel (builtin backend only): the kernel executes the cell as
usual, and the builtin Measurement records it, told the file name IPython compiles this
cell to so that IPython's own machinery stays out of the trace."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from scorep_kernel.measure.top_regions import top_regions_or_empty
from scorep_kernel.runs.base import CellOutput, RunBase
from scorep_kernel.worker.shell import cell_code_filename


class InprocessRun(RunBase):
    isolation = "inprocess"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.measurement: Any = None
        # How to run work after the cell's reply is sent (the kernel's queue); the files are
        # written in a thread of the kernel's process, and that thread must not compete for
        # the interpreter lock with the reply's own way out.
        self.after_reply: Callable[[Callable[[], None]], None] = lambda call: call()

    def begin(self) -> None:
        self.create_experiment()
        try:
            from scorep_kernel.measure import MeasureConfig, Measurement
        except ImportError as e:
            self.errors.append(f"the builtin tracer is not installed ({e}); no measurement")
            return
        with self.timed("measure_start"):
            config = MeasureConfig.from_mapping(dict(self.settings.measure))
            self.measurement = Measurement(str(self.exp_dir), config)
            self.measurement.start()
        self.measured = True

    async def run_cell(
        self,
        shell: Any,
        execute: Callable[[], Awaitable[dict[str, Any]]],
        code: str,
        cell_id: str | None,
        execution_count: int,
    ) -> dict[str, Any]:
        """``execute`` runs the cell the stock way (ipykernel's do_execute)."""
        index = self.add_cell(cell_id, execution_count, code)
        start = time.perf_counter()
        try:
            if self.measurement is not None:
                filename = cell_code_filename(shell, code, shell.execution_count)
                with self.measurement.cell(f"cell [{execution_count}]", code_filename=filename):
                    reply = await execute()
            else:
                reply = await execute()
        finally:
            self.add_time("cell", time.perf_counter() - start)
        self.last_cell_wall = time.perf_counter() - start
        self.last_cell_index = index
        if reply.get("status") == "error":
            self.note_status(
                "interrupted" if reply.get("ename") == "KeyboardInterrupt" else "error"
            )
        return reply

    async def finish(self, output: CellOutput) -> None:
        if self.finished:
            return
        self.finished = True
        extra: dict[str, Any] = {}
        if self.measurement is not None:
            try:
                recording = self.measurement.stop()
                for phase, seconds in self.measurement.stop_timings.items():
                    self.add_time(phase, seconds)
                self.events = recording.event_count
                with self.timed("summary"):
                    self.top = top_regions_or_empty(recording)
                if recording.notes:
                    extra["measurement"] = dict(recording.notes)
            except Exception as e:
                self.errors.append(f"stopping the measurement failed: {type(e).__name__}: {e}")
                recording = None
                extra["files_status"] = "failed"
        else:
            recording = None
        self.finish_manifest(extra)
        if recording is not None:
            self.after_reply(lambda: self._write_files(recording))
        output.display(self.bundle(self.last_cell_index, self.status, self.last_cell_wall))

    def _write_files(self, recording: Any) -> None:
        try:
            self.measurement.write_files(recording, background=True)
        except Exception as e:
            from scorep_kernel import experiment

            experiment.update_manifest(
                self.exp_dir, files_status="failed",
                errors=[f"writing the experiment files failed: {type(e).__name__}: {e}"],
            )  # fmt: skip

    async def abort(self) -> None:
        self.mark_aborted()
        if self.measurement is not None:
            try:
                self.measurement.stop()
            except Exception:
                pass
        self.finish_manifest_without_files()
