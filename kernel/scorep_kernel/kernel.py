"""ScorePKernel: the stock IPython kernel, plus profiled cells.

A cell is profiled when its metadata has ``"scorep": {"profile": true, ...}`` or it starts
with ``%%execute_with_scorep`` (or a multi-cell run is open). Profiled cells run in a worker
process (``subprocess_run``) or in the kernel under the builtin tracer (``inprocess_run``);
everything else is ipykernel's ``do_execute`` unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator
from typing import Any

from ipykernel.ipkernel import IPythonKernel

from scorep_kernel import __version__
from scorep_kernel.magics import parse_binding_arguments, parse_cell_magic, parse_scorep_env
from scorep_kernel.runs.base import RunBase, error_reply, reserve_experiment
from scorep_kernel.runs.inprocess_run import InprocessRun
from scorep_kernel.runs.subprocess_run import SubprocessRun, WorkerDied
from scorep_kernel.settings import Availability, KernelSettings, SettingsError, detect
from scorep_kernel.state import transfer
from scorep_kernel.worker.client import WorkerPool

log = logging.getLogger("scorep_kernel")
_SKIP_PRELOAD = ("__main__", "builtins", "scorep_kernel", "IPython", "ipykernel")


def namespace_modules(namespace: dict[str, Any]) -> list[str]:
    """Modules the namespace's values come from: what a spare worker should import."""
    found = set()
    for value in namespace.values():
        if isinstance(value, types.ModuleType):
            name = value.__name__
        else:
            name = (
                getattr(value, "__module__", None)
                if isinstance(value, (type, types.FunctionType))
                else None
            )
            name = name or getattr(type(value), "__module__", None)
        if isinstance(name, str) and name in sys.modules and not name.startswith(_SKIP_PRELOAD):
            found.add(name)
    return sorted(found)


class KernelCellOutput:
    """Publishes a worker's outputs on iopub as the current cell's own."""

    def __init__(self, kernel: IPythonKernel):
        self.kernel = kernel

    def _flush(self) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass

    def stream(self, name: str, text: str) -> None:
        (sys.stderr if name == "stderr" else sys.stdout).write(text)

    def display(self, data, metadata=None, transient=None, update=False) -> None:
        self.kernel.shell.display_pub.publish(
            data=data, metadata=metadata or {}, transient=transient or {}, update=update
        )

    def _send(self, msg_type: str, content: dict[str, Any]) -> None:
        self._flush()
        self.kernel.session.send(
            self.kernel.iopub_socket, msg_type, content,
            parent=self.kernel.get_parent(), ident=self.kernel._topic(msg_type),
        )  # fmt: skip

    def execute_result(self, execution_count: int, data: dict, metadata: dict) -> None:
        self._send("execute_result", {"execution_count": execution_count, "data": data,
                                      "metadata": metadata})  # fmt: skip

    def clear_output(self, wait: bool) -> None:
        self.kernel.shell.display_pub.clear_output(wait=wait)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        self._send("error", {"ename": ename, "evalue": evalue, "traceback": traceback})


class ScorePKernel(IPythonKernel):
    implementation = "scorep_kernel"
    implementation_version = __version__
    banner = "Python 3 with Score-P profiling of cells (scorep_kernel)"

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.scorep_settings = KernelSettings.from_environ()
        self.pool = WorkerPool()
        self.pool.enabled = self.scorep_settings.spare_worker
        self.active_run: RunBase | None = None
        self.magic_run: str | None = None  # run id while %%enable_multicellmode is on
        self._run_ids = itertools.count(1)
        self._availability: Availability | None = None
        self._spare_recipe: SubprocessRun | None = None  # settings of the last subprocess run
        self._cell_t0 = time.perf_counter()  # when the current execute_request arrived
        # Modules profiled cells imported in their workers (the kernel never imported
        # them): the next spare imports them too, as a plain kernel would still have them.
        self._worker_imports: dict[str, None] = {}
        # Work that must not delay a cell's reply (writing an in-process run's files,
        # starting a spare): run once the reply is sent.
        self._after_reply: list[Any] = []
        self.cell_output = KernelCellOutput(self)
        if self.shell is not None:
            self.shell.register_magic_function(self._scorep_magic, "line", "scorep")

    def start(self) -> None:
        super().start()
        # The spare worker starts with the kernel: the first profiled cell must not pay for
        # an interpreter start (nor, once the first cell imported them, for the imports).
        self.io_loop.add_callback(self._prepare_spare)

    @property
    def availability(self) -> Availability:
        if self._availability is None:
            self._availability = detect()
        return self._availability

    def _scorep_magic(self, line: str) -> None:
        """%scorep: show the settings and backends; %scorep key=value ... changes them."""
        if line.strip():
            changed = self.scorep_settings.update_from_line(line)  # SettingsError shows as such
            self.pool.enabled = self.scorep_settings.spare_worker
            if not self.pool.enabled:
                asyncio.ensure_future(self.pool.close())
            print("Set " + ", ".join(changed))
        else:
            self._availability = None
            print(self.scorep_settings.describe(self.availability))

    # --- dispatch --------------------------------------------------------------------

    async def do_execute(self, code, silent, store_history=True, user_expressions=None,
                         allow_stdin=False, *, cell_meta=None, cell_id=None):  # fmt: skip
        args = dict(silent=silent, store_history=store_history, user_expressions=user_expressions,
                    allow_stdin=allow_stdin, cell_meta=cell_meta, cell_id=cell_id)  # fmt: skip
        self._cell_t0 = time.perf_counter()
        try:
            reply = await self._dispatch(code, args)
        except SettingsError as e:
            reply = self._failed(args, "ScorePSettingsError", str(e), f"ScorePSettingsError: {e}")
        except WorkerDied as e:
            self.active_run = None
            reply = self._failed(args, "ProfilingProcessDied", e.message)
        except Exception as e:  # a bug of ours must cost one cell, not the kernel's answer
            self.log.exception("profiling failed")
            self.active_run = None
            message = (f"The Score-P kernel failed to run this cell ({type(e).__name__}: {e}). "
                       "Please report this with the kernel's log.")  # fmt: skip
            reply = self._failed(args, "ScorePKernelError", message)
        self._defer(self._prepare_spare)
        return reply

    async def execute_request(self, stream, ident, parent):  # type: ignore[override]
        try:
            await super().execute_request(stream, ident, parent)
        finally:
            self._run_after_reply()

    def _defer(self, call: Any) -> None:
        """Run ``call`` once the current cell's reply is sent."""
        self._after_reply.append(call)

    def _run_after_reply(self) -> None:
        work, self._after_reply = self._after_reply, []
        for call in work:
            try:
                call()
            except Exception:
                self.log.exception("work after a cell's reply failed")

    def _failed(self, args: dict[str, Any], ename: str, message: str, shown: str | None = None):
        """An error reply for a cell that never ran; it still takes its execution count, as a
        cell with a syntax error does."""
        traceback = [shown or message]
        self.cell_output.error(ename, message, traceback)
        return error_reply(ename, message, traceback, self._take_execution_count(args))

    def _take_execution_count(self, args: dict[str, Any]) -> int:
        """This cell's execution count; the next cell gets the next one if this one is
        stored in the history (as IPython's run_cell counts)."""
        count = self.shell.execution_count
        if args.get("store_history") and not args.get("silent"):
            self.shell.execution_count += 1
        return count

    async def _dispatch(self, code: str, args: dict[str, Any]) -> dict[str, Any]:
        meta = (args.get("cell_meta") or {}).get("scorep") or {}
        if not isinstance(meta, dict):
            raise SettingsError(f"cell metadata 'scorep' must be an object, not {meta!r}")
        magic = parse_cell_magic(code)
        last = bool(meta.get("last"))
        run_id = meta.get("run")
        profiled = meta.get("profile") is True
        if magic is not None:
            if magic.name == "scorep_env":
                env = parse_scorep_env(magic.body)
                self.scorep_settings.scorep_env.update(env)
                return self._say(args, "Score-P environment for profiled cells: "
                                 + ", ".join(f"{k}={v}" for k, v in env.items()))  # fmt: skip
            if magic.name == "scorep_python_binding_arguments":
                self.scorep_settings.binding_args = parse_binding_arguments(magic.body)
                return self._say(args, "Score-P binding arguments: "
                                 + (" ".join(self.scorep_settings.binding_args) or "(none)"))  # fmt: skip
            if magic.name == "abort_multicellmode":
                await self._abort_run()
                return self._say(args, "Multi-cell run aborted.")
            if magic.name == "enable_multicellmode":
                await self._finish_run(note="a new multi-cell run started")
                self.magic_run = f"multicell-{next(self._run_ids)}"
                if not magic.body.strip():
                    return self._say(args, "Multi-cell mode: the next cells run in one profiled "
                                     "run until %%finalize_multicellmode.")  # fmt: skip
            if magic.name == "finalize_multicellmode":
                if self.magic_run is None:
                    raise SettingsError("%%finalize_multicellmode without %%enable_multicellmode: "
                                        "no multi-cell run is open")  # fmt: skip
                if not magic.body.strip():
                    self.magic_run = None
                    await self._finish_run()
                    return self._say(args, "")
                last = True
            code = magic.body
            profiled = True
        if self.magic_run is not None:
            profiled, run_id = True, self.magic_run
            if magic is not None and magic.name == "finalize_multicellmode":
                self.magic_run = None
        if not profiled or args.get("silent"):  # silent requests are the frontend's own
            return await super().do_execute(code, **args)
        settings = self.scorep_settings.resolve(
            {**meta, "run": run_id, "last": last} if run_id is not None else meta, self.availability
        )
        if self.active_run is not None and (
            settings.run is None or settings.run != self.active_run.run_id
        ):
            await self._finish_run(note="a new profiled run started")
        return await self._run_profiled(code, settings, args)

    def _say(self, args: dict[str, Any], text: str) -> dict[str, Any]:
        if text and not args.get("silent"):
            print(text)
        count = self._take_execution_count(args)
        return {"status": "ok", "execution_count": count, "user_expressions": {}, "payload": []}

    # --- profiled cells --------------------------------------------------------------

    async def _run_profiled(self, code: str, settings: Any, args: dict[str, Any]) -> dict[str, Any]:
        run = self.active_run
        if run is None:
            s = self.scorep_settings
            cls = SubprocessRun if settings.isolation == "subprocess" else InprocessRun
            run = cls(settings, s.scorep_env, s.binding_args)
        if isinstance(run, SubprocessRun):
            # From the worker's start to the bundle, SIGINT belongs to the worker: the kernel
            # passes it on while the cell runs, and before that it cancels the cell.
            with self._sigint_to(run):
                return await self._run_cell_of(run, code, settings, args)
        return await self._run_cell_of(run, code, settings, args)

    async def _run_cell_of(self, run: RunBase, code: str, settings: Any, args: dict[str, Any]):
        shell = self.shell
        run.add_time("kernel_dispatch", time.perf_counter() - self._cell_t0)
        if run is not self.active_run:
            if isinstance(run, SubprocessRun):
                self._spare_recipe = run
                await run.begin(self.pool, dict(os.environ), os.getcwd())
            else:
                run.after_reply = self._defer
                run.begin()
            self.active_run = run if settings.run is not None else None
        count = shell.execution_count
        if isinstance(run, SubprocessRun):
            self._allow_stdin = bool(args.get("allow_stdin"))
            run.read_input = self._read_input if self._allow_stdin else None
            run.last_cell = settings.run is None or bool(settings.last)
            reply = await run.run_cell(shell, self.cell_output, code, args.get("cell_id"), count)
            self._worker_imports.update(dict.fromkeys(run.imported))
            run.imported = []
            if args.get("store_history") and not args.get("silent"):
                try:
                    shell.history_manager.store_inputs(count, code, code)
                except Exception:
                    pass
                shell.execution_count += 1
                if run.last_result is not None:
                    try:  # Out[n], _, __, ___ as a plain cell leaves them
                        shell.displayhook.update_user_ns(run.last_result)
                    except Exception:
                        self.log.debug("could not store the cell's result", exc_info=True)
        else:
            reply = await run.run_cell(
                shell, lambda: super(ScorePKernel, self).do_execute(code, **args), code,
                args.get("cell_id"), count,
            )  # fmt: skip
        if run.finished:  # the worker died
            self.active_run = None
        elif settings.run is None or settings.last:
            self.active_run = None
            await run.finish(self.cell_output)
        else:
            self.cell_output.display(run.bundle(run.last_cell_index, "running", run.last_cell_wall))
        reply.setdefault("user_expressions", {})
        if reply["status"] == "ok" and args.get("user_expressions"):
            reply["user_expressions"] = shell.user_expressions(args["user_expressions"])
        return reply

    @contextlib.contextmanager
    def _sigint_to(self, run: SubprocessRun) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield  # signal handlers can only be set in the main thread (subshells)
            return
        loop = asyncio.get_running_loop()

        def forward(signum: int, frame: Any) -> None:
            if run.awaiting_input:
                # The loop is blocked in the stdin request: act now, and end the request
                # the way ipykernel's own input() ends on an interrupt.
                run.interrupt()
                raise KeyboardInterrupt
            loop.call_soon_threadsafe(run.interrupt)

        saved = signal.signal(signal.SIGINT, forward)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, saved)

    def _read_input(self, prompt: str, password: bool) -> str:
        return self.getpass(prompt) if password else self.raw_input(prompt)

    async def _finish_run(self, note: str | None = None) -> None:
        run, self.active_run = self.active_run, None
        if run is not None and not run.finished:
            if note:
                print(f"(The open profiled run {run.run_id} was finished: {note}.)")
            await run.finish(self.cell_output)

    async def _abort_run(self) -> None:
        run, self.active_run = self.active_run, None
        self.magic_run = None
        if run is not None and not run.finished:
            await run.abort()

    # --- spare worker ----------------------------------------------------------------

    def _prepare_spare(self) -> None:
        """At the kernel's start and after every cell: keep a spare worker ready for the next
        profiled cell, with the modules the namespace uses imported. Its settings are those
        of the last subprocess run, else the kernel's (a subprocess run of its backend)."""
        if not self.scorep_settings.spare_worker:
            return
        if self.active_run is not None and isinstance(self.active_run, SubprocessRun):
            return  # a run holds its own worker; do not compete with its cells for the CPU
        s = self.scorep_settings
        recipe = self._spare_recipe
        if recipe is None:
            try:
                settings = s.resolve({"isolation": "subprocess"}, self.availability)
            except SettingsError:
                return  # settings no subprocess run can have: no spare to guess
            recipe = SubprocessRun(settings, s.scorep_env, s.binding_args)
        recipe.scorep_env, recipe.binding_args = dict(s.scorep_env), list(s.binding_args)
        names = transfer.user_names(self.shell.user_ns)
        modules = namespace_modules({n: self.shell.user_ns[n] for n in names})
        modules += [m for m in self._worker_imports if m not in modules]
        reserved = (
            reserve_experiment(s.scorep_env, recipe.settings.experiment_parent)
            if recipe.backend == "scorep"
            else None
        )
        self.pool.prepare(
            recipe.key(), recipe.worker_env(dict(os.environ)), os.getcwd(), modules, reserved
        )

    def do_shutdown(self, restart):
        self._after_reply = [c for c in self._after_reply if c != self._prepare_spare]
        self._run_after_reply()  # files of a run that just ended
        for worker in [self.pool.spare, getattr(self.active_run, "worker", None)]:
            if worker is not None:
                worker.kill()
        return super().do_shutdown(restart)
