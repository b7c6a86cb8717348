"""The end of an MPI run: the ranks stop measuring and write their recordings, the
manifest gets the run's ranks, hosts and clocks, the system metrics of every host are
written on the kernel's clock, and after the reply the files are finished: Score-P's
experiment noted, or the builtin ranks' recordings merged by ``mpi.merge`` in a process of
its own."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

import numpy as np

from scorep_kernel import experiment
from scorep_kernel.mpi import clocks as mpi_clocks
from scorep_kernel.mpi import common
from scorep_kernel.mpi import config as mpi_config
from scorep_kernel.mpi import merger as mpi_merger
from scorep_kernel.mpi.rank_pool import Rank, RankPool
from scorep_kernel.runs import scorep_backend
from scorep_kernel.runs.base import RunBase
from scorep_kernel.runs.faults import RunFailed
from scorep_kernel.worker import protocol as msg

# Stopping measurement and writing a rank's recording (millions of events take seconds).
STOP_TIMEOUT_S = 600.0


class MpiRunEnd(RunBase):
    """The end of ``MpiRun`` (whose ``__init__`` sets these)."""

    mpi: mpi_config.MpiSettings
    n: int
    sampler: Any
    pool: RankPool | None
    keep: bool

    @property
    def links(self) -> RankPool:
        """The run's ranks (once ``begin`` got them)."""
        assert self.pool is not None, "the run has no ranks before begin()"
        return self.pool

    @property
    def ranks(self) -> dict[int, Rank]:
        return self.pool.ranks if self.pool is not None else {}

    async def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        extra: dict[str, Any] = {"mpi": self._mpi_manifest()}
        with contextlib.suppress(Exception):
            await self.links.probe_clocks()
        # the clocks of ranks on other hosts, as mapped onto the kernel's (kernel ns =
        # slope * rank ns + offset_ns); ranks on the kernel's host share its clock
        clocks = mpi_clocks.clock_map(self.ranks)
        extra["mpi"]["clocks"] = {
            str(r): {**clocks[r], "probes": len(x.clock)}
            for r, x in sorted(self.ranks.items())
            if not x.local
        }
        try:
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
            files = answers[msg.FilesDone]
            failed = [f"rank {r}: {e}" for r, f in sorted(files.items()) for e in f.errors]
            extra["_files"] = {r: f.status for r, f in files.items()}
            self.errors += failed
        except RunFailed as e:
            self.note_status(experiment.STATUS_CRASHED)
            self.errors.append(f"The MPI ranks failed while stopping the measurement: {e.message}")
            extra["files_status"] = experiment.FILES_FAILED
            self.kill()
        if self.keep:  # the ranks serve the next MPI cell
            self.side.kept_ranks.keep(self.links)
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

    def _mpi_manifest(self) -> dict[str, Any]:
        hosts: dict[str, list[int]] = {}
        for r in sorted(self.ranks):
            hosts.setdefault(self.ranks[r].hello.hostname, []).append(r)
        plan = self.pool.launcher.plan if self.pool is not None else None
        return {
            "ranks": self.n,
            "launcher": plan.launcher if plan else None,
            "launcher_kind": plan.kind if plan else None,
            "launcher_args": list(plan.argv[1:]) if plan else [],
            "library": self.pool.library if self.pool is not None else "",
            "kept": self.keep,
            "cells_on_ranks": self.pool.cells if self.pool is not None else 0,
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
        remote: list[tuple[int, msg.NodeSamples]] = []
        epoch_offset = 0
        if self.pool is not None:
            remote, self.pool.remote_samples = self.pool.remote_samples, []
            epoch_offset = self.pool.epoch_offset
        if sampler is None and not remote:
            return
        try:
            import pickle

            from scorep_kernel.formats.recording import MetricSamples
            from scorep_kernel.mpi.metrics import combine, renamed

            parts = []
            if sampler is not None:
                parts.append((sampler.stop(), epoch_offset))
            clocks = mpi_clocks.clock_map(self.ranks)
            for rank, message in remote:
                samples = pickle.loads(message.samples)
                clock = clocks.get(rank, {"slope": 1.0, "offset_ns": 0.0})
                t = np.asarray(samples.times, np.float64) * clock["slope"] + clock["offset_ns"]
                samples = MetricSamples(samples.series, np.rint(t).astype(np.int64),
                                        samples.values, samples.interval_s, samples.notes)  # fmt: skip
                parts.append((renamed(samples, message.host), epoch_offset))
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

    async def _files(self) -> None:
        assert self.exp_dir is not None
        pool = self.links
        kept = self.keep
        try:
            # fresh ranks end with the run (Score-P writes its files as they end)
            code = None if kept else await pool.wait_launcher(600.0)
            if self.backend == "scorep":
                self._note_scorep_files(code)
                return
            manifest = experiment.read_manifest(self.exp_dir)
            if manifest.get("files_status") != experiment.FILES_PENDING:
                return
            ranks_dir = self.exp_dir / common.RANKS_DIR
            ranks_dir.mkdir(exist_ok=True)
            (ranks_dir / common.RANKS_JSON).write_text(json.dumps({
                "epoch_offset_ns": pool.epoch_offset,
                "ranks": [
                    {"rank": r, "hostname": x.hello.hostname, "boot_id": x.hello.boot_id,
                     "pid": x.hello.pid, "clock": mpi_clocks.clock_map(self.ranks)[r]}
                    for r, x in sorted(self.ranks.items())
                ],
            }))  # fmt: skip
            if kept:
                code, tail = await self.side.kept_ranks.merger.merge(self.exp_dir)
            else:
                code, tail = await mpi_merger.merge_once(self.exp_dir)
            if code:
                manifest = experiment.read_manifest(self.exp_dir)
                if manifest.get("files_status") == experiment.FILES_PENDING:
                    experiment.update_manifest(
                        self.exp_dir,
                        files_status=experiment.FILES_FAILED,
                        errors=[f"merging the ranks' recordings failed (status {code})", *tail],
                    )
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
            if not kept:
                pool.disconnect()

    def _note_scorep_files(self, code: int | None) -> None:
        assert self.exp_dir is not None
        files = scorep_backend.written_files(self.exp_dir)
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
                "scorep_messages": scorep_backend.scorep_messages(self.links.launcher.scorep_lines),
                "notes": scorep_backend.explain(
                    [*self.links.launcher.scorep_lines, *self.links.launcher.tail], env
                ),
            },
        )
