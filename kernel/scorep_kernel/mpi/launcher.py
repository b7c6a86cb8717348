"""The MPI launcher of a set of ranks, as a process the kernel owns: starting it, its
output (relayed live while a cell runs, kept for error messages), stopping it and every
rank at once, and what it said when it failed. ``mpi.rank_pool.RankPool`` holds one."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Iterable

import psutil

from scorep_kernel.mpi import common
from scorep_kernel.mpi import config as mpi_config
from scorep_kernel.runs.faults import RunFailed, signal_name
from scorep_kernel.worker.client import read_pipes, scorep_arguments

log = logging.getLogger("scorep_kernel")
# How much longer than the launcher the ranks may take to end once stopped (a bound, not a
# wait: the usual case is milliseconds).
RANK_EXIT_WAIT_S = 10.0


class RanksFailed(RunFailed):
    ename = "MPIRankFailed"


def rank_command(backend: str, binding_args: list[str]) -> list[str]:
    """The Python command every rank runs (after the launcher's part)."""
    python = sys.executable
    if backend == "scorep":
        args = scorep_arguments(binding_args)
        if not any(a.startswith("--mpp") for a in args):
            args.insert(0, "--mpp=mpi")
        from scorep_kernel.worker.client import python_instrumented

        extra = [] if python_instrumented(binding_args) else ["--no-python-instrumenter"]
        return [python, "-m", "scorep", *args, common.RANK_FILE,
                "--backend", "scorep", *extra]  # fmt: skip
    return [python, "-m", "scorep_kernel.mpi.rank"]


class Launcher:
    """``mpirun``/``srun``/``mpiexec`` as started for one set of ranks."""

    def __init__(self, plan: mpi_config.LaunchPlan):
        self.plan = plan
        self.proc: subprocess.Popen | None = None
        self.tail: deque[str] = deque(maxlen=30)  # its stderr's last lines
        self.scorep_lines: deque[str] = deque(maxlen=50)
        # where the ranks' native output and the launcher's own go while a cell runs
        self.relay: Callable[[str, str], None] | None = None
        self._pipes: list[asyncio.Future[None]] = []

    def start(self, command: list[str], env: dict[str, str]) -> None:
        try:
            self.proc = subprocess.Popen(  # a sync def: a fork and exec, milliseconds
                [*self.plan.argv, *command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=os.getcwd(),
                # Jupyter's interrupt reaches the ranks through the kernel only, mid-cell.
                start_new_session=True,
            )
        except OSError as e:
            raise RanksFailed(f"The MPI launcher could not be started ({e}).") from None
        self._pipes.extend(read_pipes(self.proc, self._on_pipe_text).done)

    def _on_pipe_text(self, name: str, text: str) -> None:
        lines = text.splitlines()
        if name == "stderr":
            self.tail.extend(line for line in lines if line.strip())
        self.scorep_lines.extend(line for line in lines if "[Score-P]" in line)
        if self.relay is not None:
            # native output of the ranks (C code, subprocesses) and the launcher's own
            self.relay(name, text)
        else:
            log.info("MPI launcher %s: %s", name, text.rstrip())

    def poll(self) -> int | None:
        return self.proc.poll() if self.proc is not None else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    async def exited(self) -> int | None:
        while self.running():  # noqa: ASYNC110 (a Popen)
            await asyncio.sleep(0.05)
        return self.poll()

    def words(self) -> str:
        tail = "\n".join(self.tail).strip()
        return f"\nThe launcher said:\n{tail}" if tail else ""

    async def exit_words(self) -> str:
        code = None
        if self.proc is not None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 2.0
            while self.running() and loop.time() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            code = self.poll()
        words = "" if code is None else f" The launcher exited with status {exit_status(code)}."
        return words + self.words()

    async def words_after_kill(self) -> str:
        """The launcher's words about a dead rank: give it a moment to say them."""
        await asyncio.sleep(0.2)
        return self.words()

    def kill(self, local_pids: Iterable[int]) -> None:
        """Stop the launcher and every rank at once (SIGKILL to the launcher's session,
        SIGTERM first to srun, which then ends the step on every node)."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            if self.plan.kind == "srun":
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        for pid in local_pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    async def reap(self, local_pids: list[int], timeout: float = 5.0) -> int | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.running() and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        await _ranks_gone(local_pids, deadline + RANK_EXIT_WAIT_S)
        for task in self._pipes:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(task), 0.5)
        return self.poll()

    async def wait(self, timeout: float, local_pids: list[int]) -> int | None:
        """Until the launcher ends by itself (killed past ``timeout``)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.running() and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        if self.running():
            self.kill(local_pids)
        return await self.reap(local_pids)


async def _ranks_gone(pids: list[int], deadline: float) -> None:
    """Wait (bounded) until this host's ranks have ended. A SIGKILL is sent, not done:
    a rank still tearing down (its pages, MPI's shared memory) runs on for a moment,
    orphaned once the launcher is dead, and nothing tells the kernel when it is gone;
    a reply saying every rank was stopped while one still ran was seen under load."""
    loop = asyncio.get_running_loop()
    while pids and loop.time() < deadline:
        pids = [pid for pid in pids if running_pid(pid)]
        if pids:
            await asyncio.sleep(0.02)
    if pids:
        log.warning("MPI ranks still running after being stopped: pids %s", pids)


def running_pid(pid: int) -> bool:
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
