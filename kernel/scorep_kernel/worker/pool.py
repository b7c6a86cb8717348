"""The spare worker: one process started with the kernel and again after each profiled
run, fed the modules the notebook uses (those its namespace refers to, and those earlier
profiled cells imported in their workers), so the next profiled cell pays neither
interpreter start nor imports. It costs an idle process (~300 MB with torch imported);
``SCOREP_KERNEL_SPARE_WORKER=0`` or ``%scorep spare_worker=false`` turns it off. A
spare is keyed on everything fixed at process start (backend, Score-P environment,
binding arguments, interpreter); a profiled cell whose key differs gets a fresh process and
the old spare is discarded.

For the builtin backend the spare is forked from a template (worker.template,
worker.forking) that stays preloaded: making the next spare takes ~60 ms instead of an
interpreter start and the imports again (~4 s of CPU with torch), which a profiled cell
soon after the last one used to wait for (+3.3 s per run at 1 s between runs,
/tmp/spare_probe.py 1; benchmarks/paper_overhead.py's paired subprocess overhead: 0.53 s
with the template, 3.7 s without, one round each on a shared 2-core machine). It costs a second idle process, mostly pages its forks share
(copy-on-write); ``SCOREP_KERNEL_SPARE_TEMPLATE=0`` or ``%scorep spare_template=false``
turns it off. Score-P workers always start fresh: Score-P's measurement state cannot be
forked. Should the template fail, spares start fresh again (logged), and no cell fails.

When (issue 22, Run All sends cells back to back): the spare and the template are paused
(SIGSTOP) only while a cell runs in the kernel (an unprofiled or in-process cell). Once a
run's worker has started its cell, the kernel is idle and the next spare is forked (a
Score-P one started) meanwhile (``while_running``); what the running cell's own code
imports is imported by the template (or that Score-P spare) while the cell goes on
(``import_started``, at once, beside the kernel's own import ahead: a next cell sent back
to back waited for the template's import when it came after the kernel's), and after the
reply the spare is forked once more from the template if it lacks them (``prepare``),
instead of importing them itself.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from scorep_kernel.background import BackgroundTasks
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.client import WorkerKey, WorkerProcess
from scorep_kernel.worker.protocol import ChannelClosed

if TYPE_CHECKING:
    from scorep_kernel.worker.forking import Template

log = logging.getLogger("scorep_kernel")
# Forks again for what a running cell imported, per spare, and the pause before each (the
# imports of one package come in a burst: one fork after it, not one per module).
MAX_REFORKS = 4
REFORK_SETTLE_S = 0.25


class WorkerRecipeLike(Protocol):
    """What fixes a worker at its start (runs.subprocess_run.WorkerRecipe)."""

    def key(self) -> WorkerKey: ...
    def env(self, base: dict[str, str]) -> dict[str, str]: ...
    def reserve(self) -> tuple[str, Path] | None: ...
    def updated(self, scorep_env: dict[str, str], binding_args: list[str]) -> WorkerRecipeLike:
        """The same recipe with the Score-P environment and arguments as they are now."""


class WorkerPool:
    """Holds at most one spare worker, ready and preloaded (and its template, if any)."""

    def __init__(self, tasks: BackgroundTasks) -> None:
        self.tasks = tasks
        self.spare: WorkerProcess | None = None
        self._starting: asyncio.Task | None = None
        self._starting_key: WorkerKey | None = None
        self._starting_worker: WorkerProcess | None = None  # the spare being started
        self.enabled = True
        # builtin spares forked from a template (the spare_template setting)
        self.use_template = True
        self.template: Template | None = None
        self.template_failed: str | None = None  # why not any more (until set again)
        # the recipe of the latest take(): the next spare is made the same way
        self.last_recipe: WorkerRecipeLike | None = None
        # how the last take() got its worker: "spare_ready" | "spare_starting" | "forked"
        # (from the template, no spare at hand) | "fresh"
        self.last_take = "fresh"
        # the modules the notebook uses, as of the latest prepare(): a spare still starting
        # imports them once it is up
        self._wanted: list[str] = []
        # what a running cell imported: the next spare is forked from the template once
        # it has imported them too (import_started)
        self._from_template: set[str] = set()
        # how the spare at hand was forked (key, env, cwd): a fork again is made the same way
        self._spare_made: tuple[WorkerKey, dict[str, str], str] | None = None

    def _templated(self, key: WorkerKey) -> bool:
        return self.use_template and self.template_failed is None and key.backend == "builtin"

    async def take(self, recipe: WorkerRecipeLike, cwd: str) -> tuple[WorkerProcess, bool]:
        """A worker made by ``recipe``: the spare if it matches and lives, else a fresh one.
        Returns (worker, was_spare). The recipe is kept for the next spare."""
        self.last_recipe = recipe
        key = recipe.key()
        self.resume()
        waited = False
        if self._starting is not None:
            # A spare on its way is taken over, not started twice.
            waited = not self._starting.done()
            # asyncio.wait never raises, even for a start that was cancelled or failed
            await asyncio.wait([self._starting])
            self._starting = None
        spare, self.spare = self.spare, None
        if spare is not None and spare.key == key and spare.running() and spare.ready is not None:
            self.last_take = "spare_starting" if waited else "spare_ready"
            return spare, True
        if spare is not None:
            await spare.close(graceful=False)
        env = recipe.env(dict(os.environ))
        template = self.template
        if self._templated(key) and template is not None and template.matches(key, env):
            try:
                worker = await template.fork(cwd, env)
                self.last_take = "forked"
                return worker, False
            except Exception as e:  # a fresh one, as without a template
                self._template_broke(e)
        self.last_take = "fresh"
        return await WorkerProcess.spawn(key, env, cwd, recipe.reserve()), False

    def prepare(self, recipe: WorkerRecipeLike, cwd: str, modules: list[str]) -> None:
        """Make a spare in the background, after a cell (its reply sent), with
        ``modules`` imported."""
        if not self.enabled:
            return
        key = recipe.key()
        self._wanted = list(modules)
        if self._starting is not None and not self._starting.done():
            if self._starting_key == key:
                return  # it preloads (or forks again for) self._wanted once ready
            self._starting.cancel()  # started with settings that changed since
        spare = self.spare
        # With what the last cell imported missing in the spare while a template has it: a
        # fork of the template (milliseconds), not the imports again in this spare.
        refork = spare is not None and self._templated(key) and self._lacks(spare)
        if spare is not None and spare.key == key and spare.alive() and not refork:
            self.tasks.spawn(self.preload(modules), "preloading the spare worker")
            return
        self._starting_key = key
        env = recipe.env(dict(os.environ))
        if self._templated(key):
            self._starting = self.tasks.spawn(
                self._fork_spare(key, env, cwd), "forking a spare worker"
            )
            return
        if self.template is not None:  # not wanted for these settings (e.g. Score-P)
            self.tasks.spawn(self.close_template(), "closing the spare template")
        self._starting = self.tasks.spawn(
            self._start(key, env, cwd, recipe.reserve()), "starting a spare worker"
        )

    async def _start(
        self,
        key: WorkerKey,
        env: dict[str, str],
        cwd: str,
        reserved: tuple[str, Path] | None,
    ) -> None:
        old, self.spare = self.spare, None
        if old is not None:
            await old.close(graceful=False)
        worker = None
        try:
            worker = await WorkerProcess.spawn(key, env, cwd, reserved)
            self._starting_worker = worker
            await worker.wait_ready()
        except BaseException as e:  # cancelled by close(), or the start failed
            if worker is not None:
                # killed, reaped, and its unused Score-P directory removed
                await worker.close(graceful=False)
            if not isinstance(e, Exception):
                raise
            log.warning("could not start a spare profiling worker: %s", e)
            return
        finally:
            self._starting_worker = None
        self.spare = worker
        await self.preload(self._wanted)

    async def _fork_spare(self, key: WorkerKey, env: dict[str, str], cwd: str) -> None:
        """The spare, forked from the template (started first if need be) once the
        template has imported what the notebook uses; a fresh one if that fails."""
        self._spare_made = (key, env, cwd)
        old, self.spare = self.spare, None
        if old is not None:
            await old.close(graceful=False)
        worker = None
        try:
            template = await self._template_for(key, env, cwd)
            for attempt in range(MAX_REFORKS + 1):
                await template.preload(self._asked())
                worker = await template.fork(cwd, env)
                self._starting_worker = worker
                await worker.wait_ready()
                if attempt == MAX_REFORKS or not self._lacks(worker):
                    break  # (what it still lacks, it imports itself: preload below)
                # The running cell imported more while this fork started (a package's
                # imports come in bursts): a fork that has it, once the template has it.
                self._starting_worker, stale, worker = None, worker, None
                await stale.close(graceful=False)
                await asyncio.sleep(REFORK_SETTLE_S)
        except BaseException as e:
            if worker is not None:
                await worker.close(graceful=False)
            if not isinstance(e, Exception):
                raise
            self._template_broke(e)
            await self._start(key, env, cwd, None)
            return
        finally:
            self._starting_worker = None
        self.spare = worker
        await self.preload(self._wanted)

    def _asked(self) -> list[str]:
        """What the template is to import: the notebook's modules and what running cells
        imported (those include imports that failed in the cell: asked once, never
        again, as the template's Preload marks them)."""
        wanted = set(self._wanted)
        return self._wanted + sorted(m for m in self._from_template if m not in wanted)

    def _lacks(self, worker: WorkerProcess) -> bool:
        """Whether ``worker`` lacks modules a running cell imported (import_started): while
        a template lives, a fork from it once it has imported them is the quicker way to
        have them (milliseconds, not the imports again)."""
        template = self.template
        if template is None or not template.alive():
            return False
        return any(m not in worker.preloaded for m in self._from_template)

    def while_running(self, recipe: WorkerRecipeLike, cwd: str) -> None:
        """A run took its worker and the cell runs there: the kernel is idle, so the next
        spare is made now (builtin: forked from the template, started first if need be;
        Score-P: a fresh interpreter with Score-P's bindings, which imports what the
        running cell imports as it does, import_started), ready when the next cell comes
        back to back (Run All, headless runs). Score-P spares started after the cell's
        reply before: the paper cells back to back waited 1.6-2.1 s for its start and its
        imports (start_run_wait), +3.2 .. +4.7 s over stock in three interleaved rounds;
        started here, +1.9 .. +3.1 s (the spare's start beside the measured cell costs
        less than the next cell's wait for it)."""
        key = recipe.key()
        if not self.enabled:
            return
        if self.spare is not None or (self._starting is not None and not self._starting.done()):
            return
        self._starting_key = key
        env = recipe.env(dict(os.environ))
        if self._templated(key):
            self._starting = self.tasks.spawn(
                self._fork_spare(key, env, cwd), "forking a spare worker"
            )
            return
        if self.template is not None:  # not wanted for these settings (prepare: the same)
            self.tasks.spawn(self.close_template(), "closing the spare template")
        self._starting = self.tasks.spawn(
            self._start(key, env, cwd, recipe.reserve()), "starting a spare worker"
        )

    def import_started(self, modules: list[str]) -> None:
        """The running cell imported ``modules`` (the kernel has them now too): the
        template imports them while the cell goes on, and the spare is forked again from
        it after the cell (prepare: one fork however many modules the cell imported; a
        fork per import competed with the cell for the CPU), so that the next cell finds
        them imported without waiting for the imports."""
        if not self.enabled:
            return
        template = self.template
        if template is None or not template.alive():
            # A fresh spare (Score-P) started while the cell runs: it imports them too, once
            # up (_start preloads self._wanted) or now.
            starting = self._starting is not None and not self._starting.done()
            if self.spare is None and not starting:
                return
            self._wanted += [m for m in modules if m not in self._wanted]
            if self.spare is not None:
                self.tasks.spawn(self.preload(modules), "preloading the spare worker")
            return
        self._wanted += [m for m in modules if m not in self._wanted]
        self._from_template.update(modules)
        self.tasks.spawn(template.preload(modules), "preloading the spare template")

    async def _template_for(self, key: WorkerKey, env: dict[str, str], cwd: str) -> Template:
        from scorep_kernel.worker.forking import Template

        template = self.template
        if template is not None and not template.matches(key, env):
            await self.close_template()  # other settings, or it died
            template = None
        if template is None:
            template = self.template = await Template.start(key, env, cwd)
            await template.wait_ready()
        return template

    def _template_broke(self, e: BaseException) -> None:
        self.template_failed = f"{type(e).__name__}: {e}"
        log.warning(
            "the spare template failed (%s): spare workers start fresh from now on",
            self.template_failed,
        )
        self.tasks.spawn(self.close_template(), "closing the spare template")

    async def preload(self, modules: list[str]) -> None:
        template = self.template
        if template is not None and modules and template.alive():
            try:  # so that the next fork has them too
                await template.preload(modules)
            except ChannelClosed:
                pass
        spare = self.spare
        if spare is None or not modules:
            return
        todo = [m for m in modules if m not in spare.preloaded]
        if not todo:
            return
        spare.preloaded.update(todo)
        try:
            await spare.send(msg.Preload(todo))
        except ChannelClosed:
            self.spare = None

    def _idle(self) -> list[WorkerProcess]:
        template = self.template.worker if self.template is not None else None
        return [w for w in (self.spare, self._starting_worker, template) if w is not None]

    def pause(self) -> None:
        """Stop the spare (ready, starting or preloading) and the template while the
        kernel runs a cell."""
        for worker in self._idle():
            worker.pause()

    def resume(self) -> None:
        for worker in self._idle():
            worker.resume()

    def describe(self) -> str:
        """What %scorep shows of the spare and its template: state and what they cost."""
        from scorep_kernel.worker.forking import ForkedProc

        worker = self.spare or self._starting_worker
        lines = []
        if worker is None:
            lines.append("Spare worker: none running")
        else:
            state = "starting" if worker is self._starting_worker else "ready"
            if isinstance(worker.proc, ForkedProc):
                state += ", forked from the template"
            if worker.paused:
                state += ", paused while a cell runs"
            usage = worker.usage()
            cost = (f", {usage[0] / 2**20:.0f} MB resident, {usage[1]:.1f} s CPU so far"
                    if usage else "")  # fmt: skip
            preloaded = ", ".join(sorted(worker.preloaded)[:8]) or "nothing yet"
            lines.append(f"Spare worker: pid {worker.pid} ({state}{cost}); preloaded: {preloaded}")
        if self.template is not None:
            lines.append(self.template.describe())
        elif self.template_failed is not None:
            lines.append(f"Spare template: failed ({self.template_failed}); spares start fresh")
        return "\n".join(lines)

    async def close_template(self) -> None:
        template, self.template = self.template, None
        if template is not None:
            await template.close()

    async def close(self) -> None:
        # Each taken out before it is awaited: a cell's take() meanwhile finds none (it
        # starts its own worker) instead of one being closed under it.
        starting, self._starting = self._starting, None
        if starting is not None:
            starting.cancel()
            await asyncio.wait([starting])
        spare, self.spare = self.spare, None
        if spare is not None:
            await spare.close(graceful=False)
        await self.close_template()
