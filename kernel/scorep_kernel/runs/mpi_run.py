"""A profiled cell as N MPI ranks, started through the system's MPI launcher.

The run starts ``<launcher> -n N ... python -m scorep_kernel.worker.mpi_rank`` (under
Score-P: ``python -m scorep --mpp=mpi ...``) with the launcher found by ``mpi.config``,
never a launcher of its own. Each rank connects back to a TCP listener of this run
(127.0.0.1, or every interface when ranks may run on other hosts: srun, or hosts named in
the launcher's arguments) and proves itself with the run's 32-byte token before the
kernel reads anything from it (the protocol is pickle: an unproven peer is dropped unread).
The token travels in the launcher's environment, never on a command line.

What a user of ipyparallel's ``%px`` expects, and how it is kept:

- every rank starts from the notebook's namespace: the kernel packs it once and every rank
  unpacks it (through shared memory when all ranks are on this host, the copy mapped by all
  of them; inside the messages otherwise);
- output is labelled by rank and streams live: each line a rank prints reaches the cell as
  it comes, prefixed ``[rank r] ``; displays pass as they are; the last expression's value
  of rank 0 is the cell's result (Out[n], _), the other ranks' are printed labelled;
- rank 0's namespace comes back into the kernel (as from a subprocess worker); mpi4py's
  module and objects stay in the ranks;
- a value gathered from every rank: ``--gather x`` (or ``"gather": ["x"]``) makes ``x`` in
  the notebook the list of every rank's ``x``, in rank order (mpi4py's own
  ``comm.gather(x, root=0)`` on rank 0 comes back with rank 0's namespace too);
- an exception on any rank is shown with its rank; the cell's error is the first rank's
  that raised. Ranks still running ERROR_GRACE_S after it are interrupted (a rank waiting
  in MPI for the one that failed never ends otherwise);
- interrupt: every rank gets a KeyboardInterrupt (a message, so it reaches other hosts
  too); ranks that have not ended their cell INTERRUPT_GRACE_S later (stuck in MPI, where
  Python cannot raise) are killed with the launcher. benchmarks/mpi_cell.py measures the
  time from the interrupt to the reply;
- a rank that dies (its connection closes before its cell ended), or ranks still running
  past the cell's ``timeout``, stop the run: the launcher and every rank are killed, the
  error names the rank(s), and the kernel's namespace is left as it was.

Measurement: Score-P's ranks write one experiment natively (MPI_Finalize unifies them);
the builtin ranks each leave a recording, and ``mpi.merge`` writes one OTF2 archive and one
CUBE4 profile from them, in a process of its own after the reply (as a subprocess worker
writes its files). The ranks' clocks are aligned by the kernel: ranks on this host share
its CLOCK_MONOTONIC; a rank on another host is probed (Cristian's method, CLOCK_PROBES
round trips, the shortest wins) at the run's start and end, and its times are mapped
linearly between the two. System metrics: ``mpi.metrics``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import importlib.util
import json
import logging
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scorep_kernel import experiment, state
from scorep_kernel.mpi import common
from scorep_kernel.mpi import config as mpi_config
from scorep_kernel.runs import scorep_backend
from scorep_kernel.runs.base import CellRequest, RunBase, RunFailed, error_reply
from scorep_kernel.runs.faults import UNCHANGED, signal_name
from scorep_kernel.settings import SettingsError
from scorep_kernel.state import transfer
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.client import _KERNEL_DIR, scorep_arguments
from scorep_kernel.worker.protocol import AsyncChannel, ChannelClosed

log = logging.getLogger("scorep_kernel")

# How long N ranks may take to start and say Ready (Score-P's bindings compile their
# start-up library in every rank first: ~3 s for 4 ranks on 2 cores here).
STARTUP_TIMEOUT_S = 180.0
# After an interrupt, how long the ranks may take to end their cell before all are killed:
# a rank in Python stops within the interpreter's check interval (~5 ms); one blocked in
# MPI never does, so waiting longer only delays the same outcome. 0.5 s keeps "every rank
# stops within 1 s" with room for the kill and the reply.
INTERRUPT_GRACE_S = 0.5
# After a rank raised, how long the others may go on before they are interrupted: a rank
# that waits in MPI for the failed one would wait for ever.
ERROR_GRACE_S = 5.0
# Stopping measurement and writing a rank's recording (millions of events take seconds).
STOP_TIMEOUT_S = 600.0
CLOCK_PROBES = 8
DRIFT_MIN_S = 60.0  # (see MpiRun._clocks)
LABEL = "[rank {rank}] "


class RanksFailed(RunFailed):
    ename = "MPIRankFailed"


@dataclass
class Rank:
    rank: int
    hello: msg.RankHello
    channel: AsyncChannel
    reader: asyncio.Task | None = None
    local: bool = True
    # clock probes: seq -> kernel ns when sent; answered (sent, received, rank ns)
    probes: dict[int, int] = field(default_factory=dict)
    clock: list[tuple[int, int, int]] = field(default_factory=list)
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    done: msg.CellDone | None = None
    closed: bool = False

    @property
    def where(self) -> str:
        return f"pid {self.hello.pid} on {self.hello.hostname}"


class _Stop(Exception):
    """The cell ends early: a rank died, the timeout passed, or ranks ignored the interrupt."""

    def __init__(self, status: str, message: str, ename: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.ename = ename  # the error the cell shows (None: by the status)


def mpi4py_installed() -> bool:
    return importlib.util.find_spec("mpi4py") is not None


def needs_mpi4py(code: str) -> bool:
    return re.search(r"\bmpi4py\b", code) is not None


NO_MPI4PY = (
    "mpi4py is not installed for {python}: {why}. Install it where the kernel runs "
    "(`{python} -m pip install mpi4py`; it builds against your MPI, which needs its "
    "development files: Debian/Ubuntu `apt-get install libopenmpi-dev`)."
)


class MpiRun(RunBase):
    isolation = "subprocess"  # the manifest's word: every rank is a process of its own
    forwards_sigint = True
    holds_worker = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        mpi = self.settings.mpi
        if not isinstance(mpi, mpi_config.MpiSettings):
            mpi = mpi_config.check_mpi(mpi)
        self.mpi: mpi_config.MpiSettings = mpi
        self.n = mpi.ranks
        self.ranks: dict[int, Rank] = {}
        self.proc: subprocess.Popen | None = None
        self.plan: mpi_config.LaunchPlan | None = None
        self.server: asyncio.AbstractServer | None = None
        self.inbox: asyncio.Queue[tuple[int, msg.Message | None]] = asyncio.Queue()
        self.launcher_tail: deque[str] = deque(maxlen=30)
        self.scorep_lines: deque[str] = deque(maxlen=50)
        self._pipes: list[asyncio.Task] = []
        self._token = secrets.token_bytes(common.TOKEN_BYTES)
        self._boot_id = common.boot_id()
        self._hellos: asyncio.Queue[Rank | None] = asyncio.Queue()
        self.in_cell = False
        self.relaying = False
        self.interrupt_requested = False
        self.interrupted_at: float | None = None
        self._line_start: dict[tuple[int, str], bool] = {}
        self.sampler: Any = None
        self.remote_samples: list[tuple[int, msg.NodeSamples]] = []
        self._epoch_offset = 0
        self._probe_seq = 0
        self._sending: set[asyncio.Task] = set()
        self._interrupted = asyncio.Event()
        self.library = ""

    # --- starting the ranks ------------------------------------------------------------

    def tool(self) -> str | None:
        if self.backend != "scorep":
            return None
        return f"Score-P {scorep_backend.version()}".strip()

    def manifest_scorep_env(self) -> dict[str, str]:
        if self.backend != "scorep":
            return super().manifest_scorep_env()
        env = scorep_backend.worker_env(dict(os.environ), self.scorep_env)
        return {k: v for k, v in env.items() if k.startswith("SCOREP_")}

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

    async def begin(self) -> None:
        if self.backend == "scorep" and not mpi4py_installed():
            raise SettingsError(
                NO_MPI4PY.format(
                    python=sys.executable, why="Score-P measures MPI cells through MPI"
                )
            )
        t0 = time.perf_counter()
        reserved = None
        if self.backend == "scorep":  # Score-P is told its directory when its processes start
            reserved = mpi_config_reserve(self.scorep_env, self.settings.experiment_parent)
        # The listener first: its address goes into the ranks' environment.
        forward = [common.ENV_ADDRESS, common.ENV_TOKEN, "PYTHONPATH", "PYTHONUNBUFFERED"]
        env = dict(os.environ)
        if self.backend == "scorep":
            env = scorep_backend.worker_env(env, self.scorep_env)
            assert reserved is not None
            env["SCOREP_EXPERIMENT_DIRECTORY"] = str(reserved[1])
            forward += sorted(k for k in env if k.startswith("SCOREP_"))
        else:
            env.update(self.scorep_env)
        self.plan = mpi_config.launch_command(self.mpi, forward, env)
        host = "0.0.0.0" if self.plan.remote else "127.0.0.1"
        self.server = await asyncio.start_server(self._on_connect, host=host, port=0)
        port = self.server.sockets[0].getsockname()[1]
        advertised = "127.0.0.1" if not self.plan.remote else socket.getfqdn()
        env[common.ENV_ADDRESS] = f"{advertised}:{port}"
        env[common.ENV_TOKEN] = self._token.hex()
        paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if _KERNEL_DIR not in paths:
            env["PYTHONPATH"] = os.pathsep.join([_KERNEL_DIR, *paths])
        env.setdefault("PYTHONUNBUFFERED", "1")
        command = [*self.plan.argv, *self._rank_command()]
        try:
            self.proc = subprocess.Popen(  # noqa: ASYNC220 (a fork and exec: milliseconds)
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=os.getcwd(),
                # Jupyter's interrupt reaches the ranks through the kernel only, mid-cell.
                start_new_session=True,
            )
        except OSError as e:
            await self._close_server()
            raise RanksFailed(f"The MPI launcher could not be started ({e}).") from None
        self._start_pipes()
        try:
            await self._wait_ranks()
        except RunFailed:
            self.kill()
            await self._reap()
            self.finished = True
            raise
        self.add_time("ranks_start", time.perf_counter() - t0)
        try:
            self.create_experiment(reserved)
        except SettingsError:
            self.kill()
            self.finished = True
            raise
        await self._probe_clocks()
        await self._start_measurement()
        self._start_sampler()

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(
                reader.readexactly(len(common.HANDSHAKE) + common.TOKEN_BYTES), 10.0
            )
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, OSError):
            writer.close()
            return
        if not head.startswith(common.HANDSHAKE) or not hmac.compare_digest(
            head[len(common.HANDSHAKE) :], self._token
        ):
            log.warning("MPI run: a connection without the run's token was refused")
            writer.close()
            return
        channel = AsyncChannel(reader, writer)
        try:
            hello = await asyncio.wait_for(channel.recv(), 30.0)
        except (asyncio.TimeoutError, ChannelClosed):
            channel.close()
            return
        if not isinstance(hello, msg.RankHello):
            channel.close()
            return
        local = hello.boot_id == self._boot_id and os.environ.get(common.ENV_AS_REMOTE) != "1"
        rank = Rank(hello.rank, hello, channel, local=local)
        await self._hellos.put(rank)

    async def _wait_ranks(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STARTUP_TIMEOUT_S
        ready: set[int] = set()
        while len(ready) < self.n:
            left = deadline - loop.time()
            if left <= 0:
                missing = sorted(set(range(self.n)) - ready)
                raise RanksFailed(
                    f"{len(missing)} of {self.n} ranks did not start within "
                    f"{STARTUP_TIMEOUT_S:.0f} s (missing: {_ranks(missing)})."
                    + self._launcher_words()
                )
            hello_task = asyncio.ensure_future(self._hellos.get())
            inbox_task = asyncio.ensure_future(self.inbox.get())
            exit_task = asyncio.ensure_future(self._launcher_exit())
            stop_task = asyncio.ensure_future(self._interrupted.wait())
            finished, pending = await asyncio.wait(
                {hello_task, inbox_task, exit_task, stop_task},
                timeout=left,
                return_when=asyncio.FIRST_COMPLETED,
            )
            for task in pending:
                task.cancel()
            if stop_task in finished:
                stopped = RanksFailed(
                    f"Interrupted while {self.n - len(ready)} of {self.n} ranks were still "
                    "starting; the launcher and the ranks were stopped. " + UNCHANGED
                )
                stopped.ename = "KeyboardInterrupt"
                raise stopped
            if hello_task in finished or (hello_task.done() and not hello_task.cancelled()):
                self._add_rank(hello_task.result())
            if inbox_task in finished:
                rank, message = inbox_task.result()
                if isinstance(message, msg.Ready):
                    ready.add(rank)
                elif message is None:
                    raise RanksFailed(f"Rank {rank} ended while starting." + self._launcher_words())
                else:
                    self._unexpected(rank, message)
            elif inbox_task.done() and not inbox_task.cancelled():
                rank, message = inbox_task.result()
                if isinstance(message, msg.Ready):
                    ready.add(rank)
            if exit_task in finished:
                # let late messages in (a Ready in flight) before judging
                await asyncio.sleep(0.05)
                code = self.proc.poll() if self.proc else None
                raise RanksFailed(
                    f"The MPI launcher exited (status {_status(code)}) before all {self.n} "
                    f"ranks started." + self._launcher_words()
                )

    def _add_rank(self, rank: Rank | None) -> None:
        if rank is None:
            return
        if not 0 <= rank.rank < self.n or rank.rank in self.ranks or rank.hello.size != self.n:
            log.warning("MPI run: rank %s of %s refused", rank.rank, rank.hello.size)
            rank.channel.close()
            return
        self.ranks[rank.rank] = rank
        if not self.library and rank.hello.mpi:
            self.library = rank.hello.mpi
        rank.reader = asyncio.ensure_future(self._read(rank))

    async def _read(self, rank: Rank) -> None:
        while True:
            try:
                message = await rank.channel.recv()
            except ChannelClosed:
                rank.closed = True
                await self.inbox.put((rank.rank, None))
                return
            if isinstance(message, msg.NodeSamples):
                self.remote_samples.append((rank.rank, message))
                continue
            if isinstance(message, msg.ClockReply):
                sent = rank.probes.pop(message.seq, None)
                if sent is not None:
                    rank.clock.append((sent, time.perf_counter_ns(), message.t_ns))
                    rank.answered.set()
                continue
            await self.inbox.put((rank.rank, message))

    async def _launcher_exit(self) -> int | None:
        while self.proc is not None and self.proc.poll() is None:  # noqa: ASYNC110 (a Popen)
            await asyncio.sleep(0.05)
        return self.proc.poll() if self.proc else None

    def _start_pipes(self) -> None:
        assert self.proc is not None and self.proc.stdout and self.proc.stderr
        loop = asyncio.get_running_loop()
        for name, pipe in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            os.set_blocking(pipe.fileno(), False)
            self._pipes.append(loop.create_task(self._read_pipe(name, pipe)))

    async def _read_pipe(self, name: str, pipe: Any) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        while True:
            data = await reader.read(65536)
            if not data:
                return
            text = data.decode("utf-8", errors="replace")
            lines = text.splitlines()
            if name == "stderr":
                self.launcher_tail.extend(line for line in lines if line.strip())
            self.scorep_lines.extend(line for line in lines if "[Score-P]" in line)
            if self.relaying:
                # native output of the ranks (C code, subprocesses) and the launcher's own
                self.side.output.stream(name, text)
            else:
                log.info("MPI launcher %s: %s", name, text.rstrip())

    def _launcher_words(self) -> str:
        tail = "\n".join(self.launcher_tail).strip()
        return f"\nThe launcher said:\n{tail}" if tail else ""

    def _unexpected(self, rank: int, message: msg.Message) -> None:
        if isinstance(message, msg.Stream):
            log.info("rank %s %s: %s", rank, message.name, message.text.rstrip())
        else:
            log.debug("rank %s: %s ignored", rank, message.kind())

    async def _gather_from_all(
        self, kinds: tuple[type, ...], timeout: float, what: str
    ) -> dict[type, dict[int, Any]]:
        """The next message of each of ``kinds`` from every rank (a rank may close once it
        sent them all); a rank that closes earlier, or the timeout, is RanksFailed."""
        got: dict[type, dict[int, Any]] = {kind: {} for kind in kinds}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        def complete(rank: int) -> bool:
            return all(rank in got[kind] for kind in kinds)

        while not all(complete(r) for r in self.ranks):
            try:
                rank, message = await asyncio.wait_for(
                    self.inbox.get(), max(0.0, deadline - loop.time())
                )
            except asyncio.TimeoutError:
                missing = sorted(r for r in self.ranks if not complete(r))
                raise RanksFailed(
                    f"{_ranks(missing).capitalize()} did not answer {what} within {timeout:.0f} s."
                    + self._launcher_words()
                ) from None
            if message is None:
                if complete(rank):
                    continue
                raise RanksFailed(
                    f"Rank {rank} ({self.ranks[rank].where}) ended {what}."
                    + await self._exit_words()
                )
            if type(message) in got:
                got[type(message)][rank] = message
            else:
                self._unexpected(rank, message)
        return got

    async def _probe_clocks(self) -> None:
        """Clock pairs of the ranks on other hosts (those on this host share its clock)."""
        if not self._epoch_offset:
            self._epoch_offset = _epoch_offset()
        remote = [r for r in self.ranks.values() if not r.local and not r.closed]
        for rank in remote:
            for _ in range(CLOCK_PROBES):
                seq = self._probe_seq = self._probe_seq + 1
                rank.answered.clear()
                rank.probes[seq] = time.perf_counter_ns()
                try:
                    await rank.channel.send(msg.ClockProbe(seq))
                    await asyncio.wait_for(rank.answered.wait(), 1.0)
                except (ChannelClosed, asyncio.TimeoutError):
                    break

    async def _start_measurement(self) -> None:
        assert self.exp_dir is not None
        measure = self.settings.measure if self.backend == "builtin" else None
        start = msg.StartRun(
            exp_dir=str(self.exp_dir),
            measure=measure,
            env={"SCOREP_EXPERIMENT_DIRECTORY": str(self.exp_dir)},
        )
        with self.timed("measure_start"):
            for rank in self.ranks.values():
                await rank.channel.send(start)
            answers = await self._gather_from_all((msg.RunStarted,), 120.0, "while starting")
            started = answers[msg.RunStarted]
        self.measured = all(s.measured for s in started.values())
        for r, s in sorted(started.items()):
            if s.error:
                self.errors.append(f"rank {r}: measurement could not start: {s.error}")

    def _start_sampler(self) -> None:
        """The kernel's host once (with its ranks); each other host by its first rank."""
        interval = float(self.settings.measure.get("metric_interval", 0.1))
        hosts: dict[str, list[Rank]] = {}
        for r in sorted(self.ranks.values(), key=lambda r: r.rank):
            if not r.local:
                hosts.setdefault(r.hello.boot_id, []).append(r)
        for ranks in hosts.values():
            pids = {str(r.rank): r.hello.pid for r in ranks}
            self._later(_quiet_send(ranks[0].channel, msg.SampleNode(pids, interval)))
        local = {r.rank: r.hello.pid for r in self.ranks.values() if r.local}
        if not local or self.proc is None:
            return
        try:
            from scorep_kernel.mpi.metrics import NodeSampler

            self.sampler = NodeSampler(interval, self.proc.pid, local)
            self.sampler.start()
        except Exception as e:  # the run stands without its charts
            self.sampler = None
            self.errors.append(f"system metrics could not be sampled: {type(e).__name__}: {e}")

    # --- interrupts and ends ------------------------------------------------------------

    def interrupt(self) -> None:
        self.interrupt_requested = True
        self._interrupted.set()  # (ends a wait for the ranks' start)
        if not self.in_cell:
            return
        if self.interrupted_at is None:
            self.interrupted_at = time.monotonic()
        self._send_all(msg.InterruptCell())

    def _send_all(self, message: msg.Message, ranks: list[int] | None = None) -> None:
        for r in ranks if ranks is not None else list(self.ranks):
            rank = self.ranks[r]
            if not rank.closed and rank.done is None:
                self._later(_quiet_send(rank.channel, message))

    def _later(self, coro: Any) -> None:
        """Send without waiting (from a signal's callback); the task is kept until done."""
        task = asyncio.ensure_future(coro)
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

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
        for task in self._pipes:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(task), 0.5)
        await self._close_server()
        return self.proc.poll() if self.proc else None

    async def _close_server(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None

    async def _exit_words(self) -> str:
        code = None
        if self.proc is not None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 2.0
            while self.proc.poll() is None and loop.time() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            code = self.proc.poll()
        words = "" if code is None else f" The launcher exited with status {_status(code)}."
        return words + self._launcher_words()

    # --- one cell -------------------------------------------------------------------------

    async def run_cell(self, request: CellRequest) -> dict[str, Any]:
        shell = self.side.shell
        count = shell.execution_count
        reply, result = await self._run_on_ranks(request, count)
        if request.store_history and not request.silent:
            with contextlib.suppress(Exception):
                shell.history_manager.store_inputs(count, request.code, request.code)
            shell.execution_count += 1
            if result is not None:
                with contextlib.suppress(Exception):
                    shell.displayhook.update_user_ns(result)
        return reply

    def _label(self, rank: int, name: str, text: str) -> str:
        """``[rank r] `` before every line of a rank's stream (a line may come in pieces)."""
        key = (rank, name)
        start = self._line_start.get(key, True)
        prefix = LABEL.format(rank=rank)
        out = []
        for piece in re.split(r"(?<=[\n\r])", text):
            if not piece:
                continue
            if start:
                out.append(prefix)
            out.append(piece)
            start = piece.endswith(("\n", "\r"))
        self._line_start[key] = start
        return "".join(out)

    def _relay(self, rank: int, message: msg.Message, count: int) -> None:
        output = self.side.output
        if isinstance(message, msg.Stream):
            output.stream(message.name, self._label(rank, message.name, message.text))
        elif isinstance(message, msg.Display):
            output.display(message.data, message.metadata, message.transient, message.update)
        elif isinstance(message, msg.ExecuteResult):
            if rank == 0:
                output.execute_result(message.execution_count, message.data, message.metadata)
            else:
                text = str(message.data.get("text/plain", ""))
                output.stream("stdout", self._label(rank, "stdout", f"Out[{count}]: {text}\n"))
        elif isinstance(message, msg.ClearOutput):
            output.clear_output(message.wait)
        elif isinstance(message, msg.Error):
            head = f"\x1b[1m[rank {rank}]\x1b[0m {message.ename}: {message.evalue}"
            output.error(message.ename, f"[rank {rank}] {message.evalue}",
                         [head, *message.traceback])  # fmt: skip
        elif isinstance(message, msg.ImportStarted):
            if rank == 0:
                self.side.import_ahead(message.module)
        elif isinstance(message, msg.InputRequest):
            self._later(
                _quiet_send(
                    self.ranks[rank].channel,
                    msg.InputReply(error="input() is not available in an MPI cell"),
                )
            )
        elif not isinstance(message, (msg.StateReceived, msg.Preloaded)):
            self._unexpected(rank, message)

    def _pack(self) -> state.Packet:
        shell = self.side.shell
        if all(r.local for r in self.ranks.values()):
            # shared memory: every rank maps the one copy (the pull transport lets one
            # reader in, and the ranks are not the kernel's direct children)
            return state.pack(shell.user_ns, transport="shm")
        return state.pack(shell.user_ns, out_of_band_min=common.NO_OUT_OF_BAND)

    async def _run_on_ranks(self, request: CellRequest, count: int) -> tuple[dict[str, Any], Any]:
        output = self.side.output
        shell = self.side.shell
        if needs_mpi4py(request.code) and not mpi4py_installed():
            text = NO_MPI4PY.format(python=sys.executable, why="the cell uses it")
            self.note_status(experiment.STATUS_ERROR)
            self.errors.append(text)
            output.error("ModuleNotFoundError", text, [text])
            return error_reply("ModuleNotFoundError", text, [text], count), None
        with self.timed("pack"):
            packet = self._pack()
        for name, reason in packet.skipped.items():
            output.stream(
                "stderr",
                f"Warning: {name!r} cannot be sent to the MPI ranks ({reason}); it keeps its "
                "value here, but using it in this profiled cell raises an error.\n",
            )
        index = self.add_cell(request.cell_id, count, request.code)
        cell_start = time.perf_counter()
        self.last_cell_index, self.last_cell_wall = index, 0.0
        if self.interrupt_requested:
            packet.release()
            self.interrupt_requested = False
            self.note_status(experiment.STATUS_INTERRUPTED)
            text = "KeyboardInterrupt: interrupted before the profiled cell started"
            output.error("KeyboardInterrupt", "", [text])
            return error_reply("KeyboardInterrupt", "", [text], count), None
        in_band = not all(r.local for r in self.ranks.values())
        cell = msg.Cell(
            code=request.code,
            label=f"cell [{count}]",
            execution_count=count,
            cell_id=request.cell_id,
            state=packet.header,
            colors=getattr(shell, "colors", None),
            last=request.last,
        )
        setup = msg.RankSetup(list(self.mpi.gather), in_band)
        for rank in self.ranks.values():
            rank.done = None
        self._line_start.clear()
        self.interrupted_at = None
        try:
            self.in_cell = self.relaying = True
            for rank in self.ranks.values():
                await rank.channel.send(setup)
                await rank.channel.send(cell)
            first_error = await self._until_done(count)
        except _Stop as stop:
            packet.release()
            return await self._stopped(stop, count, index, cell_start), None
        except ChannelClosed:
            packet.release()
            lost = _Stop(
                experiment.STATUS_CRASHED, "A rank's connection closed." + await self._exit_words()
            )
            return await self._stopped(lost, count, index, cell_start), None
        finally:
            self.in_cell = self.relaying = False
            self.interrupt_requested = False
        packet.release()
        done = {r: rank.done for r, rank in self.ranks.items()}
        assert all(d is not None for d in done.values())
        # The run's wall time of the cell: the slowest rank.
        self.last_cell_wall = max(float(d.wall_s or 0.0) for d in done.values() if d) or (
            time.perf_counter() - cell_start
        )
        never_ran = [r for r, d in done.items() if d is not None and d.state is None]
        if never_ran:
            d0 = done[never_ran[0]]
            assert d0 is not None
            self.note_status(experiment.STATUS_ERROR)
            return error_reply(d0.ename, f"[rank {never_ran[0]}] {d0.evalue}", d0.traceback,
                               count), None  # fmt: skip
        try:
            with self.timed("unpack"):
                unpacked = {r: state.unpack(d.state) for r, d in done.items() if d and d.state}
        except Exception as e:
            message = (
                f"The namespace could not be brought back from the MPI ranks "
                f"({type(e).__name__}: {e}). {UNCHANGED}"
            )
            return await self._stopped(_Stop(experiment.STATUS_CRASHED, message), count, index,
                                       cell_start), None  # fmt: skip
        for rank in self.ranks.values():
            await _quiet_send(rank.channel, msg.StateReceived())
        with self.timed("apply"):
            state.apply(
                shell.user_ns,
                unpacked[0],
                previous_names=packet.names,
                environ_ignore=common.ENVIRON_IGNORE,
                keep_paths=transfer.KEEP_PATHS,
            )
            result = shell.user_ns.pop(transfer.RESULT_NAME, None)
            self._gathered(unpacked, output)
        d0 = done[0]
        assert d0 is not None
        for name, reason in d0.skipped.items():
            if (
                name not in packet.skipped
                and name != transfer.RESULT_NAME
                and (reason != "left out on request")
            ):
                output.stream(
                    "stderr",
                    f"Warning: {name!r} was made on rank 0 but cannot be brought back to the "
                    f"notebook ({reason}).\n",
                )
        interrupted = any(d and d.interrupted for d in done.values())
        failed = [r for r, d in done.items() if d and d.status == "error" and not d.interrupted]
        if interrupted:
            status = experiment.STATUS_INTERRUPTED
        elif failed:
            status = experiment.STATUS_ERROR
        else:
            status = experiment.STATUS_OK
        self.note_status(status)
        if status == experiment.STATUS_OK:
            return {"status": "ok", "execution_count": count, "user_expressions": {},
                    "payload": []}, result  # fmt: skip
        if status == experiment.STATUS_INTERRUPTED and not failed:
            return error_reply("KeyboardInterrupt", "", ["KeyboardInterrupt"], count), result
        r = first_error if first_error in failed else failed[0]
        d = done[r]
        assert d is not None
        return error_reply(d.ename or "Error", f"[rank {r}] {d.evalue}", d.traceback,
                           count), result  # fmt: skip

    def _gathered(self, unpacked: dict[int, Any], output: Any) -> None:
        """``gather`` names: the list of every rank's value, in rank order."""
        ns = self.side.shell.user_ns
        for name in self.mpi.gather:
            values = []
            missing = []
            for r in range(self.n):
                got = unpacked.get(r)
                space = got.namespace if got is not None else {}
                if name in space:
                    values.append(space[name])
                else:
                    values.append(None)
                    missing.append(r)
            if missing:
                output.stream(
                    "stderr",
                    f"Warning: {name!r} is not defined (or cannot travel) on "
                    f"{_ranks(missing)}; None stands in for it in the gathered list.\n",
                )
            ns[name] = values

    async def _until_done(self, count: int) -> int | None:
        """Relay every rank's output until all ended their cell; the first rank that
        raised (or None). _Stop when the cell must end early."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        first_error: int | None = None
        error_at: float | None = None
        interrupted_for_error = False
        while any(rank.done is None for rank in self.ranks.values()):
            now = loop.time()
            waits = []
            if self.mpi.timeout is not None:
                waits.append(started + self.mpi.timeout - now)
            if error_at is not None and not interrupted_for_error:
                waits.append(error_at + ERROR_GRACE_S - now)
            if self.interrupted_at is not None:
                waits.append(self.interrupted_at + INTERRUPT_GRACE_S - time.monotonic())
            timeout = max(0.0, min(waits)) if waits else None
            try:
                rank, message = await asyncio.wait_for(self.inbox.get(), timeout)
            except asyncio.TimeoutError:
                running = [r for r, x in self.ranks.items() if x.done is None]
                if self.interrupted_at is not None and (
                    time.monotonic() >= self.interrupted_at + INTERRUPT_GRACE_S
                ):
                    if interrupted_for_error and first_error is not None:
                        failed = self.ranks[first_error].done
                        assert failed is not None
                        raise _Stop(
                            experiment.STATUS_ERROR,
                            f"Rank {first_error} raised {failed.ename}: {failed.evalue}; "
                            f"{_ranks(running)} still ran {ERROR_GRACE_S:g} s later and did not "
                            "stop when interrupted (waiting in MPI for the failed rank?), so "
                            f"every rank was stopped. {UNCHANGED}",
                            failed.ename or None,
                        ) from None
                    raise _Stop(
                        experiment.STATUS_INTERRUPTED,
                        f"{_ranks(running).capitalize()} did not stop within "
                        f"{INTERRUPT_GRACE_S:g} s of the interrupt (blocked in MPI, waiting for "
                        f"another rank?), so every rank was stopped. {UNCHANGED}",
                    ) from None
                if self.mpi.timeout is not None and loop.time() >= started + self.mpi.timeout:
                    raise _Stop(
                        experiment.STATUS_CRASHED,
                        f"{_ranks(running).capitalize()} still ran after the cell's timeout of "
                        f"{self.mpi.timeout:g} s, so every rank was stopped. {UNCHANGED}",
                    ) from None
                if error_at is not None and not interrupted_for_error:
                    # the ranks that go on after another raised: interrupt them
                    interrupted_for_error = True
                    self.interrupted_at = time.monotonic()
                    self._send_all(msg.InterruptCell(), running)
                continue
            if message is None:
                dead = self.ranks[rank]
                if dead.done is not None:
                    continue  # it ended its cell before; its end shows later, if at all
                raise _Stop(
                    experiment.STATUS_CRASHED,
                    f"Rank {rank} ({dead.where}) ended before the cell did, so the run was "
                    f"stopped. {UNCHANGED}" + await self._exit_words_after_kill(),
                )
            if isinstance(message, msg.CellDone):
                self.ranks[rank].done = message
                if message.status == "error" and not message.interrupted and first_error is None:
                    first_error, error_at = rank, loop.time()
                continue
            self._relay(rank, message, count)
        return first_error

    async def _exit_words_after_kill(self) -> str:
        """The launcher's words about a dead rank: give it a moment to say them."""
        await asyncio.sleep(0.2)
        return self._launcher_words()

    async def _stopped(self, stop: _Stop, count: int, index: int, cell_start: float) -> dict:
        """The cell ended early: everything is stopped, the namespace stays as it was."""
        self.kill()
        await self._reap()
        self.note_status(stop.status)
        self.errors.append(stop.message)
        self.last_cell_wall = time.perf_counter() - cell_start
        self.finished = True
        self._write_metrics()
        self.finish_manifest_without_files()
        output = self.side.output
        output.display(self.bundle(index, stop.status, self.last_cell_wall))
        ename = stop.ename or (
            "KeyboardInterrupt"
            if stop.status == experiment.STATUS_INTERRUPTED
            else RanksFailed.ename
        )
        output.error(ename, stop.message, [stop.message])
        return error_reply(ename, stop.message, [stop.message], count)

    # --- the end of the run -------------------------------------------------------------------

    def bundle(self, cell_index: int, status: str, wall_s: float | None, note: str | None = None):
        where = f"{self.n} MPI rank{'s' if self.n != 1 else ''}"
        hosts = {r.hello.hostname for r in self.ranks.values()}
        if len(hosts) > 1:
            where += f" on {len(hosts)} hosts"
        out = super().bundle(
            cell_index, status, wall_s, f"Ran as {where}." + (f" {note}" if note else "")
        )
        from scorep_kernel.runs.display import MIME_TYPE

        out[MIME_TYPE]["mpi"] = {"ranks": self.n, "hosts": sorted(hosts)}
        return out

    def _mpi_manifest(self) -> dict[str, Any]:
        hosts: dict[str, list[int]] = {}
        for r in sorted(self.ranks):
            hosts.setdefault(self.ranks[r].hello.hostname, []).append(r)
        plan = self.plan
        return {
            "ranks": self.n,
            "launcher": plan.launcher if plan else None,
            "launcher_kind": plan.kind if plan else None,
            "launcher_args": list(plan.argv[1:]) if plan else [],
            "library": self.library,
            "hosts": hosts,
            "gather": list(self.mpi.gather),
            "timeout": self.mpi.timeout,
        }

    def _write_metrics(self) -> None:
        """metrics.json + .npz: the kernel's host and the other hosts' samples, on the
        kernel's epoch clock."""
        if self.exp_dir is None:
            return
        sampler, self.sampler = self.sampler, None
        remote, self.remote_samples = self.remote_samples, []
        if sampler is None and not remote:
            return
        try:
            import pickle

            from scorep_kernel.formats.recording import MetricSamples
            from scorep_kernel.mpi.metrics import combine, renamed

            parts = []
            if sampler is not None:
                parts.append((sampler.stop(), self._epoch_offset))
            clocks = self._clocks()
            for rank, message in remote:
                samples = pickle.loads(message.samples)
                clock = clocks.get(rank, {"slope": 1.0, "offset_ns": 0.0})
                t = np.asarray(samples.times, np.float64) * clock["slope"] + clock["offset_ns"]
                samples = MetricSamples(samples.series, np.rint(t).astype(np.int64),
                                        samples.values, samples.interval_s, samples.notes)  # fmt: skip
                parts.append((renamed(samples, message.host), self._epoch_offset))
            series, t, values = combine(parts)
            interval = parts[0][0].interval_s
            notes = [n for samples, _ in parts for n in samples.notes]
            experiment.write_metrics(self.exp_dir, series, t, values, interval_s=interval,
                                     notes=sorted(set(notes)))  # fmt: skip
            experiment.update_manifest(
                self.exp_dir,
                files={
                    "metrics": experiment.METRICS_SCHEMA,
                    "metrics_data": experiment.METRICS_DATA,
                },
            )
        except Exception as e:
            self.errors.append(f"writing the metric samples failed: {type(e).__name__}: {e}")

    async def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        extra: dict[str, Any] = {"mpi": self._mpi_manifest()}
        with contextlib.suppress(Exception):
            await self._probe_clocks()
        # the clocks of ranks on other hosts, as mapped onto the kernel's (kernel ns =
        # slope * rank ns + offset_ns); ranks on the kernel's host share its clock
        clocks = self._clocks()
        extra["mpi"]["clocks"] = {
            str(r): {**clocks[r], "probes": len(x.clock)}
            for r, x in sorted(self.ranks.items())
            if not x.local
        }
        try:
            for rank in self.ranks.values():
                await rank.channel.send(msg.FinishRun())
            answers = await self._gather_from_all(
                (msg.RunStopped, msg.FilesDone), STOP_TIMEOUT_S, "while stopping"
            )
            stopped = answers[msg.RunStopped]
            self.events = sum(int(s.events or 0) for s in stopped.values()) or None
            top: dict[str, float] = {}
            for s in stopped.values():
                for name, seconds in s.top:
                    top[name] = top.get(name, 0.0) + float(seconds)
            self.top = sorted(top.items(), key=lambda kv: -kv[1])[:5]
            for r, s in sorted(stopped.items()):
                if s.error:
                    self.errors.append(f"rank {r}: stopping the measurement failed: {s.error}")
            notes = stopped.get(0)
            if notes is not None and notes.notes:
                extra["measurement"] = dict(notes.notes)
            files = answers[msg.FilesDone]
            failed = [f"rank {r}: {e}" for r, f in sorted(files.items()) for e in f.errors]
            extra["_files"] = {r: f.status for r, f in files.items()}
            self.errors += failed
        except RunFailed as e:
            self.note_status(experiment.STATUS_CRASHED)
            self.errors.append(f"The MPI ranks failed while stopping the measurement: {e.message}")
            extra["files_status"] = experiment.FILES_FAILED
        statuses = extra.pop("_files", {})
        self._write_metrics()
        if (
            self.backend == "builtin"
            and "files_status" not in extra
            and any(s != experiment.FILES_READY for s in statuses.values())
        ):
            extra["files_status"] = experiment.FILES_FAILED
        self.finish_manifest(extra)
        self.side.output.display(
            self.bundle(self.last_cell_index, self.status, self.last_cell_wall)
        )
        self.side.tasks.spawn(self._files(), "writing an MPI run's files")

    def _clocks(self) -> dict[int, dict[str, float]]:
        """Per rank: rank ns -> kernel ns as ``kernel = slope * rank + offset_ns``, and the
        round trip of the probe it rests on (``rtt_ns``: the offset is good to half of it).

        The offset is the midpoint of the shortest round trip (Cristian). A rate (slope) is
        estimated from the best probes at the run's start and end only when they are more
        than DRIFT_MIN_S apart: hosts' clocks drift by ~10 ppm, so over a shorter run the
        drift stays below the probes' own error (here ~0.1 ms of round trip on a busy
        machine: a slope from probes 1 s apart was off by 1e-4, i.e. 0.5 s at t = 1.4e13)."""
        out: dict[int, dict[str, float]] = {}
        for r, rank in self.ranks.items():
            pairs = list(rank.clock)
            if rank.local or not pairs:
                out[r] = {"slope": 1.0, "offset_ns": 0.0, "rtt_ns": 0.0}
                continue
            best = [
                min(phase, key=lambda p: p[1] - p[0])
                for phase in (pairs[:CLOCK_PROBES], pairs[CLOCK_PROBES:])
                if phase
            ]
            (k0, r0), (k1, r1) = [((b[0] + b[1]) / 2, b[2]) for b in (best[0], best[-1])]
            slope = 1.0
            if r1 - r0 > DRIFT_MIN_S * 1e9:
                slope = (k1 - k0) / (r1 - r0)
                if not 1 - 1e-4 < slope < 1 + 1e-4:
                    slope = 1.0
            anchor = min(best, key=lambda p: p[1] - p[0])
            k, t = (anchor[0] + anchor[1]) / 2, anchor[2]
            out[r] = {
                "slope": slope,
                "offset_ns": k - slope * t,
                "rtt_ns": float(anchor[1] - anchor[0]),
            }
        return out

    async def _files(self) -> None:
        assert self.exp_dir is not None
        try:
            code = await self._wait_launcher(600.0)
            if self.backend == "scorep":
                self._note_scorep_files(code)
                return
            manifest = experiment.read_manifest(self.exp_dir)
            if manifest.get("files_status") != experiment.FILES_PENDING:
                return
            ranks_dir = self.exp_dir / common.RANKS_DIR
            ranks_dir.mkdir(exist_ok=True)
            (ranks_dir / common.RANKS_JSON).write_text(json.dumps({
                "epoch_offset_ns": self._epoch_offset,
                "ranks": [
                    {"rank": r, "hostname": x.hello.hostname, "boot_id": x.hello.boot_id,
                     "pid": x.hello.pid, "clock": self._clocks()[r]}
                    for r, x in sorted(self.ranks.items())
                ],
            }))  # fmt: skip
            merge = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "scorep_kernel.mpi.merge", str(self.exp_dir),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(
                    [_KERNEL_DIR, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
                )},
            )  # fmt: skip
            _, err = await merge.communicate()
            if merge.returncode:
                manifest = experiment.read_manifest(self.exp_dir)
                if manifest.get("files_status") == experiment.FILES_PENDING:
                    tail = err.decode(errors="replace").strip().splitlines()[-5:]
                    experiment.update_manifest(
                        self.exp_dir,
                        files_status=experiment.FILES_FAILED,
                        errors=[f"merging the ranks' recordings failed (status {merge.returncode})",
                                *tail],
                    )  # fmt: skip
        except BaseException as e:
            with contextlib.suppress(Exception):
                manifest = experiment.read_manifest(self.exp_dir)
                if manifest.get("files_status") == experiment.FILES_PENDING:
                    experiment.update_manifest(
                        self.exp_dir,
                        files_status=experiment.FILES_FAILED,
                        errors=[
                            f"the kernel stopped waiting for the files ({type(e).__name__}: {e})"
                        ],
                    )
            raise
        finally:
            for rank in self.ranks.values():
                rank.channel.close()
                if rank.reader is not None:
                    rank.reader.cancel()

    async def _wait_launcher(self, timeout: float) -> int | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.proc is not None and self.proc.poll() is None and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        return await self._reap()

    def _note_scorep_files(self, code: int | None) -> None:
        assert self.exp_dir is not None
        files = {
            name: filename
            for name, filename in (
                ("otf2", experiment.OTF2_ANCHOR),
                ("cubex", experiment.CUBEX),
                ("scorep_config", scorep_backend.CONFIG_FILE),
                ("scorep_manifest", scorep_backend.MANIFEST_MD),
            )
            if (self.exp_dir / filename).exists()
        }
        errors = []
        ready = "otf2" in files or "cubex" in files
        if not ready:
            errors.append(f"Score-P wrote neither a trace nor a profile (launcher status {code})")
        env = scorep_backend.worker_env(dict(os.environ), self.scorep_env)
        experiment.update_manifest(
            self.exp_dir,
            files=files,
            files_status=experiment.FILES_READY if ready else experiment.FILES_FAILED,
            errors=errors,
            measurement={
                "tool": self.tool(),
                "scorep_config": scorep_backend.read_config(self.exp_dir),
                "scorep_messages": scorep_backend.scorep_messages(self.scorep_lines),
                "notes": scorep_backend.explain([*self.scorep_lines, *self.launcher_tail], env),
            },
        )

    async def abort(self) -> None:
        self._write_metrics()
        self.mark_aborted()
        self.kill()
        await self._reap()
        self.finish_manifest_without_files()


def mpi_config_reserve(scorep_env: dict[str, str], parent: str | None):
    from scorep_kernel.runs.base import reserve_experiment

    reserved = reserve_experiment(scorep_env, parent)
    scorep_backend.make_parent(reserved[1])
    return reserved


async def _quiet_send(channel: AsyncChannel, message: msg.Message) -> None:
    with contextlib.suppress(ChannelClosed, ConnectionError, OSError):
        await channel.send(message)


def _ranks(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks)


def _status(code: int | None) -> str:
    if code is None:
        return "unknown"
    if code < 0:
        return f"{code} ({signal_name(-code)})"
    return str(code)


def _epoch_offset() -> int:
    """time.time_ns() - time.perf_counter_ns(), the least jittery of a few readings."""
    best: tuple[int, int] | None = None
    for _ in range(5):
        a = time.perf_counter_ns()
        w = time.time_ns()
        b = time.perf_counter_ns()
        if best is None or b - a < best[0]:
            best = (b - a, w - (a + b) // 2)
    assert best is not None
    return best[1]
