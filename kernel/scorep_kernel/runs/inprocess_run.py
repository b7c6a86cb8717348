"""A profiled run inside the kernel (builtin backend only): the kernel executes the cell as
usual, and the builtin Measurement records it, told the file name IPython compiles this
cell to so that IPython's own machinery stays out of the trace."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from scorep_kernel import manifest as mf
from scorep_kernel.binding_args import run_instrumenter_file
from scorep_kernel.formats.recording import Recording
from scorep_kernel.measure.files import write_in_idle_thread
from scorep_kernel.measure.session import Halted, Measurement
from scorep_kernel.measure.top_regions import DisplaySummary, display_summary
from scorep_kernel.runs import files_process, inprocess_output
from scorep_kernel.runs.base import CellRequest, RunBase
from scorep_kernel.shim import preload_scorep_shim
from scorep_kernel.worker.shell import cell_code_filename

WRITING_FILES = "writing an in-process run's files"


async def _until_written(exp_dir: Path, written: asyncio.Event) -> None:
    """Wait for the thread that writes the files; when the kernel stops waiting (it shuts
    down before they are written), the manifest says so: never "pending" for ever."""
    try:
        await written.wait()
    except asyncio.CancelledError:
        mf.settle(
            exp_dir,
            "The kernel was shut down while this run's files were being written: they are "
            "missing or incomplete. Run the cell again.",
        )
        raise


class InprocessRun(RunBase):
    isolation = "inprocess"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.measurement: Measurement | None = None

    async def begin(self) -> None:
        self.create_experiment()
        try:
            with self.timed("measure_start"):
                config = self.measure
                preload_scorep_shim()
                if config.instrumenter_file:
                    run_instrumenter_file(config.instrumenter_file)
                self.measurement = Measurement(str(self.exp_dir), config)
                inprocess_output.prepare()  # its thread exists before tracing starts
                self.measurement.start()
        except Exception as e:
            self.fail_to_start(
                f"The builtin tracer could not start ({type(e).__name__}: {e}); the cell did "
                "not run. Profile it in a subprocess instead (isolation 'subprocess')."
            )
        self.measured = True

    async def run_cell(self, request: CellRequest) -> dict[str, Any]:
        shell = self.side.shell
        count = shell.execution_count
        index = self.add_cell(request.cell_id, count, request.code)
        self.note_cell_start(index, time.time_ns())
        start = time.perf_counter()
        try:
            assert self.measurement is not None
            filename = cell_code_filename(shell, request.code, count)
            with (
                self.measurement.cell(f"cell [{count}]", code_filename=filename),
                inprocess_output.BatchedStreams(shell),
            ):
                reply = await self.side.execute_stock(request)
        finally:
            self.add_time("cell", time.perf_counter() - start)
        self.last_cell_wall = time.perf_counter() - start
        self.last_cell_index = index
        if reply.get("status") == "error":
            self.note_status(
                mf.STATUS_INTERRUPTED
                if reply.get("ename") == "KeyboardInterrupt"
                else mf.STATUS_ERROR
            )
        return reply

    async def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        extra: mf.ManifestChanges = {}
        halted = recording = None
        if self.measurement is not None:
            try:
                halted = self.measurement.halt()
                if not self.side.panel_frontend:
                    # A frontend without the extension's panel shows the display's text:
                    # its events and top regions now, from the Recording built here.
                    recording = self.measurement.build(halted)
                    with self.timed("summary"):
                        self._note_summary(display_summary(recording))
                for phase, seconds in self.measurement.stop_timings.items():
                    self.add_time(phase, seconds)
                notes = recording.notes if recording is not None else {}
                extra["measurement"] = {
                    **notes,
                    "cell_time": dict(notes.get("cell_time") or halted.cell_time),
                }
            except Exception as e:
                self.errors.append(f"stopping the measurement failed: {type(e).__name__}: {e}")
                halted = recording = None
                extra["files_status"] = mf.FILES_FAILED
        self.finish_manifest(extra)
        bundle = self.bundle(self.last_cell_index, self.status, self.last_cell_wall)
        if halted is None:
            self.side.output.display(bundle)
            return
        # The panel reads the numbers from the server once the files are written: the
        # Recording is built after the reply, beside the next cell, by the process that
        # writes the files (runs.files_process), which updates this display's text.
        build = (lambda: recording) if recording is not None else None
        self.side.defer(lambda: self._build_and_write(halted, build))
        self.side.output.display(bundle, transient=self._display_id() if build is None else None)

    def _note_summary(self, summary: DisplaySummary) -> None:
        self.events, self.top, self.measured_s = summary.events, summary.top, summary.measured_s

    def _display_id(self) -> dict[str, str]:
        return {"display_id": f"scorep-{self.exp_id}"}

    def _show_summary(self, summary: DisplaySummary) -> None:
        """The display, now with the recording's events and top regions (in the loop)."""
        self._note_summary(summary)
        bundle = self.bundle(self.last_cell_index, self.status, self.last_cell_wall)
        self.side.output.display(bundle, transient=self._display_id(), update=True)

    def _build_and_write(self, halted: Halted, built: Callable[[], Recording] | None) -> None:
        """The files (and the Recording, unless ``built`` has it already), by a process of
        their own; the display is updated with its summary where it was built there."""
        assert self.measurement is not None and self.exp_dir is not None
        written = asyncio.Event()
        loop = asyncio.get_running_loop()
        measurement, exp_dir = self.measurement, self.exp_dir

        def in_loop(call: Callable[[], None]) -> None:  # from the writer's thread
            try:
                loop.call_soon_threadsafe(call)
            except RuntimeError:  # the loop closed: the kernel is gone, nobody waits
                pass

        def build() -> Recording:
            recording = measurement.build(halted)
            recording.notes["build_s"] = round(measurement.stop_timings["recording_build"], 6)
            # the machine's speed after the run is known now (Measurement.build)
            mf.update_manifest(exp_dir, cell_time=mf.cell_time_of(recording.notes["cell_time"]))
            return recording

        def show(summary: DisplaySummary) -> None:
            in_loop(lambda: self._show_summary(summary))

        make, say = (build, show) if built is None else (built, None)
        try:
            # A process of its own (the next cell keeps the interpreter lock to itself),
            # else a thread of the kernel.
            in_thread = partial(write_in_idle_thread, exp_dir, make)
            done = partial(in_loop, written.set)
            if files_process.write_in_child(exp_dir, make, say, done, in_thread) is None:
                in_thread(say, done)
        except Exception as e:
            mf.update_manifest(
                exp_dir,
                files_status=mf.FILES_FAILED,
                errors=[f"writing the experiment files failed: {type(e).__name__}: {e}"],
            )
            return
        # The kernel's shutdown waits for it (bounded) and says so if it was cut short.
        self.side.tasks.spawn(_until_written(exp_dir, written), WRITING_FILES)

    async def abort(self) -> None:
        self.mark_aborted()
        if self.measurement is not None:
            try:
                self.measurement.stop()
            except Exception:  # the run is being thrown away; its files will not be written
                pass
        self.finish_manifest_without_files()

    def kill(self) -> None:
        if self.measurement is not None and not self.finished:
            try:
                self.measurement.stop()
            except Exception:  # the kernel is going away
                pass
