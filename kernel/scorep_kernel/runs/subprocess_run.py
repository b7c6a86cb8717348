"""A profiled run in a worker process: send the namespace, relay outputs live, bring the
namespace back, and survive the worker's death with the kernel's namespace untouched."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Any, TypeVar

from scorep_kernel import manifest as mf
from scorep_kernel.runs import scorep_backend
from scorep_kernel.runs.base import (
    CellRequest,
    RunBase,
    cell_message,
    error_reply,
)
from scorep_kernel.runs.faults import UNCHANGED, RunFailed, describe_exit
from scorep_kernel.runs.relay import OutputRelay
from scorep_kernel.runs.run_files import ScorePRun, await_files
from scorep_kernel.runs.worker_recipe import WorkerRecipe
from scorep_kernel.settings import SettingsError
from scorep_kernel.state import transfer
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.client import WorkerProcess
from scorep_kernel.worker.protocol import ChannelClosed

log = logging.getLogger("scorep_kernel")
M = TypeVar("M", bound=msg.Message)

# After an interrupt, how long the cell may take to stop before its process is killed.
INTERRUPT_GRACE_S = 3.0
# How long stopping the measurement (not writing the files) may take: building the
# recording of a capped run (millions of events) takes seconds, never minutes.
STOP_TIMEOUT_S = 600.0


class WorkerDied(RunFailed):
    ename = "ProfilingProcessDied"


class SubprocessRun(RunBase):
    isolation = "subprocess"
    forwards_sigint = True
    holds_worker = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.recipe = WorkerRecipe(
            self.backend, dict(self.scorep_env), list(self.binding_args),
            self.settings.experiment_parent,
        )  # fmt: skip
        self.worker: WorkerProcess | None = None
        self.relay: OutputRelay | None = None  # while a cell runs
        self.interrupted_at: float | None = None
        self.killed_after_interrupt = False  # the cell ignored an interrupt: its process was killed
        self._escalation: asyncio.Task[None] | None = None
        self.in_cell = False
        self.interrupt_requested = False
        self.metrics: scorep_backend.WorkerMetrics | None = None  # Score-P runs: sampled here
        self.python_threads: dict[str, str] = {}  # Score-P runs: native id -> thread name
        self._scorep_lines_out = scorep_backend.ScorePLinesOut()  # Score-P runs' stderr

    async def begin(self) -> None:
        pool = self.side.pool
        t0 = time.perf_counter()
        self.worker, _spare = await pool.take(self.recipe, os.getcwd())
        self.worker.on_native_output = self._native_output
        transfer.allow_reader(self.worker.pid)
        try:
            ready = await self.worker.wait_ready()
            # How the worker came: a spare that was ready, one still starting, or a new one.
            self.add_time(f"worker_{pool.last_take}", time.perf_counter() - t0)
        except (ChannelClosed, asyncio.TimeoutError):
            code = await self.worker.wait_exit(2.0)
            raise WorkerDied(
                describe_exit(code, while_doing="while starting") + self._last_words()
            ) from None
        if self.backend == "scorep":
            # Score-P's measurement starts at StartRun (worker.scorep_first_pass) and makes
            # the directory itself: named now, at the cell, and written into after.
            reserved = self.worker.reserved
            if reserved is None:
                reserved = self.worker.reserved = await self._reserve_or_close()
            exp_dir = reserved[1]
        else:
            await self._create_experiment_or_close(None)
            assert self.exp_dir is not None
            exp_dir = self.exp_dir
        sent = time.monotonic()
        await self.worker.send(
            msg.StartRun(
                exp_dir=str(exp_dir),
                measure=self.measure if ready.measure else None,
                env={"SCOREP_EXPERIMENT_DIRECTORY": str(exp_dir)},
            )
        )
        started = await self._recv_until(msg.RunStarted)
        self._add_stamps(
            sent,
            started.stamps,
            (
                ("received", "start_run_wait"),  # the worker finishing its preload imports
                ("started", "measure_start"),
            ),
        )
        if self.backend == "scorep":
            await self._create_experiment_or_close(reserved)
        self.measured = started.measured
        # the cell runs in the worker from here: the kernel is idle, the next spare is made
        pool.while_running(self.recipe, os.getcwd())
        if started.error:
            self.errors.append(f"measurement could not start: {started.error}")
        if self.backend == "scorep":
            interval = self.settings.measure.metric_interval_s
            self.metrics = scorep_backend.WorkerMetrics(self.worker.pid, interval)

    async def _reserve_or_close(self) -> tuple[str, Path]:
        assert self.worker is not None
        try:
            return self.recipe.reserve_for_run()
        except SettingsError:
            await self.worker.close(graceful=False)
            self.finished = True
            raise

    async def _create_experiment_or_close(self, reserved: tuple[str, Path] | None) -> None:
        assert self.worker is not None
        try:
            # the worker writes the files (or Score-P does, as it exits): it is a writer
            self.create_experiment(reserved, writer_pids=[self.worker.pid])
        except SettingsError:
            await self.worker.close(graceful=False)
            self.finished = True
            raise

    def _add_stamps(
        self, sent: float, stamps: dict[str, float], phases: tuple[tuple[str, str], ...]
    ) -> None:
        """Split a round trip (sent -> now, time.monotonic) at the worker's stamps: one phase
        per stamp (the time since the previous one, in the order the stamps were taken: a
        worker that stopped measuring at its last cell's end reads FinishRun after it), and
        the rest is "messages"."""
        now = time.monotonic()
        last = sent
        taken = [(stamps.get(stamp), phase) for stamp, phase in phases]
        for at, phase in sorted(
            ((at, phase) for at, phase in taken if isinstance(at, (int, float))),
            key=lambda pair: pair[0],
        ):
            if last <= at <= now:
                self.add_time(phase, at - last)
                last = at
        self.add_time("messages", now - last)

    def _native_output(self, name: str, text: str) -> None:
        if name == "stderr" and self.backend == "scorep":
            text = self._scorep_lines_out.feed(text)
            if not text:
                return
        if self.relay is not None:
            self.relay.output.stream(name, text)
        else:
            log.info("profiling worker %s: %s", name, text.rstrip())

    async def _recv_until(self, kind: type[M], timeout: float | None = 60.0) -> M:
        assert self.worker is not None
        try:
            return await self.worker.recv_until(kind, timeout)
        except (ChannelClosed, asyncio.TimeoutError):
            where = f"while waiting for {kind.kind()}"
            raise WorkerDied(await self._death_message(where)) from None

    async def _death_message(self, while_doing: str = "") -> str:
        assert self.worker is not None
        code = await self.worker.wait_exit(5.0)
        if code is None:  # alive but silent: do not leave it running
            self.worker.kill()
            code = await self.worker.wait_exit(5.0)
        return describe_exit(code, while_doing=while_doing) + self._last_words()

    def _last_words(self) -> str:
        """What the dead worker wrote last, and what Score-P's messages in it mean."""
        assert self.worker is not None
        tail = "\n".join(self.worker.stderr_tail).strip()
        said = "\n".join(self._explained())
        return (f"\n{said}" if said else "") + (f"\nIts last words:\n{tail}" if tail else "")

    def _explained(self) -> list[str]:
        if self.backend != "scorep" or self.worker is None:
            return []
        lines = [*self.worker.scorep_lines, *self.worker.stderr_tail]
        return scorep_backend.explain(lines, self.recipe.env(dict(os.environ)))

    def tool(self) -> str | None:
        if self.backend != "scorep":
            return None
        return f"Score-P {scorep_backend.version()}".strip()

    def manifest_scorep_env(self) -> dict[str, str]:
        if self.backend != "scorep":
            return super().manifest_scorep_env()
        env = self.recipe.env(dict(os.environ))
        return {k: v for k, v in env.items() if k.startswith("SCOREP_")}

    # --- interrupts ------------------------------------------------------------------

    def interrupt(self) -> None:
        """SIGINT reached the kernel: pass it on while the cell runs (and kill the worker if
        the cell does not stop in time: native code that never checks for signals); before
        the cell started, cancel it."""
        self.interrupt_requested = True
        if self.worker is None or not self.in_cell:
            return
        self.worker.interrupt()
        if self.interrupted_at is None:
            self.interrupted_at = time.monotonic()
            self._escalation = asyncio.ensure_future(self._kill_if_stuck())

    @property
    def awaiting_input(self) -> bool:
        return self.relay is not None and self.relay.awaiting_input

    async def _kill_if_stuck(self) -> None:
        await asyncio.sleep(INTERRUPT_GRACE_S)
        if self.worker is not None and self.worker.alive():
            log.warning("profiled cell ignored the interrupt; killing its process")
            self.killed_after_interrupt = True
            self.worker.kill()

    def kill(self) -> None:
        if self.worker is not None:
            self.worker.kill()

    # --- one cell ------------------------------------------------------------------

    async def run_cell(self, request: CellRequest) -> dict[str, Any]:
        shell = self.side.shell
        count = shell.execution_count
        reply, result = await self._run_in_worker(request, count)
        if request.store_history and not request.silent:
            try:
                shell.history_manager.store_inputs(count, request.code, request.code)
            except Exception:  # history is a convenience; the cell's result stands
                log.debug("could not store the cell's input", exc_info=True)
            shell.execution_count += 1
            if result is not None:
                try:  # Out[n], _, __, ___ as a plain cell leaves them
                    shell.displayhook.update_user_ns(result)
                except Exception:
                    log.debug("could not store the cell's result", exc_info=True)
        return reply

    async def _run_in_worker(self, request: CellRequest, count: int) -> tuple[dict[str, Any], Any]:
        """The cell in the worker: (reply, the value of its last expression or None)."""
        assert self.worker is not None
        output = self.side.output
        shell = self.side.shell
        self.interrupted_at = None
        self.killed_after_interrupt = False
        with self.timed("pack"):
            # What cannot be sent stays here; in the worker a placeholder explains itself
            # if the cell uses it (no warning for what the cell may never touch).
            packet = transfer.pack(shell.user_ns, self.settings.state_transport)
        index = self.add_cell(request.cell_id, count, request.code)
        cell_start = time.perf_counter()
        self.last_cell_index, self.last_cell_wall = index, 0.0
        if self.interrupt_requested:  # the user interrupted while the worker was starting
            packet.release()
            self.interrupt_requested = False
            self.note_status(mf.STATUS_INTERRUPTED)
            text = "KeyboardInterrupt: interrupted before the profiled cell started"
            output.error("KeyboardInterrupt", "", [text])
            return error_reply("KeyboardInterrupt", "", [text], count), None
        read_input = self.side.read_input if request.allow_stdin else None
        self.relay = OutputRelay(self.worker, output, packet, read_input, self.side.import_ahead)
        try:
            self.in_cell = True
            sent = time.monotonic()
            await self.worker.send(cell_message(request, count, packet.header, shell))
            done = await self.relay.until_done()
            self._add_stamps(sent, done.stamps, (
                ("received", "to_worker"),
                ("unpacked", "worker_unpack"),
                ("applied", "worker_apply"),
                ("cell_end", "cell"),
                ("packed", "worker_pack"),
            ))  # fmt: skip
        except ChannelClosed:
            packet.release()
            message = await self._death_message()
            return await self._crashed(message, count, index, cell_start), None
        finally:
            self.relay = None
            self.in_cell = False
            self.interrupt_requested = False
            if self._escalation is not None:
                self._escalation.cancel()
                self._escalation = None
        packet.release()
        self.side.worker_imported(done.imported)
        began = done.stamps.get("cell_begin")
        if isinstance(began, float):  # the worker's CLOCK_MONOTONIC, shared on one host
            self.note_cell_start(index, time.time_ns() - int((time.monotonic() - began) * 1e9))
        # The cell ended in the worker (ok, error or interrupt): its state comes back, as
        # IPython keeps state as of the point a cell stopped.
        if done.state is None:  # the cell never ran: nothing to bring back
            self.note_status(mf.STATUS_ERROR)
            return error_reply(done.ename, done.evalue, done.traceback, count), None
        try:
            with self.timed("unpack"):
                unpacked = transfer.unpack(done.state)
        except Exception as e:  # e.g. the worker died before the kernel copied its buffers
            message = (
                f"The namespace could not be brought back from the profiling process "
                f"({type(e).__name__}: {e}). {UNCHANGED}"
            )
            return await self._crashed(message, count, index, cell_start), None
        try:
            await self.worker.send(msg.StateReceived())
        except ChannelClosed:
            pass
        with self.timed("apply"):
            result, lost = transfer.apply_in_kernel(
                shell.user_ns, unpacked, packet, origin=f"cell [{count}]"
            )
        said = transfer.lost_words(lost)
        if said:  # in words, once, in this cell's bundle (its summary message)
            self.cell_notes.append(said)
        if done.interrupted:
            status = mf.STATUS_INTERRUPTED
        elif done.status == "error":  # the worker's CellDone word, not the manifest's
            status = mf.STATUS_ERROR
        else:
            status = mf.STATUS_OK
        self.note_status(status)
        # The cell's own run time as the worker measured it (without the transfers).
        self.last_cell_wall = float(done.wall_s or (time.perf_counter() - cell_start))
        if status == mf.STATUS_OK:
            ok = {
                "status": "ok",
                "execution_count": count,
                "user_expressions": {},
                "payload": list(done.payload),  # the pager's text, as a plain cell's reply
            }
            return ok, result
        interrupted = status == mf.STATUS_INTERRUPTED
        ename = "KeyboardInterrupt" if interrupted else (done.ename or "Error")
        return error_reply(ename, done.evalue, done.traceback, count), result

    async def _crashed(
        self, message: str, execution_count: int, index: int, cell_start: float
    ) -> dict[str, Any]:
        if self.killed_after_interrupt:
            message = (
                f"The profiled cell did not stop within {INTERRUPT_GRACE_S:.0f} s of the "
                f"interrupt, so its process was killed. {message}"
            )
        self.note_status(mf.STATUS_CRASHED)
        self.errors.append(message)
        self.last_cell_wall = time.perf_counter() - cell_start
        self.finished = True
        self._write_metrics()  # what the run did until it died
        self.finish_manifest_without_files()
        output = self.side.output
        output.display(self.bundle(index, mf.STATUS_CRASHED, self.last_cell_wall))
        output.error(WorkerDied.ename, message, [message])
        if self.worker is not None:
            await self.worker.close(graceful=False)
        return error_reply(WorkerDied.ename, message, [message], execution_count)

    # --- end of the run ------------------------------------------------------------

    async def finish(self) -> None:
        """Stop measuring, record how the run ended, show the bundle; the files are written
        by the worker after this returns (files_status "pending" until then)."""
        if self.finished:
            return
        self.finished = True
        worker = self.worker
        assert worker is not None
        extra: mf.ManifestChanges = {}
        try:
            sent = time.monotonic()
            await worker.send(msg.FinishRun())
            stopped = await self._recv_until(msg.RunStopped, STOP_TIMEOUT_S)
            self._add_stamps(sent, stopped.stamps, (
                ("received", "to_worker"),
                ("stopped", "measure_stop"),
                ("summarized", "summary"),
            ))  # fmt: skip
            whole = self.timings.pop("measure_stop", None)
            if whole is not None:  # split as the worker's clock saw it, keeping the sum
                tracer = min(whole, float(stopped.stop_timings.get("tracer_stop") or 0.0))
                self.add_time("tracer_stop", tracer)
                self.add_time("recording_build", whole - tracer)
            self.events = stopped.events
            self.top = list(stopped.top)
            self.measured_s = stopped.measured_s
            if stopped.error:
                self.errors.append(f"stopping the measurement failed: {stopped.error}")
            notes = dict(stopped.notes)
            # Score-P's runs: the Python threads, to name Score-P's locations (run_files)
            self.python_threads = dict(notes.pop("python_threads", None) or {})
            if notes:
                extra["measurement"] = notes
        except (ChannelClosed, WorkerDied) as e:
            message = e.message if isinstance(e, WorkerDied) else str(e)
            self.note_status(mf.STATUS_CRASHED)
            self.errors.append(
                f"The profiling process died while stopping the measurement: {message}"
            )
            extra = {"files_status": mf.FILES_FAILED}
        self._write_metrics()
        self.finish_manifest(extra)
        self.side.output.display(
            self.bundle(self.last_cell_index, self.status, self.last_cell_wall)
        )
        assert self.exp_dir is not None
        scorep = None
        if self.backend == "scorep":
            scorep = ScorePRun(self.python_threads, self.tool(), self.cuda, self._explained)
        self.side.tasks.spawn(
            await_files(self.exp_dir, worker, scorep), "waiting for a run's files"
        )

    def _write_metrics(self) -> None:
        """The kernel's samples of a Score-P worker (the builtin tracer writes its own)."""
        if self.metrics is None or self.exp_dir is None:
            return
        try:
            files = self.metrics.stop_and_write(self.exp_dir)
            mf.update_manifest(self.exp_dir, files=files)
        except Exception as e:  # the run's result stands without its charts
            self.errors.append(f"writing the metric samples failed: {type(e).__name__}: {e}")

    async def abort(self) -> None:
        self._write_metrics()
        self.mark_aborted()
        if self.worker is not None:
            await self.worker.close(graceful=False)
        self.finish_manifest_without_files()
