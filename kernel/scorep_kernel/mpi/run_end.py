"""The end of an MPI run: the manifest's record of the run's ranks, hosts and settings
(``mpi_manifest``), the system metrics of every host written on the kernel's clock
(``RunMetrics``, which samples them while the run is open), and after the reply the files
(``RunFiles``): Score-P's experiment noted (each rank's threads named as its Python
threads), or the builtin ranks' recordings merged by ``mpi.merge`` in a process of its
own. ``mpi.run.MpiRun`` holds the first two and makes the third when it finishes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from scorep_kernel import experiment
from scorep_kernel import manifest as mf
from scorep_kernel.mpi import common
from scorep_kernel.mpi.clocks import clock_map
from scorep_kernel.mpi.merger import Merger, merge_once
from scorep_kernel.mpi.rank_pool import Rank, RankPool, quiet_send
from scorep_kernel.runs import scorep_backend, scorep_threads
from scorep_kernel.settings import MpiSettings
from scorep_kernel.worker import protocol as msg

if TYPE_CHECKING:
    from scorep_kernel.mpi.metrics import NodeSampler

# Stopping measurement and writing a rank's recording (millions of events take seconds).
STOP_TIMEOUT_S = 600.0


def mpi_manifest(pool: RankPool | None, mpi: MpiSettings, keep: bool) -> mf.MpiRecord:
    """The manifest's ``mpi``: the run's ranks, launcher, hosts and settings."""
    ranks = pool.ranks if pool is not None else {}
    hosts: dict[str, list[int]] = {}
    for r in sorted(ranks):
        hosts.setdefault(ranks[r].hello.hostname, []).append(r)
    plan = pool.launcher.plan if pool is not None else None
    return {
        "ranks": mpi.ranks,
        "launcher": plan.launcher if plan else None,
        "launcher_kind": plan.kind if plan else None,
        "launcher_args": list(plan.argv[1:]) if plan else [],
        "library": pool.library if pool is not None else "",
        "kept": keep,
        "cells_on_ranks": pool.cells if pool is not None else 0,
        "hosts": hosts,
        "gather": list(mpi.gather),
        "timeout": mpi.timeout,
    }


class RunMetrics:
    """The system metrics of an MPI run: this host sampled by the kernel (``NodeSampler``,
    with its ranks), each other host by its first rank (``SampleNode``); at the end all of
    them written on the kernel's epoch clock."""

    def __init__(self) -> None:
        self.sampler: NodeSampler | None = None

    def start(self, pool: RankPool, interval: float) -> str | None:
        """The kernel's host once (with its ranks); each other host by its first rank.
        Why this host could not be sampled (None when it is, or has no ranks)."""
        hosts: dict[str, list[Rank]] = {}
        for r in sorted(pool.ranks.values(), key=lambda r: r.rank):
            if not r.local:
                hosts.setdefault(r.hello.boot_id, []).append(r)
        for ranks in hosts.values():
            pids = {str(r.rank): r.hello.pid for r in ranks}
            pool.later(quiet_send(ranks[0].channel, msg.SampleNode(pids, interval)))
        local = {r.rank: r.hello.pid for r in pool.ranks.values() if r.local}
        proc = pool.launcher.proc
        if not local or proc is None:
            return None
        try:
            from scorep_kernel.mpi.metrics import NodeSampler

            self.sampler = NodeSampler(interval, proc.pid, local)
            self.sampler.start()
        except Exception as e:  # the run stands without its charts
            self.sampler = None
            return f"system metrics could not be sampled: {type(e).__name__}: {e}"
        return None

    def write(self, exp_dir: Path | None, pool: RankPool | None) -> str | None:
        """metrics.json + .npz: the kernel's host and the other hosts' samples, on the
        kernel's epoch clock. Why they could not be written (None when they were, or
        there were none)."""
        if exp_dir is None:
            return None
        sampler, self.sampler = self.sampler, None
        remote: list[tuple[int, msg.NodeSamples]] = []
        epoch_offset = 0
        if pool is not None:
            remote, pool.remote_samples = pool.remote_samples, []
            epoch_offset = pool.epoch_offset
        if sampler is None and not remote:
            return None
        try:
            import pickle

            from scorep_kernel.formats.recording import MetricSamples
            from scorep_kernel.mpi.metrics import combine, renamed

            parts = []
            if sampler is not None:
                parts.append((sampler.stop(), epoch_offset))
            clocks = clock_map(pool.ranks if pool is not None else {})
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
            experiment.write_metrics(exp_dir, series, t, values, interval_s=interval,
                                     notes=sorted(set(notes)))  # fmt: skip
            mf.update_manifest(
                exp_dir,
                files={
                    "metrics": experiment.METRICS_SCHEMA,
                    "metrics_data": experiment.METRICS_DATA,
                },
            )
        except Exception as e:
            return f"writing the metric samples failed: {type(e).__name__}: {e}"
        return None


@dataclass(frozen=True)
class RunFiles:
    """An MPI run's files, after its reply: Score-P's experiment noted once its ranks
    ended, or the builtin ranks' recordings merged (by the kept ranks' ``merger``, or by a
    process for this run once its ranks ended)."""

    exp_dir: Path
    pool: RankPool
    kept: bool  # the ranks stay up for the next cell
    backend: str
    scorep_env: dict[str, str]
    tool: str | None  # what measured the run ("Score-P 8.4")
    merger: Merger  # the kernel's, beside kept ranks
    # Score-P's ranks: per location group ("MPI Rank r"), {native id: Python thread name}
    python_threads: dict[str, dict[str, str]] = field(default_factory=dict)

    async def write(self) -> None:
        exp_dir = self.exp_dir
        pool = self.pool
        kept = self.kept
        try:
            # fresh ranks end with the run (Score-P writes its files as they end)
            code = None if kept else await pool.wait_launcher(600.0)
            if self.backend == "scorep":
                await self._name_scorep_threads()
                self._note_scorep_files(code)
                return
            manifest = mf.read_manifest(exp_dir)
            if manifest.get("files_status") != mf.FILES_PENDING:
                return
            ranks_dir = exp_dir / common.RANKS_DIR
            ranks_dir.mkdir(exist_ok=True)
            (ranks_dir / common.RANKS_JSON).write_text(json.dumps({
                "epoch_offset_ns": pool.epoch_offset,
                "ranks": [
                    {"rank": r, "hostname": x.hello.hostname, "boot_id": x.hello.boot_id,
                     "pid": x.hello.pid, "clock": clock_map(pool.ranks)[r]}
                    for r, x in sorted(pool.ranks.items())
                ],
            }))  # fmt: skip
            if kept:
                code, tail = await self.merger.merge(exp_dir)
            else:
                code, tail = await merge_once(exp_dir)
            if code:
                manifest = mf.read_manifest(exp_dir)
                if manifest.get("files_status") == mf.FILES_PENDING:
                    mf.update_manifest(
                        exp_dir,
                        files_status=mf.FILES_FAILED,
                        errors=[f"merging the ranks' recordings failed (status {code})", *tail],
                    )
        except BaseException as e:
            with contextlib.suppress(Exception):
                manifest = mf.read_manifest(exp_dir)
                if manifest.get("files_status") == mf.FILES_PENDING:
                    mf.update_manifest(
                        exp_dir,
                        files_status=mf.FILES_FAILED,
                        errors=[
                            f"the kernel stopped waiting for the files ({type(e).__name__}: {e})"
                        ],
                    )
            raise
        finally:
            if not kept:
                pool.disconnect()

    async def _name_scorep_threads(self) -> None:
        """Each rank's "Orphan thread N" named as its Python thread, in its own group
        (``runs.scorep_threads``): profile.cubex renamed, the manifest's
        ``group_thread_names``."""
        names = await asyncio.to_thread(
            scorep_threads.name_group_threads, self.exp_dir, self.python_threads
        )
        if names:
            mf.update_manifest(self.exp_dir, group_thread_names=names)

    def _note_scorep_files(self, code: int | None) -> None:
        files = scorep_backend.written_files(self.exp_dir)
        errors = []
        ready = "otf2" in files or "cubex" in files
        if not ready:
            errors.append(f"Score-P wrote neither a trace nor a profile (launcher status {code})")
        env = scorep_backend.worker_env(dict(os.environ), self.scorep_env)
        launcher = self.pool.launcher
        mf.update_manifest(
            self.exp_dir,
            files=files,
            files_status=mf.FILES_READY if ready else mf.FILES_FAILED,
            errors=errors,
            measurement={
                "tool": self.tool,
                "scorep_config": scorep_backend.read_config(self.exp_dir),
                "scorep_messages": scorep_backend.scorep_messages(launcher.scorep_lines),
                "notes": scorep_backend.explain([*launcher.scorep_lines, *launcher.tail], env),
            },
        )
