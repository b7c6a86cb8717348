"""A pool of MPI ranks: the launcher's process (``mpi.launcher``) and the kernel's
connections to its ranks. Each rank connects back to the pool's listener and proves itself
with the pool's token before anything it sends is read (the protocol is pickle: an unproven
peer is dropped unread); every rank's messages go into one inbox, but for clock replies
and node samples, which are kept where they belong.

A pool serves one run (``--fresh``, and always under Score-P, which measures a process
from its start to its end), or is kept by the kernel (``mpi.kept_ranks.KeptRanks``) for
the next MPI cell of the builtin backend: its ranks, their MPI world and their namespaces
then stay up between cells, as ipyparallel's engines do."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import secrets
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from scorep_kernel.mpi import clocks, common
from scorep_kernel.mpi import config as mpi_config
from scorep_kernel.mpi.launcher import Launcher, RanksFailed, exit_status, running_pid
from scorep_kernel.runs.faults import UNCHANGED
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.protocol import AsyncChannel, ChannelClosed

__all__ = ["PoolKey", "Rank", "RankPool", "RanksFailed", "quiet_send", "ranks_words"]

log = logging.getLogger("scorep_kernel")

# How long N ranks may take to start and say Ready (Score-P's bindings compile their
# start-up library in every rank first: ~3 s for 4 ranks on 2 cores here).
STARTUP_TIMEOUT_S = 180.0
# How long kept ranks may take to end when asked (MPI_Finalize on every rank).
CLOSE_WAIT_S = 5.0


@dataclass(frozen=True)
class PoolKey:
    """What a kept pool was started for: a cell asking for anything else gets new ranks."""

    backend: str
    ranks: int
    launcher: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]  # %%scorep_env's variables, given at the launch

    def differs(self, other: PoolKey) -> str:
        """Why ranks started for ``self`` do not serve ``other`` ("" when they do)."""
        if self.ranks != other.ranks:
            return f"the cell asks for {other.ranks} ranks, {self.ranks} were up"
        if self.launcher != other.launcher or self.args != other.args:
            return "the cell's launcher or its arguments changed"
        if self.env != other.env:
            return "%%scorep_env changed the ranks' environment"
        if self.backend != other.backend:
            return "the backend changed"
        return ""


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


class RankPool:
    """N ranks of one launch, connected to the kernel."""

    def __init__(self, n: int, plan: mpi_config.LaunchPlan, key: PoolKey | None = None):
        self.n = n
        self.key = key  # set when the kernel may keep the pool for later cells
        self.launcher = Launcher(plan)
        self.ranks: dict[int, Rank] = {}
        self.inbox: asyncio.Queue[tuple[int, msg.Message | None]] = asyncio.Queue()
        self.remote_samples: list[tuple[int, msg.NodeSamples]] = []
        self.library = ""
        self.epoch_offset = 0
        self.cells = 0  # cells these ranks ran
        # kept ranks: the kernel's values the ranks already hold ({name: value}), as of
        # the end of the last cell; a name still bound to the same object is not sent again
        self.synced: dict[str, object] = {}
        self._token = secrets.token_bytes(common.TOKEN_BYTES)
        self._boot_id = common.boot_id()
        self._hellos: asyncio.Queue[Rank | None] = asyncio.Queue()
        self._sending: set[asyncio.Task] = set()
        self._probe_seq = 0
        self._server: asyncio.AbstractServer | None = None

    # --- starting ------------------------------------------------------------------

    async def start(self, command: list[str], env: dict[str, str], stop: asyncio.Event) -> None:
        """Listen, start the launcher with ``env`` (plus the pool's address and token: in
        the environment, never on a command line), and wait until every rank is Ready;
        RanksFailed (everything stopped) when they do not all come."""
        remote = self.launcher.plan.remote
        host = "0.0.0.0" if remote else "127.0.0.1"
        self._server = await asyncio.start_server(self._on_connect, host=host, port=0)
        port = self._server.sockets[0].getsockname()[1]
        advertised = socket.getfqdn() if remote else "127.0.0.1"
        env = {
            **env,
            common.ENV_ADDRESS: f"{advertised}:{port}",
            common.ENV_TOKEN: self._token.hex(),
        }
        try:
            self.launcher.start(command, env)
            await self._wait_ranks(stop)
        except RanksFailed:
            self.kill()
            await self.reap()
            raise
        finally:
            self._close_server()  # every rank has connected (or none will)

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
        await self._hellos.put(Rank(hello.rank, hello, channel, local=local))

    async def _wait_ranks(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STARTUP_TIMEOUT_S
        ready: set[int] = set()
        while len(ready) < self.n:
            left = deadline - loop.time()
            if left <= 0:
                missing = sorted(set(range(self.n)) - ready)
                raise RanksFailed(
                    f"{len(missing)} of {self.n} ranks did not start within "
                    f"{STARTUP_TIMEOUT_S:.0f} s (missing: {ranks_words(missing)})."
                    + self._where_missing(ready)
                    + self.launcher.words()
                )
            hello_task = asyncio.ensure_future(self._hellos.get())
            inbox_task = asyncio.ensure_future(self.inbox.get())
            exit_task = asyncio.ensure_future(self.launcher.exited())
            stop_task = asyncio.ensure_future(stop.wait())
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
                    raise RanksFailed(f"Rank {rank} ended while starting." + self.launcher.words())
                else:
                    self.unexpected(rank, message)
            elif inbox_task.done() and not inbox_task.cancelled():
                rank, message = inbox_task.result()
                if isinstance(message, msg.Ready):
                    ready.add(rank)
            if exit_task in finished:
                # let late messages in (a Ready in flight) before judging
                await asyncio.sleep(0.05)
                raise RanksFailed(
                    f"The MPI launcher exited (status {exit_status(self.launcher.poll())}) "
                    f"before all {self.n} ranks started." + self._where_missing(ready)
                    + self.launcher.words()
                )  # fmt: skip

    def _where_missing(self, ready: set[int]) -> str:
        """The ranks that never started, by the host each was to run on (as the
        launcher's -H maps them) and the hosts whose ranks did start."""
        missing = sorted(set(range(self.n)) - ready)
        planned = mpi_config.planned_hosts(self.launcher.plan.argv[1:], self.n)
        if not missing or not planned:
            return ""
        by_host: dict[str, list[int]] = {}
        for r in missing:
            by_host.setdefault(planned[r], []).append(r)
        words = "; ".join(f"{ranks_words(rs)} on {host}" for host, rs in by_host.items())
        up = sorted({x.hello.hostname for r, x in self.ranks.items() if r in ready})
        started = f" Ranks started on {', '.join(up)}." if up else " No rank started on any host."
        return f" Never started: {words} (as -H places them).{started}"

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

    # --- while up ------------------------------------------------------------------

    @property
    def all_local(self) -> bool:
        return all(r.local for r in self.ranks.values())

    def local_pids(self) -> list[int]:
        return [r.hello.pid for r in self.ranks.values() if r.local]

    def lost(self) -> str:
        """Why these ranks cannot run another cell ("" while they can): a rank whose
        connection closed or whose process is gone, or the launcher's end."""
        stale: list[tuple[int, msg.Message | None]] = []
        while not self.inbox.empty():  # what came between cells
            stale.append(self.inbox.get_nowait())
        for r, message in stale:
            if message is not None:
                self.unexpected(r, message)
        dead = [
            r for r, x in sorted(self.ranks.items())
            if x.closed or (x.local and not running_pid(x.hello.pid))
        ]  # fmt: skip
        code = self.launcher.poll()
        if not dead and code is None:
            return ""
        words = ", ".join(f"rank {r} ({self.ranks[r].where})" for r in dead) or "the ranks"
        ended = f"; the launcher exited with status {exit_status(code)}" if code is not None else ""
        return f"{words} had ended since the last MPI cell{ended}"

    async def probe_clocks(self) -> None:
        """Clock pairs of the ranks on other hosts (those on this host share its clock)."""
        if not self.epoch_offset:
            self.epoch_offset = clocks.epoch_offset()
        remote = [r for r in self.ranks.values() if not r.local and not r.closed]
        self._probe_seq = await clocks.probe(remote, self._probe_seq)

    def new_run(self) -> None:
        """A run begins on these ranks: its clock pairs and samples are its own."""
        self.remote_samples = []
        for rank in self.ranks.values():
            rank.clock.clear()
            rank.done = None

    def unexpected(self, rank: int, message: msg.Message) -> None:
        if isinstance(message, msg.Stream):
            log.info("rank %s %s: %s", rank, message.name, message.text.rstrip())
        else:
            log.debug("rank %s: %s ignored", rank, message.kind())

    async def gather_from_all(
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
                    f"{ranks_words(missing).capitalize()} did not answer {what} within {timeout:.0f} s."
                    + self.launcher.words()
                ) from None
            if message is None:
                if complete(rank):
                    continue
                raise RanksFailed(
                    f"Rank {rank} ({self.ranks[rank].where}) ended {what}."
                    + await self.launcher.exit_words()
                )
            if type(message) in got:
                got[type(message)][rank] = message
            else:
                self.unexpected(rank, message)
        return got

    def send_all(self, message: msg.Message, ranks: list[int] | None = None) -> None:
        for r in ranks if ranks is not None else list(self.ranks):
            rank = self.ranks[r]
            if not rank.closed and rank.done is None:
                self.later(quiet_send(rank.channel, message))

    def later(self, coro: Any) -> None:
        """Send without waiting (from a signal's callback); the task is kept until done."""
        task = asyncio.ensure_future(coro)
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    # --- ending --------------------------------------------------------------------

    def kill(self) -> None:
        self.launcher.kill(self.local_pids())

    async def reap(self, timeout: float = 5.0) -> int | None:
        code = await self.launcher.reap(self.local_pids(), timeout)
        self._close_server()
        return code

    async def wait_launcher(self, timeout: float) -> int | None:
        return await self.launcher.wait(timeout, self.local_pids())

    def disconnect(self) -> None:
        for rank in self.ranks.values():
            rank.channel.close()
            if rank.reader is not None:
                rank.reader.cancel()

    async def close(self) -> int | None:
        """Kept ranks end: each is asked to (MPI_Finalize, then exit); those still up
        CLOSE_WAIT_S later are killed with the launcher."""
        for rank in self.ranks.values():
            if not rank.closed:
                await quiet_send(rank.channel, msg.Shutdown())
        code = await self.wait_launcher(CLOSE_WAIT_S)
        self.disconnect()
        return code

    def _close_server(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


async def quiet_send(channel: AsyncChannel, message: msg.Message) -> None:
    with contextlib.suppress(ChannelClosed, ConnectionError, OSError):
        await channel.send(message)


def ranks_words(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks)
