"""One cell on every rank of an MPI run, as a user of ipyparallel's ``%px`` expects (the
list in ``mpi.run``): the namespace packed once for every rank, the ranks' outputs
relayed live and labelled by rank, rank 0's namespace and the gathered names brought back,
and the cell ended early (everything stopped, the namespace left as it was) when a rank
dies, ignores an interrupt, or runs past the cell's timeout."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from scorep_kernel import manifest as mf
from scorep_kernel import state
from scorep_kernel.mpi import common
from scorep_kernel.mpi.rank_pool import Rank, RankPool, quiet_send, ranks_words
from scorep_kernel.runs.base import CellRequest, RunBase, cell_message, error_reply
from scorep_kernel.runs.faults import UNCHANGED
from scorep_kernel.settings import MpiSettings
from scorep_kernel.state import transfer
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.protocol import ChannelClosed

# After an interrupt, how long the ranks may take to end their cell before all are killed:
# a rank in Python stops within the interpreter's check interval (~5 ms); one blocked in
# MPI never does, so waiting longer only delays the same outcome. 0.5 s keeps "every rank
# stops within 1 s" with room for the kill and the reply.
INTERRUPT_GRACE_S = 0.5
# After a rank raised, how long the others may go on before they are interrupted: a rank
# that waits in MPI for the failed one would wait for ever.
ERROR_GRACE_S = 5.0
LABEL = "[rank {rank}] "

NO_MPI4PY = (
    "mpi4py is not installed for {python}: {why}. Install it where the kernel runs "
    "(`{python} -m pip install mpi4py`; it builds against your MPI, which needs its "
    "development files: Debian/Ubuntu `apt-get install libopenmpi-dev`)."
)


class CellStopped(Exception):
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


# The run's answer to a cell that ended early (everything stopped, the namespace left as
# it was): (why, execution count, the cell's index in the run, its start) -> the reply.
StopCell = Callable[["CellStopped", int, int, float], Awaitable[dict[str, Any]]]


class CellOnRanks:
    """Each cell of an MPI run on every rank of its pool: what the cell sends, what the
    ranks say while it runs, and what comes back. What the cell leaves (its record, its
    status, its errors, its time) goes into ``run``; a cell that must end early is ended
    by ``stop`` (the run's)."""

    def __init__(self, run: RunBase, mpi: MpiSettings, stop: StopCell):
        self.run = run
        self.mpi = mpi
        self.stop = stop
        self.pool: RankPool | None = None  # the ranks of the latest cell
        self.keep = False  # those ranks serve the next cell (their namespaces are kept)
        self.in_cell = False
        self.interrupt_requested = False
        self.interrupted_at: float | None = None
        self._line_start: dict[tuple[int, str], bool] = {}

    @property
    def links(self) -> RankPool:
        assert self.pool is not None, "no cell has been sent to the ranks"
        return self.pool

    @property
    def ranks(self) -> dict[int, Rank]:
        return self.links.ranks

    def interrupt(self) -> None:
        """SIGINT: every rank of the cell under way gets a KeyboardInterrupt; before the
        cell starts, the cell ends at once when it does."""
        self.interrupt_requested = True
        if not self.in_cell:
            return
        if self.interrupted_at is None:
            self.interrupted_at = time.monotonic()
        self.links.send_all(msg.InterruptCell())

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
        output = self.run.side.output
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
                self.run.side.import_ahead(message.module)
        elif isinstance(message, msg.InputRequest):
            self.links.later(
                quiet_send(
                    self.ranks[rank].channel,
                    msg.InputReply(error="input() is not available in an MPI cell"),
                )
            )
        elif not isinstance(message, (msg.StateReceived, msg.Preloaded)):
            self.links.unexpected(rank, message)

    def _pack(self) -> tuple[state.Packet, list[str]]:
        """The namespace for every rank, and the names left out of it because kept ranks
        hold them already (bound to the same object as after the last cell: a value the
        notebook changed in place, not rebound, is not seen)."""
        ns = self.run.side.shell.user_ns
        pool = self.links
        unchanged = [n for n, v in pool.synced.items() if ns.get(n, pool) is v] if self.keep else []
        if pool.all_local:
            # shared memory: every rank maps the one copy (the pull transport lets one
            # reader in, and the ranks are not the kernel's direct children)
            return state.pack(ns, transport="shm", skip=unchanged), unchanged
        return state.pack(ns, out_of_band_min=common.NO_OUT_OF_BAND, skip=unchanged), unchanged

    async def execute(
        self, request: CellRequest, count: int, pool: RankPool, keep: bool
    ) -> tuple[dict[str, Any], Any]:
        """Run the cell as ``cell [count]`` on every rank of ``pool``: (the execute_reply
        content, the value for Out[count] or None)."""
        self.pool, self.keep = pool, keep
        run = self.run
        output = run.side.output
        shell = run.side.shell
        if needs_mpi4py(request.code) and not mpi4py_installed():
            text = NO_MPI4PY.format(python=sys.executable, why="the cell uses it")
            run.note_status(mf.STATUS_ERROR)
            run.errors.append(text)
            output.error("ModuleNotFoundError", text, [text])
            return error_reply("ModuleNotFoundError", text, [text], count), None
        with run.timed("pack"):
            packet, unchanged = self._pack()
        kept_names = set(unchanged)
        for name, reason in packet.skipped.items():
            if name in kept_names:
                continue
            output.stream(
                "stderr",
                f"Warning: {name!r} cannot be sent to the MPI ranks ({reason}); it keeps its "
                "value here, but using it in this profiled cell raises an error.\n",
            )
        index = run.add_cell(request.cell_id, count, request.code)
        cell_start = time.perf_counter()
        run.last_cell_index, run.last_cell_wall = index, 0.0
        if self.interrupt_requested:
            packet.release()
            self.interrupt_requested = False
            run.note_status(mf.STATUS_INTERRUPTED)
            text = "KeyboardInterrupt: interrupted before the profiled cell started"
            output.error("KeyboardInterrupt", "", [text])
            return error_reply("KeyboardInterrupt", "", [text], count), None
        in_band = not self.links.all_local
        cell = cell_message(request, count, packet.header, shell)
        setup = msg.RankSetup(list(self.mpi.gather), in_band)
        for rank in self.ranks.values():
            rank.done = None
        self._line_start.clear()
        self.interrupted_at = None
        launcher = self.links.launcher
        try:
            self.in_cell = True
            launcher.relay = output.stream
            for rank in self.ranks.values():
                await rank.channel.send(setup)
                await rank.channel.send(cell)
            first_error = await self._until_done(count)
        except CellStopped as stop:
            packet.release()
            return await self.stop(stop, count, index, cell_start), None
        except ChannelClosed:
            packet.release()
            lost = CellStopped(
                mf.STATUS_CRASHED,
                "A rank's connection closed." + await launcher.exit_words(),
            )
            return await self.stop(lost, count, index, cell_start), None
        finally:
            self.in_cell = False
            launcher.relay = None
            self.interrupt_requested = False
            self.links.cells += 1
        packet.release()
        done = {r: rank.done for r, rank in self.ranks.items()}
        assert all(d is not None for d in done.values())
        # The run's wall time of the cell: the slowest rank.
        run.last_cell_wall = max(float(d.wall_s or 0.0) for d in done.values() if d) or (
            time.perf_counter() - cell_start
        )
        never_ran = [r for r, d in done.items() if d is not None and d.state is None]
        if never_ran:
            d0 = done[never_ran[0]]
            assert d0 is not None
            run.note_status(mf.STATUS_ERROR)
            return error_reply(d0.ename, f"[rank {never_ran[0]}] {d0.evalue}", d0.traceback,
                               count), None  # fmt: skip
        try:
            with run.timed("unpack"):
                unpacked = {r: state.unpack(d.state) for r, d in done.items() if d and d.state}
        except Exception as e:
            message = (
                f"The namespace could not be brought back from the MPI ranks "
                f"({type(e).__name__}: {e}). {UNCHANGED}"
            )
            return await self.stop(CellStopped(mf.STATUS_CRASHED, message), count, index,
                                   cell_start), None  # fmt: skip
        for rank in self.ranks.values():
            await quiet_send(rank.channel, msg.StateReceived())
        with run.timed("apply"):
            state.apply(
                shell.user_ns,
                unpacked[0],
                previous_names=[*packet.names, *unchanged],
                environ_ignore=common.ENVIRON_IGNORE,
                keep_paths=transfer.KEEP_PATHS,
            )
            result = shell.user_ns.pop(transfer.RESULT_NAME, None)
            self._gathered(unpacked, output)
        if self.keep:  # what the kept ranks hold now, as far as the notebook knows
            self.links.synced = {n: shell.user_ns[n] for n in transfer.user_names(shell.user_ns)}
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
            status = mf.STATUS_INTERRUPTED
        elif failed:
            status = mf.STATUS_ERROR
        else:
            status = mf.STATUS_OK
        run.note_status(status)
        if status == mf.STATUS_OK:
            return {"status": "ok", "execution_count": count, "user_expressions": {},
                    "payload": []}, result  # fmt: skip
        if status == mf.STATUS_INTERRUPTED and not failed:
            return error_reply("KeyboardInterrupt", "", ["KeyboardInterrupt"], count), result
        r = first_error if first_error in failed else failed[0]
        d = done[r]
        assert d is not None
        return error_reply(d.ename or "Error", f"[rank {r}] {d.evalue}", d.traceback,
                           count), result  # fmt: skip

    def _gathered(self, unpacked: dict[int, Any], output: Any) -> None:
        """``gather`` names: the list of every rank's value, in rank order."""
        ns = self.run.side.shell.user_ns
        for name in self.mpi.gather:
            values = []
            missing = []
            for r in range(self.mpi.ranks):
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
                    f"{ranks_words(missing)}; None stands in for it in the gathered list.\n",
                )
            ns[name] = values

    async def _until_done(self, count: int) -> int | None:
        """Relay every rank's output until all ended their cell; the first rank that
        raised (or None). CellStopped when the cell must end early."""
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
                rank, message = await asyncio.wait_for(self.links.inbox.get(), timeout)
            except asyncio.TimeoutError:
                running = [r for r, x in self.ranks.items() if x.done is None]
                if self.interrupted_at is not None and (
                    time.monotonic() >= self.interrupted_at + INTERRUPT_GRACE_S
                ):
                    if interrupted_for_error and first_error is not None:
                        failed = self.ranks[first_error].done
                        assert failed is not None
                        raise CellStopped(
                            mf.STATUS_ERROR,
                            f"Rank {first_error} raised {failed.ename}: {failed.evalue}; "
                            f"{ranks_words(running)} still ran {ERROR_GRACE_S:g} s later and did not "
                            "stop when interrupted (waiting in MPI for the failed rank?), so "
                            f"every rank was stopped. {UNCHANGED}",
                            failed.ename or None,
                        ) from None
                    raise CellStopped(
                        mf.STATUS_INTERRUPTED,
                        f"{ranks_words(running).capitalize()} did not stop within "
                        f"{INTERRUPT_GRACE_S:g} s of the interrupt (blocked in MPI, waiting for "
                        f"another rank?), so every rank was stopped. {UNCHANGED}",
                    ) from None
                if self.mpi.timeout is not None and loop.time() >= started + self.mpi.timeout:
                    raise CellStopped(
                        mf.STATUS_CRASHED,
                        f"{ranks_words(running).capitalize()} still ran after the cell's timeout of "
                        f"{self.mpi.timeout:g} s, so every rank was stopped. {UNCHANGED}",
                    ) from None
                if error_at is not None and not interrupted_for_error:
                    # the ranks that go on after another raised: interrupt them
                    interrupted_for_error = True
                    self.interrupted_at = time.monotonic()
                    self.links.send_all(msg.InterruptCell(), running)
                continue
            if message is None:
                dead = self.ranks[rank]
                if dead.done is not None:
                    continue  # it ended its cell before; its end shows later, if at all
                raise CellStopped(
                    mf.STATUS_CRASHED,
                    f"Rank {rank} ({dead.where}) ended before the cell did, so the run was "
                    f"stopped. {UNCHANGED}" + await self.links.launcher.words_after_kill(),
                )
            if isinstance(message, msg.CellDone):
                self.ranks[rank].done = message
                if message.status == "error" and not message.interrupted and first_error is None:
                    first_error, error_at = rank, loop.time()
                continue
            self._relay(rank, message, count)
        return first_error
