"""System metrics of an MPI run: the node once, and each rank's process tree.

N ranks each running the builtin session's sampler would read the node's counters N
times a tick and write N copies of them; Score-P's ranks must not run a sampler thread at
all (it would show in their traces). So the kernel samples from outside, once per node:
``NodeSampler`` is the usual ``MetricSampler`` (CPU per core, memory in use, disk and
network, GPUs) following the launcher's process tree (its ``mem.rss`` is all local ranks
together), plus two series per rank on that node: its process tree's resident memory
(``rank<r>.mem.rss``) and CPU use (``rank<r>.cpu``, % of one core, so 100 is a busy
rank). Ranks on another host are sampled there by the lowest rank of that host
(``SampleNode``), whose series are named ``<host>:<key>``.

Cost per tick: the node's ~35 µs (measure/sampler.py) plus ~25 µs per rank (psutil's
memory_info and cpu_times of a cached Process, children refreshed every 0.5 s).
"""

from __future__ import annotations

import time

import numpy as np
import psutil

from scorep_kernel.formats.recording import MetricSamples
from scorep_kernel.measure.sampler import CHILD_REFRESH_S, MetricSampler, _series


class NodeSampler(MetricSampler):
    def __init__(self, interval_s: float, node_pid: int | None, ranks: dict[int, int]):
        """``node_pid``: the process whose tree is the node's share of the run (the
        launcher; None: this process); ``ranks``: rank -> pid of the ranks on this node."""
        super().__init__(interval_s, pid=node_pid)
        self.ranks = dict(sorted(ranks.items()))
        self._procs: dict[int, psutil.Process | None] = {}
        self._kids: dict[int, list[psutil.Process]] = {}
        self._kids_at = 0.0
        self._cpu_last: dict[int, tuple[float, float]] = {}

    def _prepare(self) -> None:
        super()._prepare()
        for rank in self.ranks:
            tree = f"rank {rank}'s process tree"
            self.series += [
                _series(f"rank{rank}.mem.rss", f"Rank {rank} RSS", "bytes", "memory",
                        f"resident memory of {tree}"),
                _series(f"rank{rank}.cpu", f"Rank {rank} CPU", "%", "cpu",
                        f"CPU use of {tree} (100 = one busy core)"),
            ]  # fmt: skip
        for rank, pid in self.ranks.items():
            try:
                self._procs[rank] = psutil.Process(pid)
            except psutil.Error:
                self._procs[rank] = None

    def _tree(self, rank: int, now: float) -> list[psutil.Process]:
        proc = self._procs.get(rank)
        if proc is None:
            return []
        if now - self._kids_at >= CHILD_REFRESH_S or rank not in self._kids:
            try:
                self._kids[rank] = proc.children(recursive=True)
            except psutil.Error:
                self._kids[rank] = []
        return [proc, *self._kids[rank]]

    def sample(self) -> None:
        super().sample()
        now = time.perf_counter()
        row = self._rows[-1]
        for rank in self.ranks:
            rss = cpu_s = 0.0
            alive = False
            for p in self._tree(rank, now):
                try:
                    rss += p.memory_info().rss
                    times = p.cpu_times()
                    cpu_s += times.user + times.system
                    alive = True
                except psutil.Error:
                    pass
            last = self._cpu_last.get(rank)
            self._cpu_last[rank] = (now, cpu_s)
            if not alive:
                row += [float("nan"), float("nan")]
                continue
            share = float("nan")
            if last is not None and now > last[0]:
                share = max(0.0, 100.0 * (cpu_s - last[1]) / (now - last[0]))
            row += [rss, share]
        if now - self._kids_at >= CHILD_REFRESH_S:
            self._kids_at = now


def renamed(samples: MetricSamples, host: str) -> MetricSamples:
    """A remote node's samples with its host in every key and label."""
    series = [
        {**s, "key": f"{host}:{s['key']}", "label": f"{host}: {s.get('label', s['key'])}"}
        for s in samples.series
    ]
    return MetricSamples(series, samples.times, samples.values, samples.interval_s, samples.notes)


def combine(parts: list[tuple[MetricSamples, int]]) -> tuple[list[dict], np.ndarray, np.ndarray]:
    """Several nodes' samples (each with its clock offset to epoch ns) as one table: the
    union of the times, each node's columns filled where it sampled (NaN elsewhere)."""
    series: list[dict] = []
    times = np.unique(
        np.concatenate(
            [np.asarray(s.times, np.int64) + off for s, off in parts] or [np.zeros(0, np.int64)]
        )
    ).astype(np.int64)
    columns = []
    for samples, offset in parts:
        t = np.asarray(samples.times, np.int64) + offset
        v = np.asarray(samples.values, np.float64).reshape(len(t), len(samples.series))
        block = np.full((len(times), len(samples.series)), np.nan)
        block[np.searchsorted(times, t)] = v
        columns.append(block)
        series += samples.series
    values = np.concatenate(columns, axis=1) if columns else np.zeros((len(times), 0))
    return series, times, values
