"""A profiled cell as N MPI ranks, started through the system's MPI launcher.

The run starts ``<launcher> -n N ... python -m scorep_kernel.mpi.rank`` (under
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

Ranks that stay up (builtin backend): the run takes its ranks from the kernel's
``KeptRanks`` (``mpi.kept_ranks``) when they serve the cell, and gives them back at its end,
so the next MPI cell pays neither the launcher nor MPI's start-up; each rank keeps its
namespace, and a notebook value the ranks already hold (the same object as after the last
cell) is not sent again. ``--fresh`` (``"fresh": true``) runs the cell in ranks of its own,
which end with it; Score-P's cells always do (Score-P measures a process from its start
to its end).

The objects a run holds, each with one job: its ``RankPool`` (``mpi.rank_pool``: the
launcher's process, ``mpi.launcher``, and the ranks' connections, whose clocks
``mpi.clocks`` maps), a ``CellOnRanks`` (``mpi.cell_on_ranks``: each cell on every rank)
and a ``RunMetrics`` (``mpi.run_end``: the hosts sampled while the run is open); at its
end the run writes the manifest's record and, after the reply, a ``RunFiles``
(``mpi.run_end``) notes Score-P's experiment or merges the builtin ranks' recordings.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from typing import Any

from scorep_kernel import manifest as mf
from scorep_kernel.mpi import common
from scorep_kernel.mpi import config as mpi_config
from scorep_kernel.mpi.cell_on_ranks import NO_MPI4PY, CellOnRanks, CellStopped, mpi4py_installed
from scorep_kernel.mpi.clocks import clock_map
from scorep_kernel.mpi.launcher import RanksFailed, rank_command
from scorep_kernel.mpi.rank_pool import PoolKey, Rank, RankPool
from scorep_kernel.mpi.run_end import STOP_TIMEOUT_S, RunFiles, RunMetrics, mpi_manifest
from scorep_kernel.runs import scorep_backend
from scorep_kernel.runs.base import CellRequest, RunBase, error_reply, reserve_experiment
from scorep_kernel.runs.faults import RunFailed
from scorep_kernel.settings import MpiSettings, SettingsError
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.client import _KERNEL_DIR

SCOREP_FRESH = (
    "Score-P measures a process from its start to its end, so this cell's ranks were "
    "started for it (ranks stay up between cells with the builtin backend)."
)


class MpiRun(RunBase):
    """A profiled run as N MPI ranks. It holds its ranks (a ``RankPool``, its own or the
    kernel's kept one), ``cell`` (``CellOnRanks``: each cell on every rank) and ``metrics``
    (``RunMetrics``: the hosts sampled while it is open); its end writes the manifest's
    record and hands the files to a ``RunFiles`` after the reply."""

    isolation = "subprocess"  # the manifest's word: every rank is a process of its own
    forwards_sigint = True
    holds_worker = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        mpi = self.settings.mpi
        assert mpi is not None, "an MPI run is for a cell with an mpi setting"
        self.mpi: MpiSettings = mpi
        self.n = mpi.ranks
        self.pool: RankPool | None = None
        # the pool goes back to the kernel's KeptRanks at the run's end
        self.keep = self.backend == "builtin" and not mpi.fresh
        self.ranks_note = ""  # how the run got its ranks, for the cell's summary
        self.restarted = ""  # why kept ranks could not serve (the cell says so)
        self.cell = CellOnRanks(self, mpi, self._stopped)
        self.metrics = RunMetrics()
        self._interrupted = asyncio.Event()
        # Score-P's ranks: per location group ("MPI Rank r"), {native id: Python name}
        self.python_threads: dict[str, dict[str, str]] = {}

    @property
    def links(self) -> RankPool:
        """The run's ranks (once ``begin`` got them)."""
        assert self.pool is not None, "the run has no ranks before begin()"
        return self.pool

    @property
    def ranks(self) -> dict[int, Rank]:
        return self.pool.ranks if self.pool is not None else {}

    def tool(self) -> str | None:
        if self.backend != "scorep":
            return None
        return f"Score-P {scorep_backend.version()}".strip()

    def manifest_scorep_env(self) -> dict[str, str]:
        if self.backend != "scorep":
            return super().manifest_scorep_env()
        env = scorep_backend.worker_env(dict(os.environ), self.scorep_env)
        return {k: v for k, v in env.items() if k.startswith("SCOREP_")}

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
            reserved = _reserve_experiment(self.scorep_env, self.settings.experiment_parent)
        forward = [common.ENV_ADDRESS, common.ENV_TOKEN, "PYTHONPATH", "PYTHONUNBUFFERED"]
        env = dict(os.environ)
        if self.backend == "scorep":
            env = scorep_backend.worker_env(env, self.scorep_env)
            assert reserved is not None
            env["SCOREP_EXPERIMENT_DIRECTORY"] = str(reserved[1])
            forward += sorted(k for k in env if k.startswith("SCOREP_"))
        else:
            env.update(self.scorep_env)
        plan = mpi_config.launch_command(self.mpi, forward, env)
        key = PoolKey(self.backend, self.n, plan.launcher, tuple(plan.argv[1:]),
                      tuple(sorted(self.scorep_env.items())))  # fmt: skip
        kept = self.side.kept_ranks
        pool: RankPool | None = None
        if self.keep:
            pool, self.restarted = kept.take(key)
        else:
            ended = await kept.close()
            if ended:
                self.restarted = f"the {ended} kept up were ended first"
        if pool is not None:
            self.ranks_note = f"Kept ranks: cell {pool.cells + 1} on them."
        else:
            paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
            if _KERNEL_DIR not in paths:
                env["PYTHONPATH"] = os.pathsep.join([_KERNEL_DIR, *paths])
            env.setdefault("PYTHONUNBUFFERED", "1")
            pool = RankPool(self.n, plan, key if self.keep else None)
            self.pool = pool
            try:
                await pool.start(rank_command(self.backend, self.binding_args), env,
                                 self._interrupted)  # fmt: skip
            except RunFailed:
                self.finished = True
                raise
            self.add_time("ranks_start", time.perf_counter() - t0)
            if self.backend == "scorep":
                self.ranks_note = SCOREP_FRESH
            elif self.keep:
                self.ranks_note = "Ranks started; they stay up for the next MPI cell."
            else:
                self.ranks_note = "Ranks started for this cell (--fresh); they end with it."
        self.pool = pool
        pool.new_run()
        if self.restarted:
            self.side.output.stream(
                "stderr",
                f"Note: {self.restarted}; all {self.n} ranks were started anew, their "
                "namespaces start from the notebook's again.\n"
                if self.keep
                else f"Note: {self.restarted}.\n",
            )
        try:
            self.create_experiment(reserved)
            await pool.probe_clocks()
            await self._start_measurement()
        except (SettingsError, RunFailed):
            self.kill()
            await pool.reap()
            self.finished = True
            raise
        self._start_sampler()

    async def _start_measurement(self) -> None:
        assert self.exp_dir is not None
        measure = self.measure if self.backend == "builtin" else None
        start = msg.StartRun(
            exp_dir=str(self.exp_dir),
            measure=measure,
            env={"SCOREP_EXPERIMENT_DIRECTORY": str(self.exp_dir)},
        )
        with self.timed("measure_start"):
            for rank in self.ranks.values():
                await rank.channel.send(start)
            answers = await self.links.gather_from_all((msg.RunStarted,), 120.0, "while starting")
            started = answers[msg.RunStarted]
        self.measured = all(s.measured for s in started.values())
        for r, s in sorted(started.items()):
            if s.error:
                self.errors.append(f"rank {r}: measurement could not start: {s.error}")

    def _start_sampler(self) -> None:
        """The kernel's host once (with its ranks); each other host by its first rank."""
        interval = self.settings.measure.metric_interval_s
        error = self.metrics.start(self.links, interval)
        if error:
            self.errors.append(error)

    def _write_metrics(self) -> None:
        error = self.metrics.write(self.exp_dir, self.pool)
        if error:
            self.errors.append(error)

    async def run_cell(self, request: CellRequest) -> dict[str, Any]:
        shell = self.side.shell
        count = shell.execution_count
        reply, result = await self.cell.execute(request, count, self.links, self.keep)
        if request.store_history and not request.silent:
            with contextlib.suppress(Exception):
                shell.history_manager.store_inputs(count, request.code, request.code)
            shell.execution_count += 1
            if result is not None:
                with contextlib.suppress(Exception):
                    shell.displayhook.update_user_ns(result)
        return reply

    async def _stopped(self, stop: CellStopped, count: int, index: int, cell_start: float) -> dict:
        """The cell ended early: everything is stopped, the namespace stays as it was."""
        self.kill()
        await self.links.reap()
        self.links.disconnect()
        self.note_status(stop.status)
        self.errors.append(stop.message)
        self.last_cell_wall = time.perf_counter() - cell_start
        self.finished = True
        self._write_metrics()
        self.finish_manifest_without_files()
        output = self.side.output
        output.display(self.bundle(index, stop.status, self.last_cell_wall))
        ename = stop.ename or (
            "KeyboardInterrupt" if stop.status == mf.STATUS_INTERRUPTED else RanksFailed.ename
        )
        output.error(ename, stop.message, [stop.message])
        return error_reply(ename, stop.message, [stop.message], count)

    def interrupt(self) -> None:
        self._interrupted.set()  # (ends a wait for the ranks' start)
        self.cell.interrupt()

    def kill(self) -> None:
        """Stop the launcher and every rank at once; they are not kept."""
        self.keep = False
        if self.pool is not None:
            self.pool.kill()

    def bundle(self, cell_index: int, status: str, wall_s: float | None, note: str | None = None):
        where = f"{self.n} MPI rank{'s' if self.n != 1 else ''}"
        hosts = {r.hello.hostname for r in self.ranks.values()}
        if len(hosts) > 1:
            where += f" on {len(hosts)} hosts"
        words = " ".join(w for w in (f"Ran as {where}.", self.ranks_note, note) if w)
        out = super().bundle(cell_index, status, wall_s, words)
        from scorep_kernel.runs.display import MIME_TYPE

        out[MIME_TYPE]["mpi"] = {"ranks": self.n, "hosts": sorted(hosts), "kept": self.keep}
        return out

    async def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        mpi = mpi_manifest(self.pool, self.mpi, self.keep)
        extra: mf.ManifestChanges = {"mpi": mpi}
        statuses: dict[int, str] = {}  # the ranks' files
        with contextlib.suppress(Exception):
            await self.links.probe_clocks()
        # the clocks of ranks on other hosts, as mapped onto the kernel's (kernel ns =
        # slope * rank ns + offset_ns); ranks on the kernel's host share its clock
        clocks = clock_map(self.ranks)
        mpi["clocks"] = {
            str(r): {**clocks[r], "probes": len(x.clock)}
            for r, x in sorted(self.ranks.items())
            if not x.local
        }
        try:
            # the phase the reply waits for after the cell: every rank stops its
            # measurement and writes its recording (the merge comes after the reply)
            with self.timed("measure_stop"):
                for rank in self.ranks.values():
                    await rank.channel.send(msg.FinishRun(keep=self.keep))
                answers = await self.links.gather_from_all(
                    (msg.RunStopped, msg.FilesDone), STOP_TIMEOUT_S, "while stopping"
                )
            stopped = answers[msg.RunStopped]
            self.events = sum(int(s.events or 0) for s in stopped.values()) or None
            top: dict[str, float] = {}
            for s in stopped.values():
                for name, seconds in s.top:
                    top[name] = top.get(name, 0.0) + float(seconds)
            self.top = sorted(top.items(), key=lambda kv: -kv[1])[:5]
            measured = [s.measured_s for s in stopped.values() if s.measured_s is not None]
            self.measured_s = sum(measured) if measured else None
            for r, s in sorted(stopped.items()):
                if s.error:
                    self.errors.append(f"rank {r}: stopping the measurement failed: {s.error}")
            notes = stopped.get(0)
            if notes is not None and notes.notes:
                extra["measurement"] = dict(notes.notes)
            # Score-P's ranks: each rank's Python threads, to name its thread locations
            self.python_threads = {
                common.RANK_GROUP_NAME.format(rank=r): dict(s.notes.get("python_threads") or {})
                for r, s in sorted(stopped.items())
                if s.notes and "python_threads" in s.notes
            }
            files = answers[msg.FilesDone]
            failed = [f"rank {r}: {e}" for r, f in sorted(files.items()) for e in f.errors]
            statuses = {r: f.status for r, f in files.items()}
            self.errors += failed
        except RunFailed as e:
            self.note_status(mf.STATUS_CRASHED)
            self.errors.append(f"The MPI ranks failed while stopping the measurement: {e.message}")
            extra["files_status"] = mf.FILES_FAILED
            self.kill()
        if self.keep:  # the ranks serve the next MPI cell
            self.side.kept_ranks.keep(self.links)
        self._write_metrics()
        if (
            self.backend == "builtin"
            and "files_status" not in extra
            and any(s != mf.FILES_READY for s in statuses.values())
        ):
            extra["files_status"] = mf.FILES_FAILED
        self.finish_manifest(extra)
        self.side.output.display(
            self.bundle(self.last_cell_index, self.status, self.last_cell_wall)
        )
        self.side.tasks.spawn(self._files(), "writing an MPI run's files")

    async def _files(self) -> None:
        assert self.exp_dir is not None
        files = RunFiles(self.exp_dir, self.links, self.keep, self.backend, self.scorep_env,
                         self.tool(), self.side.kept_ranks.merger, self.python_threads)  # fmt: skip
        await files.write()

    async def abort(self) -> None:
        self._write_metrics()
        self.mark_aborted()
        self.kill()
        if self.pool is not None:
            await self.pool.reap()
        self.finish_manifest_without_files()


def _reserve_experiment(scorep_env: dict[str, str], parent: str | None):
    reserved = reserve_experiment(scorep_env, parent)
    scorep_backend.make_parent(reserved[1])
    return reserved
