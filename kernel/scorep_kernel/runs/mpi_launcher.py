"""The MPI launcher of a run, as a process the kernel owns: the command of the ranks, the
launcher's output (relayed live in a cell, kept for error messages), stopping it and every
rank at once, and what it said when it failed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections import deque
from typing import TYPE_CHECKING

import psutil

from scorep_kernel.mpi import common
from scorep_kernel.mpi import config as mpi_config
from scorep_kernel.runs.base import RunBase
from scorep_kernel.runs.faults import signal_name
from scorep_kernel.worker.client import read_pipes, scorep_arguments

if TYPE_CHECKING:
    from scorep_kernel.runs.mpi_rank_links import Rank

log = logging.getLogger("scorep_kernel")
# How much longer than the launcher the ranks may take to end once stopped (a bound, not a
# wait: the usual case is milliseconds).
RANK_EXIT_WAIT_S = 10.0


class MpiLauncher(RunBase):
    """The launcher's side of ``MpiRun`` (whose ``__init__`` sets these)."""

    proc: subprocess.Popen | None
    plan: mpi_config.LaunchPlan | None
    server: asyncio.AbstractServer | None
    ranks: dict[int, Rank]
    launcher_tail: deque[str]
    scorep_lines: deque[str]
    _pipes: list[asyncio.Task]
    relaying: bool

    def _rank_command(self) -> list[str]:
        python = sys.executable
        if self.backend == "scorep":
            args = scorep_arguments(self.binding_args)
            if not any(a.startswith("--mpp") for a in args):
                args.insert(0, "--mpp=mpi")
            from scorep_kernel.worker.client import python_instrumented

            extra = [] if python_instrumented(self.binding_args) else ["--no-python-instrumenter"]
            return [python, "-m", "scorep", *args, common.RANK_FILE,
                    "--backend", "scorep", *extra]  # fmt: skip
        return [python, "-m", "scorep_kernel.worker.mpi_rank"]

    def _start_pipes(self) -> None:
        assert self.proc is not None
        self._pipes.extend(read_pipes(self.proc, self._on_pipe_text))

    def _on_pipe_text(self, name: str, text: str) -> None:
        lines = text.splitlines()
        if name == "stderr":
            self.launcher_tail.extend(line for line in lines if line.strip())
        self.scorep_lines.extend(line for line in lines if "[Score-P]" in line)
        if self.relaying:
            # native output of the ranks (C code, subprocesses) and the launcher's own
            self.side.output.stream(name, text)
        else:
            log.info("MPI launcher %s: %s", name, text.rstrip())

    async def _launcher_exit(self) -> int | None:
        while self.proc is not None and self.proc.poll() is None:  # noqa: ASYNC110 (a Popen)
            await asyncio.sleep(0.05)
        return self.proc.poll() if self.proc else None

    def _launcher_words(self) -> str:
        tail = "\n".join(self.launcher_tail).strip()
        return f"\nThe launcher said:\n{tail}" if tail else ""

    async def _exit_words(self) -> str:
        code = None
        if self.proc is not None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 2.0
            while self.proc.poll() is None and loop.time() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            code = self.proc.poll()
        words = "" if code is None else f" The launcher exited with status {exit_status(code)}."
        return words + self._launcher_words()

    async def _exit_words_after_kill(self) -> str:
        """The launcher's words about a dead rank: give it a moment to say them."""
        await asyncio.sleep(0.2)
        return self._launcher_words()

    def kill(self) -> None:
        """Stop the launcher and every rank at once (SIGKILL to the launcher's session,
        SIGTERM first to srun, which then ends the step on every node)."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            if self.plan is not None and self.plan.kind == "srun":
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        for rank in self.ranks.values():
            if rank.local:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(rank.hello.pid, signal.SIGKILL)

    async def _reap(self, timeout: float = 5.0) -> int | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.proc is not None and self.proc.poll() is None and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        await self._ranks_gone(deadline + RANK_EXIT_WAIT_S)
        for task in self._pipes:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(task), 0.5)
        await self._close_server()
        return self.proc.poll() if self.proc else None

    async def _ranks_gone(self, deadline: float) -> None:
        """Wait (bounded) until this host's ranks have ended. A SIGKILL is sent, not done:
        a rank still tearing down (its pages, MPI's shared memory) runs on for a moment,
        orphaned once the launcher is dead, and nothing tells the kernel when it is gone;
        a reply saying every rank was stopped while one still ran was seen under load."""
        loop = asyncio.get_running_loop()
        pids = [rank.hello.pid for rank in self.ranks.values() if rank.local]
        while pids and loop.time() < deadline:
            pids = [pid for pid in pids if _running(pid)]
            if pids:
                await asyncio.sleep(0.02)
        if pids:
            log.warning("MPI ranks still running after being stopped: pids %s", pids)

    async def _close_server(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None

    async def _wait_launcher(self, timeout: float) -> int | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.proc is not None and self.proc.poll() is None and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        return await self._reap()


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:  # gone (or not ours to see)
        return False


def exit_status(code: int | None) -> str:
    if code is None:
        return "unknown"
    if code < 0:
        return f"{code} ({signal_name(-code)})"
    return str(code)
