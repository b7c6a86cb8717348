"""The kernel's connections to an MPI run's ranks: each rank connects back to the run's
listener and proves itself with the run's token before anything it sends is read (the
protocol is pickle: an unproven peer is dropped unread); every rank's messages go into one
inbox, but for clock replies and node samples, which are kept where they belong."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any

from scorep_kernel.mpi import common
from scorep_kernel.runs import mpi_clocks
from scorep_kernel.runs.base import RunFailed
from scorep_kernel.runs.faults import UNCHANGED
from scorep_kernel.runs.mpi_launcher import MpiLauncher, exit_status
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.protocol import AsyncChannel, ChannelClosed

log = logging.getLogger("scorep_kernel")

# How long N ranks may take to start and say Ready (Score-P's bindings compile their
# start-up library in every rank first: ~3 s for 4 ranks on 2 cores here).
STARTUP_TIMEOUT_S = 180.0


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


class RankLinks(MpiLauncher):
    """The ranks' side of ``MpiRun`` (whose ``__init__`` sets these)."""

    n: int
    inbox: asyncio.Queue[tuple[int, msg.Message | None]]
    remote_samples: list[tuple[int, msg.NodeSamples]]
    library: str
    _token: bytes
    _boot_id: str
    _hellos: asyncio.Queue[Rank | None]
    _interrupted: asyncio.Event
    _sending: set[asyncio.Task]
    _epoch_offset: int
    _probe_seq: int

    async def _probe_clocks(self) -> None:
        """Clock pairs of the ranks on other hosts (those on this host share its clock)."""
        if not self._epoch_offset:
            self._epoch_offset = mpi_clocks.epoch_offset()
        remote = [r for r in self.ranks.values() if not r.local and not r.closed]
        self._probe_seq = await mpi_clocks.probe(remote, self._probe_seq)

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
                    f"{STARTUP_TIMEOUT_S:.0f} s (missing: {ranks_words(missing)})."
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
                    f"The MPI launcher exited (status {exit_status(code)}) before all {self.n} "
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
                    f"{ranks_words(missing).capitalize()} did not answer {what} within {timeout:.0f} s."
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

    def _send_all(self, message: msg.Message, ranks: list[int] | None = None) -> None:
        for r in ranks if ranks is not None else list(self.ranks):
            rank = self.ranks[r]
            if not rank.closed and rank.done is None:
                self._later(quiet_send(rank.channel, message))

    def _later(self, coro: Any) -> None:
        """Send without waiting (from a signal's callback); the task is kept until done."""
        task = asyncio.ensure_future(coro)
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)


async def quiet_send(channel: AsyncChannel, message: msg.Message) -> None:
    with contextlib.suppress(ChannelClosed, ConnectionError, OSError):
        await channel.send(message)


def ranks_words(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks)
