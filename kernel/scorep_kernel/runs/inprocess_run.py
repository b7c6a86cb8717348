"""A profiled run inside the kernel (builtin backend only): the kernel executes the cell as
usual, and the builtin Measurement records it, told the file name IPython compiles this
cell to so that IPython's own machinery stays out of the trace."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scorep_kernel import manifest as mf
from scorep_kernel.binding_args import run_instrumenter_file
from scorep_kernel.formats.recording import Recording
from scorep_kernel.measure.session import Measurement
from scorep_kernel.measure.top_regions import top_and_measured_or_empty
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
        recording = None
        if self.measurement is not None:
            try:
                recording = self.measurement.stop()
                for phase, seconds in self.measurement.stop_timings.items():
                    self.add_time(phase, seconds)
                self.events = recording.event_count
                with self.timed("summary"):
                    self.top, self.measured_s = top_and_measured_or_empty(recording)
                if recording.notes:
                    extra["measurement"] = dict(recording.notes)
            except Exception as e:
                self.errors.append(f"stopping the measurement failed: {type(e).__name__}: {e}")
                recording = None
                extra["files_status"] = mf.FILES_FAILED
        self.finish_manifest(extra)
        if recording is not None:
            # Written after the reply (runs.files_process), so as not to delay it.
            self.side.defer(lambda: self._write_files(recording))
        self.side.output.display(
            self.bundle(self.last_cell_index, self.status, self.last_cell_wall)
        )

    def _write_files(self, recording: Recording) -> None:
        assert self.measurement is not None and self.exp_dir is not None
        written = asyncio.Event()
        loop = asyncio.get_running_loop()

        def done() -> None:  # in the writer thread
            try:
                loop.call_soon_threadsafe(written.set)
            except RuntimeError:  # the loop closed: the kernel is gone, nobody waits
                pass

        try:
            # A process of its own (the next cell keeps the interpreter lock to itself),
            # else a thread at idle priority.
            measurement = self.measurement

            def in_a_thread(on_done: Callable[[], None] | None) -> None:
                measurement.write_files(recording, background=True, on_done=on_done)

            if files_process.write_in_child(self.exp_dir, recording, done, in_a_thread) is None:
                in_a_thread(done)
        except Exception as e:
            mf.update_manifest(
                self.exp_dir,
                files_status=mf.FILES_FAILED,
                errors=[f"writing the experiment files failed: {type(e).__name__}: {e}"],
            )
            return
        # The kernel's shutdown waits for it (bounded) and says so if it was cut short.
        self.side.tasks.spawn(_until_written(self.exp_dir, written), WRITING_FILES)

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
