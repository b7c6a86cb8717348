"""A profiled run in a worker process: send the namespace, relay outputs live, bring the
namespace back, and survive the worker's death with the kernel's namespace untouched."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from scorep_kernel import experiment
from scorep_kernel.runs.base import (
    CellOutput,
    RunBase,
    error_reply,
    experiment_parent,
    reserve_experiment,
)
from scorep_kernel.runs.faults import UNCHANGED, describe_exit
from scorep_kernel.state import transfer
from scorep_kernel.worker.client import WorkerKey, WorkerPool, WorkerProcess
from scorep_kernel.worker.protocol import ChannelClosed

log = logging.getLogger("scorep_kernel")

# After an interrupt, how long the cell may take to stop before its process is killed.
INTERRUPT_GRACE_S = 3.0
# How long stopping the measurement (not writing the files) may take: building the
# recording of a capped run (millions of events) takes seconds, never minutes.
STOP_TIMEOUT_S = 600.0


class WorkerDied(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class SubprocessRun(RunBase):
    isolation = "subprocess"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.worker: WorkerProcess | None = None
        self.output: CellOutput | None = None
        self.interrupted_at: float | None = None
        self.killed_after_interrupt = False  # the cell ignored an interrupt: its process was killed
        self._escalation: asyncio.Task | None = None
        self.used_spare = False
        self.in_cell = False
        self.interrupt_requested = False
        # set by the kernel for each cell: (prompt, password) -> text, or None without stdin
        self.read_input: Any = None
        self.awaiting_input = False
        self.last_result: Any = None  # the last cell's result, for Out / _
        self.imported: list[str] = []  # modules the cells imported in the worker, in order
        # set by the kernel before each cell: the run ends with it (the worker stops
        # measuring as soon as it has sent the namespace back)
        self.last_cell = False

    def key(self) -> WorkerKey:
        if self.backend != "scorep":
            return WorkerKey(self.backend, (), ())
        # Score-P fixes its environment, arguments and experiment directory at start.
        env = tuple(sorted(self.scorep_env.items()))
        parent = str(experiment_parent(self.settings.experiment_parent))
        return WorkerKey(self.backend, env, tuple(self.binding_args), exp_parent=parent)

    def worker_env(self, base: dict[str, str]) -> dict[str, str]:
        env = dict(base)
        env.update(self.scorep_env)
        return env

    async def begin(self, pool: WorkerPool, base_env: dict[str, str], cwd: str) -> None:
        reserved = (
            reserve_experiment(self.scorep_env, self.settings.experiment_parent)
            if self.backend == "scorep"
            else None
        )
        t0 = time.perf_counter()
        self.worker, self.used_spare = await pool.take(
            self.key(), self.worker_env(base_env), cwd, reserved
        )
        self.worker.on_native_output = self._native_output
        transfer.allow_reader(self.worker.pid)
        try:
            ready = await self.worker.wait_ready()
            # How the worker came: a spare that was ready, one still starting, or a new one.
            self.add_time(f"worker_{pool.last_take}", time.perf_counter() - t0)
        except (ChannelClosed, asyncio.TimeoutError):
            code = await self.worker.wait_exit(2.0)
            tail = "\n".join(self.worker.stderr_tail)
            raise WorkerDied(
                describe_exit(code, while_doing="while starting")
                + (f"\nIts last words:\n{tail}" if tail else "")
            ) from None
        self.create_experiment(self.worker.reserved)
        env = {"SCOREP_EXPERIMENT_DIRECTORY": str(self.exp_dir)}
        sent = time.monotonic()
        await self.worker.send(
            "start_run",
            {
                "exp_dir": str(self.exp_dir),
                "measure": self.settings.measure if ready.get("measure") else None,
                "env": env,
            },
        )
        started = await self._recv_until("run_started")
        self._add_stamps(
            sent,
            started.get("stamps"),
            (
                ("received", "start_run_wait"),  # the worker finishing its preload imports
                ("started", "measure_start"),
            ),
        )
        self.measured = bool(started.get("measured"))
        if started.get("error"):
            self.errors.append(f"measurement could not start: {started['error']}")

    def _add_stamps(self, sent: float, stamps: dict[str, float] | None,
                    phases: tuple[tuple[str, str], ...]) -> None:  # fmt: skip
        """Split a round trip (sent -> now, time.monotonic) at the worker's stamps: one phase
        per stamp (the time since the previous one), and the rest is "messages"."""
        now = time.monotonic()
        last = sent
        for stamp, phase in phases:
            at = (stamps or {}).get(stamp)
            if isinstance(at, (int, float)) and last <= at <= now:
                self.add_time(phase, at - last)
                last = at
        self.add_time("messages", now - last)

    def _native_output(self, name: str, text: str) -> None:
        if self.output is not None:
            self.output.stream(name, text)
        else:
            log.info("profiling worker %s: %s", name, text.rstrip())

    async def _recv_until(self, kind: str, timeout: float | None = 60.0) -> dict[str, Any]:
        assert self.worker is not None
        try:
            return await self.worker.recv_until(kind, timeout)
        except (ChannelClosed, asyncio.TimeoutError):
            raise WorkerDied(await self._death_message(f"while waiting for {kind}")) from None

    async def _death_message(self, while_doing: str = "") -> str:
        assert self.worker is not None
        code = await self.worker.wait_exit(5.0)
        if code is None:  # alive but silent: do not leave it running
            self.worker.kill()
            code = await self.worker.wait_exit(5.0)
        return describe_exit(code, while_doing=while_doing)

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

    async def _kill_if_stuck(self) -> None:
        await asyncio.sleep(INTERRUPT_GRACE_S)
        if self.worker is not None and self.worker.alive():
            log.warning("profiled cell ignored the interrupt; killing its process")
            self.killed_after_interrupt = True
            self.worker.kill()

    # --- one cell ------------------------------------------------------------------

    async def run_cell(
        self, shell: Any, output: CellOutput, code: str, cell_id: str | None, execution_count: int
    ) -> dict[str, Any]:
        assert self.worker is not None
        self.output = output
        self.interrupted_at = None
        self.killed_after_interrupt = False
        self.last_result = None
        with self.timed("pack"):
            packet = transfer.pack(shell.user_ns)
        for name, reason in packet.skipped.items():
            output.stream(
                "stderr",
                f"Warning: {name!r} cannot be sent to the profiling process ({reason}); it "
                f"keeps its value here, but using it in this profiled cell raises an error.\n",
            )
        index = self.add_cell(cell_id, execution_count, code)
        cell_start = time.perf_counter()
        self.last_cell_index, self.last_cell_wall = index, 0.0
        if self.interrupt_requested:  # the user interrupted while the worker was starting
            packet.release()
            self.interrupt_requested = False
            self.note_status("interrupted")
            text = "KeyboardInterrupt: interrupted before the profiled cell started"
            output.error("KeyboardInterrupt", "", [text])
            return error_reply("KeyboardInterrupt", "", [text], execution_count)
        try:
            self.in_cell = True
            sent = time.monotonic()
            await self.worker.send(
                "cell",
                {
                    "code": code,
                    "label": f"cell [{execution_count}]",
                    "execution_count": execution_count,
                    "cell_id": cell_id,
                    "state": packet.header,
                    "colors": getattr(shell, "colors", None),
                    "last": self.last_cell,
                },
            )
            done = await self._relay(output, packet)
            self._add_stamps(sent, done.get("stamps"), (
                ("received", "to_worker"),
                ("unpacked", "worker_unpack"),
                ("applied", "worker_apply"),
                ("cell_end", "cell"),
                ("packed", "worker_pack"),
            ))  # fmt: skip
        except (ChannelClosed, WorkerDied) as e:
            packet.release()
            message = e.message if isinstance(e, WorkerDied) else await self._death_message()
            return await self._crashed(output, message, execution_count, index, cell_start)
        finally:
            self.in_cell = False
            self.interrupt_requested = False
            if self._escalation is not None:
                self._escalation.cancel()
                self._escalation = None
        packet.release()
        self.imported.extend(done.get("imported") or [])
        # The cell ended in the worker (ok, error or interrupt): its state comes back, as
        # IPython keeps state as of the point a cell stopped.
        if done.get("state") is None:  # the cell never ran: nothing to bring back
            self.note_status("error")
            return error_reply(done["ename"], done["evalue"], done["traceback"], execution_count)
        try:
            with self.timed("unpack"):
                unpacked = transfer.unpack(done["state"])
        except Exception as e:  # e.g. the worker died before the kernel copied its buffers
            message = (f"The namespace could not be brought back from the profiling process "
                       f"({type(e).__name__}: {e}). {UNCHANGED}")  # fmt: skip
            return await self._crashed(output, message, execution_count, index, cell_start)
        try:
            await self.worker.send("state_received")
        except ChannelClosed:
            pass
        with self.timed("apply"):
            self.last_result = transfer.apply_in_kernel(shell.user_ns, unpacked, packet)
        for name, reason in (done.get("skipped") or {}).items():
            if name not in packet.skipped and name != transfer.RESULT_NAME:
                output.stream(
                    "stderr",
                    f"Warning: {name!r} was made in the profiled cell but cannot be brought "
                    f"back to the notebook ({reason}).\n",
                )
        if done.get("interrupted"):
            status = "interrupted"
        elif done["status"] == "error":
            status = "error"
        else:
            status = "ok"
        self.note_status(status)
        # The cell's own run time as the worker measured it (without the transfers).
        self.last_cell_wall = float(done.get("wall_s") or (time.perf_counter() - cell_start))
        if status == "ok":
            return {"status": "ok", "execution_count": execution_count, "user_expressions": {},
                    "payload": []}  # fmt: skip
        ename = "KeyboardInterrupt" if status == "interrupted" else done.get("ename", "Error")
        return error_reply(
            ename, done.get("evalue", ""), done.get("traceback") or [], execution_count
        )

    async def _relay(self, output: CellOutput, packet: Any) -> dict[str, Any]:
        """Publish the worker's outputs until the cell is done."""
        assert self.worker is not None
        while True:
            try:
                kind, payload = await self.worker.recv()
            except ChannelClosed:
                raise WorkerDied(await self._death_message()) from None
            if kind == "stream":
                output.stream(payload["name"], payload["text"])
            elif kind == "display":
                output.display(payload["data"], payload.get("metadata"),
                               payload.get("transient"), payload.get("update", False))  # fmt: skip
            elif kind == "execute_result":
                output.execute_result(
                    payload["execution_count"], payload["data"], payload.get("metadata") or {}
                )
            elif kind == "clear_output":
                output.clear_output(payload.get("wait", False))
            elif kind == "error":
                output.error(payload["ename"], payload["evalue"], payload["traceback"])
            elif kind == "input_request":
                await self._answer_input(payload)
            elif kind == "state_received":
                packet.release()  # the worker has its copy
            elif kind == "cell_done":
                return payload

    async def _answer_input(self, request: dict[str, Any]) -> None:
        """input() in the cell: ask the notebook (blocking, as ipykernel's own input does)."""
        assert self.worker is not None
        if self.read_input is None:
            reply = {
                "error": "input was called, but this frontend does not support input requests."
            }
        else:
            self.awaiting_input = True
            try:
                reply = {
                    "value": self.read_input(
                        request.get("prompt", ""), bool(request.get("password"))
                    )
                }
            except KeyboardInterrupt:
                return  # the worker got the SIGINT too; its input() raises there
            except Exception as e:
                reply = {"error": str(e) or type(e).__name__}
            finally:
                self.awaiting_input = False
        await self.worker.send("input_reply", reply)

    async def _crashed(self, output: CellOutput, message: str, execution_count: int,
                       index: int, cell_start: float) -> dict[str, Any]:  # fmt: skip
        if self.killed_after_interrupt:
            message = (
                f"The profiled cell did not stop within {INTERRUPT_GRACE_S:.0f} s of the "
                f"interrupt, so its process was killed. {message}"
            )
        self.note_status("crashed")
        self.errors.append(message)
        self.last_cell_wall = time.perf_counter() - cell_start
        self.output = None
        self.finished = True
        self.finish_manifest_without_files()
        output.display(self.bundle(index, "crashed", self.last_cell_wall))
        output.error("ProfilingProcessDied", message, [message])
        if self.worker is not None:
            await self.worker.close(graceful=False)
        return error_reply("ProfilingProcessDied", message, [message], execution_count)

    # --- end of the run ------------------------------------------------------------

    async def finish(self, output: CellOutput) -> None:
        """Stop measuring, record how the run ended, show the bundle; the files are written
        by the worker after this returns (files_status "pending" until then)."""
        if self.finished:
            return
        self.finished = True
        worker = self.worker
        assert worker is not None
        self.output = None
        try:
            sent = time.monotonic()
            await worker.send("finish_run")
            stopped = await self._recv_until("run_stopped", STOP_TIMEOUT_S)
            self._add_stamps(sent, stopped.get("stamps"), (
                ("received", "to_worker"),
                ("stopped", "measure_stop"),
                ("summarized", "summary"),
            ))  # fmt: skip
            split = stopped.get("stop_timings") or {}
            whole = self.timings.pop("measure_stop", None)
            if whole is not None:  # split as the worker's clock saw it, keeping the sum
                tracer = min(whole, float(split.get("tracer_stop") or 0.0))
                self.add_time("tracer_stop", tracer)
                self.add_time("recording_build", whole - tracer)
            self.events = stopped.get("events")
            self.top = stopped.get("top") or []
            if stopped.get("error"):
                self.errors.append(f"stopping the measurement failed: {stopped['error']}")
            extra = {"measurement": dict(stopped["notes"])} if stopped.get("notes") else {}
        except (ChannelClosed, WorkerDied) as e:
            message = e.message if isinstance(e, WorkerDied) else str(e)
            self.note_status("crashed")
            self.errors.append(
                f"The profiling process died while stopping the measurement: {message}"
            )
            extra = {"files_status": "failed"}
        self.finish_manifest(extra)
        output.display(self.bundle(self.last_cell_index, self.status, self.last_cell_wall))
        asyncio.ensure_future(self._await_files(worker))

    async def _await_files(self, worker: WorkerProcess) -> None:
        """Note in the manifest how writing the files ended (the worker writes them)."""
        status, errors = "failed", []
        try:
            done = await worker.recv_until("files_done", None)
            status, errors = done.get("status", "failed"), list(done.get("errors") or [])
        except (ChannelClosed, asyncio.TimeoutError):
            code = await worker.wait_exit(30.0)
            errors = [describe_exit(code, while_doing="while writing the experiment files")]
        code = await worker.wait_exit(600.0)
        if self.backend == "scorep":  # Score-P writes its files when the process exits
            anchor = self.exp_dir / experiment.OTF2_ANCHOR
            status = "ready" if anchor.exists() else "failed"
            files = {"otf2": experiment.OTF2_ANCHOR} if anchor.exists() else {}
            if (self.exp_dir / experiment.CUBEX).exists():
                files["cubex"] = experiment.CUBEX
            if status == "failed":
                errors.append(f"Score-P wrote no trace (exit status {code})")
            experiment.update_manifest(
                self.exp_dir, files=files, files_status=status, errors=errors
            )
        elif status == "exit":
            pass  # nothing was measured: finish_manifest already said so
        else:
            try:
                manifest = experiment.read_manifest(self.exp_dir)
            except experiment.ExperimentError:
                return
            if status == "failed" or manifest.get("files_status") == "pending":
                experiment.update_manifest(self.exp_dir, files_status=status, errors=errors)
        await worker.close(graceful=False)

    async def abort(self) -> None:
        self.mark_aborted()
        if self.worker is not None:
            await self.worker.close(graceful=False)
        self.finish_manifest_without_files()
