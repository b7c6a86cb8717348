"""One headless run: start the Score-P kernel, execute the notebook's code cells through
nbclient (each request with its cell's metadata), print a line per cell, stop cleanly on
Ctrl-C, and collect what was measured into scorep-summary.json.

Ctrl-C (or SIGTERM, as CI sends on a cancelled job): the running cell is interrupted (the
kernel keeps what its measurement recorded), no further cell runs, the files the kernel
is still writing are waited for, and the summary and the executed notebook are written;
the exit status is 130. A second Ctrl-C stops at once: the kernel is shut down without
waiting, and what is on disk is summarised.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

import nbformat
from nbclient.exceptions import DeadKernelError
from nbclient.util import ensure_async

from scorep_kernel import experiment as ex

from . import cells as cellsel
from . import experiments as exps
from . import run_summary as hs
from .finished_outputs import finish_outputs
from .notebook_client import ScorePNotebookClient
from .progress_lines import ProgressLines
from .run_options import RunOptions
from .run_results import CellRun, RunResults


class UsageError(Exception):
    """A wrong option or an unreadable notebook: exit status 2, the message says the fix."""


def session_name(notebook: Path) -> str:
    """The notebook as JPY_SESSION_NAME gives it to the kernel (the manifests' ``notebook``):
    relative to the working directory when it lies below it, as a server root would see it."""
    path = notebook.absolute()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class Runner:
    """Runs one notebook; ``await run()`` gives the summary (a dict per SCHEMA), which
    ``results`` (``run_results.RunResults``) builds."""

    def __init__(self, opts: RunOptions, out: TextIO | None = None):
        self.opts = opts
        self.out = out or sys.stdout
        tty = hasattr(self.out, "isatty") and self.out.isatty()
        self.tty = bool(tty)
        self.color = (
            opts.color if opts.color is not None else (tty and not os.environ.get("NO_COLOR"))
        )
        self.stop_reason: str | None = None  # "interrupted" once Ctrl-C came
        self._signals = 0
        self._cell_task: asyncio.Future | None = None
        self._interrupting: asyncio.Future | None = None
        self.client: ScorePNotebookClient | None = None
        self.kernel_started = False
        self.start_ns = time.time_ns()
        self._ipc_dir: tempfile.TemporaryDirectory | None = None
        self.prepare()
        self.progress = ProgressLines(
            self.out, color=bool(self.color), tty=self.tty, cells=len(self.code)
        )

    # --- setup ---------------------------------------------------------------------

    def prepare(self) -> None:
        opts = self.opts
        path = opts.notebook
        if not path.is_file():
            raise UsageError(f"{path}: no such notebook")
        try:
            self.nb = nbformat.read(path, as_version=4)
        except Exception as e:
            raise UsageError(
                f"{path} is not a readable notebook ({type(e).__name__}: {e})"
            ) from None
        self.code = cellsel.code_cells(self.nb)
        if opts.profile_all and opts.cells:
            raise UsageError("--all and --cells exclude each other: choose one")
        if opts.profile_all:
            mode, chosen = "all", frozenset(c.number for c in self.code)
        elif opts.cells:
            try:
                mode, chosen = "cells", cellsel.parse_selection(opts.cells, self.code)
            except cellsel.SelectionError as e:
                raise UsageError(str(e)) from None
        else:
            mode, chosen = "toggled", frozenset()
        self.cwd = (opts.cwd or path.parent).absolute()
        if not self.cwd.is_dir():
            raise UsageError(f"--cwd {self.cwd}: no such directory")
        exp_dir = opts.experiment_dir.expanduser().absolute() if opts.experiment_dir else None
        self.experiment_dir = exp_dir or ex.default_parent(self.cwd).absolute()
        self.summary_path = (
            opts.summary.absolute() if opts.summary else self.experiment_dir / hs.SUMMARY_NAME
        )
        lab = cellsel.lab_settings_from_options(
            opts.backend, opts.isolation, str(exp_dir) if exp_dir else None
        )
        self.profiling = cellsel.Profiling(mode=mode, chosen=chosen, lab_settings=lab)
        self.cells = [CellRun(c, cellsel.is_toggled(c, self.profiling)) for c in self.code]
        self.session = session_name(path)
        self.results = RunResults(
            opts,
            self.cells,
            self.profiling,
            self.experiment_dir,
            self.summary_path,
            self.session,
            self.cwd,
        )

    # --- signals -------------------------------------------------------------------

    def on_signal(self, signum: int) -> None:
        self._signals += 1
        name = signal.Signals(signum).name
        if self._signals == 1:
            self.stop_reason = "interrupted"
            msg = f"\n{name}: stopping after the running cell (interrupting it); again to stop at once."
            self.progress.say(msg)
            if self._cell_task is not None and self.client is not None and self.client.km:
                self._interrupting = asyncio.ensure_future(self._interrupt_kernel())
        else:
            self.progress.say(f"\n{name} again: stopping at once.")
            if self._cell_task is not None:
                self._cell_task.cancel()

    async def _interrupt_kernel(self) -> None:
        try:
            assert self.client is not None and self.client.km is not None
            await ensure_async(self.client.km.interrupt_kernel())
        except Exception as e:
            self.progress.say(f"(could not interrupt the kernel: {e})")

    # --- the run -------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        handled = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.on_signal, sig)
                handled.append(sig)
            except (NotImplementedError, RuntimeError):
                pass
        start = _dt.datetime.now(_dt.timezone.utc)
        self.start_ns = time.time_ns()
        t0 = time.monotonic()
        status, message = hs.RUN_OK, ""
        try:
            self.announce()
            status, message = await self.execute()
        finally:
            await self.shutdown()
            for sig in handled:
                loop.remove_signal_handler(sig)
        manifests = self.results.collect_files(self.start_ns)
        data = self.results.build_summary(start, time.monotonic() - t0, status, message, manifests)
        return data

    def announce(self) -> None:
        toggled = sum(c.toggled for c in self.cells)
        what = {
            "toggled": f"{toggled} toggled",
            "all": "all profiled (--all)",
            "cells": f"{toggled} chosen (--cells)",
        }[self.profiling.mode]
        self.progress.say(
            f"{self.opts.notebook}: {len(self.code)} code cells, {what}; kernel "
            f"{self.opts.kernel}, experiments in {self.experiment_dir}"
        )
        spec = (self.nb.metadata.get("kernelspec") or {}).get("name")
        if spec and spec != self.opts.kernel:
            self.progress.say(
                f"(the notebook names the kernel {spec!r}; it runs on {self.opts.kernel!r})"
            )

    async def start_kernel(self) -> None:
        opts = self.opts
        self.client = ScorePNotebookClient(
            self.nb,
            kernel_name=opts.kernel,
            timeout=int(opts.timeout) if opts.timeout else None,
            interrupt_on_timeout=True,
            allow_errors=True,
            startup_timeout=int(opts.startup_timeout),
            shutdown_kernel="graceful",
            resources={"metadata": {"path": str(self.cwd)}},
        )
        self.client.scorep_profiling = self.profiling
        env = {**os.environ, "JPY_SESSION_NAME": self.session}
        from jupyter_client.kernelspec import NoSuchKernel

        try:
            self.client.km = self.client.create_kernel_manager()
            # Unix sockets in a private folder: no TCP port, and no warning about one
            self._ipc_dir = tempfile.TemporaryDirectory(prefix="scorep-run-")
            self.client.km.transport = "ipc"
            self.client.km.ip = str(Path(self._ipc_dir.name) / "kernel")
            await self.client.async_start_new_kernel(cwd=str(self.cwd), env=env)
            self.kernel_started = True
            await self.client.async_start_new_kernel_client()
        except NoSuchKernel:
            raise UsageError(
                f"no kernel named {opts.kernel!r} is installed here: install jupyterlab-scorep "
                "into this environment (it brings the 'scorep-python' kernel spec), or name "
                "an installed kernel with --kernel (jupyter kernelspec list)"
            ) from None

    async def execute(self) -> tuple[str, str]:
        try:
            await self.start_kernel()
        except UsageError:
            raise
        except asyncio.CancelledError:
            return hs.RUN_INTERRUPTED, "stopped while the kernel started"
        except Exception as e:
            return hs.RUN_FAILED, f"the kernel {self.opts.kernel!r} did not start: {e}"
        assert self.client is not None
        status, message = hs.RUN_OK, ""
        for c in self.cells:
            if self.stop_reason:
                status = hs.RUN_INTERRUPTED
                message = message or "stopped by a signal before all cells ran"
                break
            if not c.code.cell.source.strip():
                c.status = hs.CELL_SKIPPED
                continue
            paths: list[str] = []
            for repetition in range(max(1, self.opts.repeat)):
                died, cancelled = await self.execute_once(c)
                paths += [p for p in dict.fromkeys(b["path"] for b in exps.bundles(c.code.cell))]
                c.experiment_paths = list(dict.fromkeys(paths))
                c.status, c.error = self.cell_outcome(c, died, cancelled)
                self.progress.end(c)
                # --repeat: a profiled cell that ended well runs again (each its own run)
                if not c.experiment_paths or c.status != hs.CELL_OK or self.stop_reason:
                    break
                c.repeats = repetition + 1
            if c.status == hs.CELL_DIED:
                return hs.RUN_DIED, f"the kernel died while cell [{c.code.number}] ran"
            if c.status == hs.CELL_TIMEOUT:
                return hs.RUN_TIMEOUT, (
                    f"cell [{c.code.number}] ran longer than --timeout {self.opts.timeout:g} s "
                    "and was interrupted"
                )
            if c.status == hs.CELL_INTERRUPTED or cancelled:
                return hs.RUN_INTERRUPTED, f"interrupted in cell [{c.code.number}]"
            if c.status == hs.CELL_ERROR and not (c.error or {}).get("expected"):
                status = hs.RUN_ERROR
                message = (
                    f"cell [{c.code.number}] raised {c.error['ename'] if c.error else 'an error'}"
                )
                if not self.opts.allow_errors:
                    message += " (later cells not run; --allow-errors runs them)"
                    return status, message
        if self.stop_reason and status == hs.RUN_OK:
            return hs.RUN_INTERRUPTED, "stopped by a signal"
        return status, message

    async def execute_once(self, c: CellRun) -> tuple[bool, bool]:
        """One execution of the cell: (the kernel died, it was cancelled)."""
        assert self.client is not None
        self.client.timed_out = False
        self.progress.start(c)
        t = time.monotonic()
        self._cell_task = asyncio.ensure_future(
            self.client.async_execute_cell(c.code.cell, c.code.index)
        )
        died = cancelled = False
        try:
            await self._cell_task
        except DeadKernelError:
            # nbclient reports a cancelled cell as a dead kernel: ours was the 2nd signal
            died, cancelled = self._signals < 2, self._signals >= 2
        except asyncio.CancelledError:
            cancelled = True
        finally:
            self._cell_task = None
        c.wall_s = time.monotonic() - t
        c.execution_count = c.code.cell.get("execution_count")
        return died, cancelled

    def cell_outcome(self, c: CellRun, died: bool, cancelled: bool) -> tuple[str, dict | None]:
        if died:
            return hs.CELL_DIED, None
        if cancelled:
            return hs.CELL_INTERRUPTED, None
        errors = [o for o in c.code.cell.get("outputs", []) if o.get("output_type") == "error"]
        if not errors:
            return hs.CELL_OK, None
        e = errors[-1]
        error: dict[str, Any] = {
            "ename": str(e.get("ename", "")),
            "evalue": str(e.get("evalue", "")),
            "traceback": hs.strip_ansi("\n".join(e.get("traceback") or [])),
        }
        if self.client is not None and self.client.timed_out:
            return hs.CELL_TIMEOUT, error  # the timeout interrupted it
        if self.stop_reason and error["ename"] == "KeyboardInterrupt":
            return hs.CELL_INTERRUPTED, error  # Ctrl-C interrupted it
        if "raises-exception" in (c.code.cell.metadata.get("tags") or []):
            error["expected"] = True  # nbclient's tag for a cell meant to raise
        return hs.CELL_ERROR, error

    async def shutdown(self) -> None:
        """Wait for the files of the runs (bounded; a second signal skips it), then shut the
        kernel down."""
        if self.client is None:
            return
        paths = [Path(p) for c in self.cells for p in c.experiment_paths]
        if paths and self._signals < 2:
            await asyncio.get_running_loop().run_in_executor(
                None,
                lambda: exps.wait_for_files(
                    paths, self.opts.files_timeout, lambda: self._signals > 1
                ),
            )
        if self._signals > 1:
            self.client.shutdown_kernel = "immediate"
        try:
            if self.client.km is not None:
                await self.client._async_cleanup_kernel()
        except Exception as e:
            self.progress.say(f"(the kernel did not shut down cleanly: {e})")
        if self._ipc_dir is not None:
            self._ipc_dir.cleanup()

    def write_notebook(self) -> None:
        """The executed notebook (``-o``), each profiled cell's text rewritten with its
        finished profile's gist, paths shown relative to where the notebook is written."""
        if self.opts.output is None:
            return
        self.opts.output.parent.mkdir(parents=True, exist_ok=True)
        finish_outputs(self.nb, self.opts.output.parent.absolute())
        nbformat.write(self.nb, str(self.opts.output))
