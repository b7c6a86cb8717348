"""ScorePKernel: the stock IPython kernel, plus profiled cells.

A cell is profiled when its metadata has ``"scorep": {"profile": true, ...}`` or it starts
with ``%%execute_with_scorep`` (or a multi-cell run is open). Profiled cells run in a worker
process (``subprocess_run``) or in the kernel under the builtin tracer (``inprocess_run``);
everything else is ipykernel's ``do_execute`` unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
import os
import re
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ipykernel.ipkernel import IPythonKernel

from scorep_kernel import __version__
from scorep_kernel.background import BackgroundTasks
from scorep_kernel.cell_metadata import parse_cell_metadata
from scorep_kernel.frontend_metadata import FrontendWatch, profiles_by_default
from scorep_kernel.kernel_log import keep_out_of_cells
from scorep_kernel.magics import (
    PEER_MAGICS,
    parse_binding_arguments,
    parse_cell_magic,
    parse_scorep_env,
)
from scorep_kernel.mpi.config import parse_mpi_magic
from scorep_kernel.mpi.kept_ranks import KeptRanks
from scorep_kernel.mpi.run import MpiRun
from scorep_kernel.peer_magics import PeerMagics
from scorep_kernel.profiled_cells_notice import Expectation, from_the_extension, read_notice
from scorep_kernel.profiled_cells_notice import register as register_notice
from scorep_kernel.runs.base import CellRequest, RunBase, error_reply
from scorep_kernel.runs.faults import RunFailed
from scorep_kernel.runs.inprocess_run import InprocessRun
from scorep_kernel.runs.kernel_side import KernelSideOf
from scorep_kernel.runs.subprocess_run import SubprocessRun
from scorep_kernel.runs.worker_recipe import WorkerRecipe
from scorep_kernel.settings import (
    MPI_ISOLATION,
    Availability,
    CellSettings,
    KernelSettings,
    SettingsError,
    detect,
)
from scorep_kernel.shim import install_scorep_shim
from scorep_kernel.state import transfer
from scorep_kernel.worker.pool import WorkerPool

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

log = logging.getLogger("scorep_kernel")
_SKIP_PRELOAD = ("__main__", "builtins", "scorep_kernel", "IPython", "ipykernel")


def namespace_modules(namespace: dict[str, Any]) -> list[str]:
    """Modules the namespace's values come from: what a spare worker should import."""
    found = set()
    for value in namespace.values():
        name: object  # checked below: a __module__ may be anything
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


# How each isolation runs its cells.
RUN_KINDS: dict[str, type[RunBase]] = {
    "subprocess": SubprocessRun,
    "inprocess": InprocessRun,
    MPI_ISOLATION: MpiRun,  # cells with an "mpi" setting: N ranks through the MPI launcher
}
# `%scorep_mpi [stop]` as a cell of its own
MPI_LINE = re.compile(r"\A\s*%scorep_mpi(?![\w%])([^\n]*)\s*\Z")
# At shutdown, how long the kernel waits for background work (a run's files) to end.
SHUTDOWN_WAIT_S = 10.0


class ScorePKernel(IPythonKernel):
    implementation = "scorep_kernel"
    implementation_version = __version__
    banner = "Python 3 with Score-P profiling of cells (scorep_kernel)"

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        keep_out_of_cells()  # background work's log lines never land in a later cell
        self.scorep_settings = KernelSettings.from_environ()
        # `import scorep` in a cell profiled in the kernel reaches the builtin tracer
        install_scorep_shim()
        self.tasks = BackgroundTasks()
        self.pool = WorkerPool(self.tasks)
        self.pool.enabled = self.scorep_settings.spare_worker != "off"
        self.pool.use_template = self.scorep_settings.spare_template
        self.active_run: RunBase | None = None
        self.kept_ranks = KeptRanks()  # MPI ranks that stay up between cells (builtin)
        self.magic_run: str | None = None  # run id while %%enable_multicellmode is on
        self.peer = PeerMagics()  # scorep-jupyter's magics: write mode, marshalling, Vampir
        self._run_ids = itertools.count(1)
        self._availability: Availability | None = None
        self._cell_t0 = time.perf_counter()  # when the current execute_request arrived
        # Modules profiled cells imported in their workers (the kernel never imported
        # them): the next spare imports them too, as a plain kernel would still have them.
        self.worker_imports: dict[str, None] = {}
        # Work that must not delay a cell's reply (writing an in-process run's files,
        # starting a spare): run once the reply is sent.
        self._after_reply: list[Any] = []
        self.side = KernelSideOf(self, super().do_execute)
        self.cell_output = self.side.output
        # What the spare is made for before any subprocess run: from JupyterLab's notice
        # that the notebook holds cells profiled in a subprocess (profiled_cells_notice).
        self.expected_recipe: WorkerRecipe | None = None
        # The extension's notice came (JupyterLab with our panel, which reads an
        # experiment's numbers from the server): an in-process run's display need not wait
        # for its Recording (runs.inprocess_run).
        self.panel_frontend = False
        # Whether the frontend sends cell metadata; the note when it sends none
        self.frontend = FrontendWatch()
        if self.shell is not None:
            self.shell.register_magic_function(self._scorep_magic, "line", "scorep")
        register_notice(self.comm_manager, self._on_profiled_cells_notice)

    def start(self) -> None:
        super().start()
        # With spare_worker=always the first profiled cell does not pay for an interpreter
        # start either; by default a notebook that never profiles in a subprocess runs no
        # spare at all.
        if self.scorep_settings.spare_worker == "always":
            self.io_loop.add_callback(self._prepare_spare)

    @property
    def ipython(self) -> InteractiveShell:
        """``shell``: its trait allows None, but IPythonKernel's constructor always makes it."""
        assert self.shell is not None
        return self.shell

    @property
    def availability(self) -> Availability:
        if self._availability is None:
            self._availability = detect()
        return self._availability

    def _scorep_magic(self, line: str) -> None:
        """%scorep: show the settings and backends; %scorep key=value ... changes them."""
        if line.strip():
            changed = self.scorep_settings.update_from_line(line)  # SettingsError shows as such
            self.pool.enabled = self.scorep_settings.spare_worker != "off"
            if not self.pool.enabled:
                self.tasks.spawn(self.pool.close(), "closing the spare worker")
            if any(c.startswith("spare_template=") for c in changed):
                self._set_spare_template()
            print("Set " + ", ".join(changed))
        else:
            self._availability = None
            print(self.scorep_settings.describe(self.availability))
            print(self.pool.describe())
            print(self.frontend.describe())

    def _set_spare_template(self) -> None:
        on = self.scorep_settings.spare_template
        self.pool.use_template = on
        if on:
            self.pool.template_failed = None  # asked for again: try again
        else:  # the spare forked from it goes too; the next one starts fresh
            self.tasks.spawn(self.pool.close(), "closing the spare template")

    # --- dispatch --------------------------------------------------------------------

    async def do_execute(self, code, silent, store_history=True, user_expressions=None,
                         allow_stdin=False, *, cell_meta=None, cell_id=None):  # fmt: skip
        args = dict(silent=silent, store_history=store_history, user_expressions=user_expressions,
                    allow_stdin=allow_stdin, cell_meta=cell_meta, cell_id=cell_id)  # fmt: skip
        # Nothing of ours competes with a cell that runs in the kernel: a spare still
        # starting or importing is paused (SIGSTOP) then, until the reply is sent
        # (_in_kernel). While a cell runs in a worker the kernel is idle, and the next
        # spare is made meanwhile (pool.while_running).
        self.defer(self.pool.resume)
        self._cell_t0 = time.perf_counter()
        try:
            reply = await self._dispatch(code, args)
        except SettingsError as e:
            reply = self._failed(args, "ScorePSettingsError", str(e), f"ScorePSettingsError: {e}")
        except RunFailed as e:
            self.active_run = None
            reply = self._failed(args, e.ename, e.message)
        except Exception as e:  # a bug of ours must cost one cell, not the kernel's answer
            self.log.exception("profiling failed")
            self.active_run = None
            message = (f"The Score-P kernel failed to run this cell ({type(e).__name__}: {e}). "
                       "Please report this with the kernel's log.")  # fmt: skip
            reply = self._failed(args, "ScorePKernelError", message)
        self.defer(self._prepare_spare)
        return reply

    async def dispatch_shell(self, msg, /, subshell_id=None, **kwargs):
        try:
            await super().dispatch_shell(msg, subshell_id, **kwargs)
        finally:
            # After the reply and the idle status: work started here (an in-process run's
            # files, the spare) must not delay the kernel's answer. Before the next
            # message, which the main shell takes only after this. (Subshells are threads
            # of their own: never theirs to run.)
            if subshell_id is None:
                self._run_after_reply()

    def defer(self, call: Any) -> None:
        """Run ``call`` once the current cell's reply is sent and the kernel is idle."""
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
        count = self.ipython.execution_count
        if args.get("store_history") and not args.get("silent"):
            self.ipython.execution_count += 1
        return count

    async def _dispatch(self, code: str, args: dict[str, Any]) -> dict[str, Any]:
        silent, history = bool(args.get("silent")), bool(args.get("store_history"))
        self.frontend.observe(args.get("cell_meta"), silent, history)
        note = self.frontend.note(code, self.scorep_settings.profile_chosen)
        if note:
            self.cell_output.stream("stdout", note)
        meta = parse_cell_metadata(args.get("cell_meta"))
        magic = parse_cell_magic(code)
        last = meta.last
        run_id = meta.run
        profiled = meta.profile
        if profiled is None:  # the cell does not say: %scorep profile (or the environment)
            profiled = self.scorep_settings.profile == "all" and profiles_by_default(
                code, silent, history
            )
        own: dict[str, Any] = {}  # settings a magic line gives the cell (%%scorep_mpi)
        mpi_line = MPI_LINE.match(code)
        if mpi_line is not None:
            return self._say(args, await self._mpi_line(mpi_line.group(1).strip()))
        if magic is not None and magic.name in PEER_MAGICS:
            return self._say(args, self.peer.run(magic, os.getcwd()))
        if self.peer.writing and not args.get("silent"):  # recorded for the script, not run
            return self._say(args, self.peer.record(code, magic, profiled))
        if magic is not None:
            if magic.name == "scorep_mpi":
                own["mpi"] = parse_mpi_magic(magic.args)
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
            self.pool.pause()
            return await super().do_execute(code, **args)
        settings = self.scorep_settings.resolve(
            {**meta.settings, **own},
            self.availability,
            run=run_id,
            last=last and run_id is not None,
        )
        settings.state_transport = self.peer.state.transport  # %%marshalling_settings MODE
        settings.open_tools = ("vampir",) if self.peer.vampir else ()
        if self.active_run is not None and (
            settings.run is None or settings.run != self.active_run.run_id
        ):
            await self._finish_run(note="a new profiled run started")
        return await self._run_profiled(code, settings, args)

    async def _mpi_line(self, words: str) -> str:
        """``%scorep_mpi`` (on a line of its own, as the cell): the kept ranks;
        ``%scorep_mpi stop`` ends them."""
        if words == "stop":
            ended = await self.kept_ranks.close()
            return f"Ended the {ended} kept up." if ended else "No MPI ranks were kept up."
        if words in ("", "status"):
            return self.kept_ranks.describe()
        raise SettingsError(f"%scorep_mpi {words}: say `%scorep_mpi stop` or `%scorep_mpi`.")

    def _say(self, args: dict[str, Any], text: str) -> dict[str, Any]:
        if text and not args.get("silent"):
            print(text)
        count = self._take_execution_count(args)
        return {"status": "ok", "execution_count": count, "user_expressions": {}, "payload": []}

    # --- profiled cells --------------------------------------------------------------

    async def _run_profiled(
        self, code: str, settings: CellSettings, args: dict[str, Any]
    ) -> dict[str, Any]:
        request = CellRequest(
            code=code,
            cell_id=args.get("cell_id"),
            silent=bool(args.get("silent")),
            store_history=bool(args.get("store_history")),
            allow_stdin=bool(args.get("allow_stdin")),
            user_expressions=args.get("user_expressions"),
            last=settings.run is None or settings.last,
            stock_args=args,
        )
        run = self.active_run
        if run is None:
            s = self.scorep_settings
            run = RUN_KINDS[settings.isolation](settings, s.scorep_env, s.binding_args, self.side)
        if not isinstance(run, SubprocessRun):
            self.pool.pause()  # the cell runs in the kernel (or as MPI ranks beside it)
        # While a run that forwards SIGINT is set up and runs its cell, an interrupt is
        # the run's to handle (before the cell starts, it cancels the cell).
        with self._sigint_to(run):
            run.add_time("kernel_dispatch", time.perf_counter() - self._cell_t0)
            if run is not self.active_run:
                await run.begin()
                self.active_run = run if settings.run is not None else None
            reply = await run.run_cell(request)
        if run.finished:  # the worker died
            self.active_run = None
        elif request.last:
            self.active_run = None
            await run.finish()
        else:
            self.cell_output.display(run.running_bundle())
        reply.setdefault("user_expressions", {})
        if reply["status"] == "ok" and request.user_expressions:
            reply["user_expressions"] = self.ipython.user_expressions(request.user_expressions)
        return reply

    @contextlib.contextmanager
    def _sigint_to(self, run: RunBase) -> Iterator[None]:
        if not run.forwards_sigint or threading.current_thread() is not threading.main_thread():
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

    async def _finish_run(self, note: str | None = None) -> None:
        run, self.active_run = self.active_run, None
        if run is not None and not run.finished:
            if note:
                print(f"(The open profiled run {run.run_id} was finished: {note}.)")
            await run.finish()

    async def _abort_run(self) -> None:
        run, self.active_run = self.active_run, None
        self.magic_run = None
        if run is not None and not run.finished:
            await run.abort()

    # --- spare worker ----------------------------------------------------------------

    def _on_profiled_cells_notice(self, data: object) -> Expectation:
        """JupyterLab says which profiled cells the notebook holds (comm open, between
        cells): where one will run in a subprocess, the spare is prepared now, so that
        the first such cell does not pay an interpreter start and the notebook's imports."""
        expectation = read_notice(data, self.scorep_settings, self.availability)
        self.panel_frontend = self.panel_frontend or from_the_extension(data)
        settings = expectation.settings
        if settings is not None and self.pool.last_recipe is None:
            recipe = WorkerRecipe(settings.backend, experiment_parent=settings.experiment_parent)
            if self.expected_recipe is None or self.expected_recipe.key() != recipe.key():
                self.expected_recipe = recipe
                self._prepare_spare()
        return expectation

    def _prepare_spare(self) -> None:
        """After every cell (and at the start with spare_worker=always): keep a spare worker
        ready for the next profiled cell, with the modules the namespace uses imported. It
        is made as the last subprocess run's worker was, else as JupyterLab's notice of the
        notebook's profiled cells says, else as the kernel's settings make one. Until the
        notebook first profiles in a subprocess or says it will, nothing is done here (not
        even the namespace walk): ordinary cells pay nothing."""
        mode = self.scorep_settings.spare_worker
        recipe = self.pool.last_recipe or self.expected_recipe
        if mode == "off" or (recipe is None and mode != "always"):
            return
        if self.active_run is not None and self.active_run.holds_worker:
            return  # a run holds its own worker; do not compete with its cells for the CPU
        s = self.scorep_settings
        if recipe is None:
            try:
                settings = s.resolve({"isolation": "subprocess"}, self.availability)
            except SettingsError:
                return  # settings no subprocess run can have: no spare to guess
            recipe = WorkerRecipe(settings.backend, experiment_parent=settings.experiment_parent)
        # with %%scorep_env and the binding arguments as they are now
        recipe = recipe.updated(dict(s.scorep_env), list(s.binding_args))
        names = transfer.user_names(self.ipython.user_ns)
        modules = namespace_modules({n: self.ipython.user_ns[n] for n in names})
        modules += [m for m in self.worker_imports if m not in modules]
        self.pool.prepare(recipe, os.getcwd(), modules)

    async def do_shutdown(self, restart):
        self._after_reply = [c for c in self._after_reply if c != self._prepare_spare]
        self._run_after_reply()  # files of a run that just ended
        if self.active_run is not None:
            self.active_run.kill()
        await self.kept_ranks.close()
        await self.pool.close()
        # A run's files are being written by its worker: wait for the manifest to say how
        # it ended (bounded); what is still running then is cancelled, and says so.
        late = await self.tasks.drain(SHUTDOWN_WAIT_S)
        if late:
            self.log.warning("shut down while still %s", ", ".join(late))
        reply = super().do_shutdown(restart)
        return await reply if inspect.isawaitable(reply) else reply
