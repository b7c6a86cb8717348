"""System metrics sampled by a background thread while a run is measured.

Series keys and units are those documented in ``experiment.py``: cpu.total and
cpu.core<i> (%), mem.rss (bytes, this process and its children), mem.used (bytes, system),
disk.read / disk.write and net.recv / net.sent (bytes/s), and through NVML when an NVIDIA
GPU and ``pynvml`` (nvidia-ml-py) are there gpu<i>.util (%), gpu<i>.mem, gpu<i>.proc_mem
(bytes) and, with GPM, gpu<i>.sm (%) (gpu_sampler).

Cost: on Linux each tick re-reads five /proc files kept open (procfs.py, ~35 µs) and the
list of child processes is refreshed every half second; elsewhere psutil does the reading.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import numpy as np
import psutil

from ..formats.recording import MetricSamples
from . import procfs
from .gpu_sampler import GpuSampler

NO_GPU_NOTE = "No NVIDIA GPU found: GPU metrics skipped."
CHILD_REFRESH_S = 0.5


def _series(key: str, label: str, unit: str, group: str, description: str) -> dict[str, str]:
    return {"key": key, "label": label, "unit": unit, "group": group, "description": description}


class MetricSampler:
    """``start()``, then ``stop()`` returns the MetricSamples. ``on_tick`` is called on the
    sampler thread once per interval (the session checks the event cap there)."""

    def __init__(
        self,
        interval_s: float = 0.1,
        on_tick: Callable[[], None] | None = None,
        pid: int | None = None,
    ):
        """``pid``: the process whose tree's memory is sampled (this one by default; the
        kernel samples a Score-P worker from outside)."""
        self.interval_s = float(interval_s)
        self.pid = pid
        self.on_tick = on_tick
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rows: list[list[float]] = []
        self._times: list[int] = []
        self.notes: list[str] = []
        self.errors = 0
        self.cpu_time_s = 0.0  # the sampler thread's own CPU time, for the overhead figure

    # --- setup -----------------------------------------------------------------------
    def _prepare(self) -> None:
        self._proc = psutil.Process(self.pid)
        self._ncpu = psutil.cpu_count(logical=True) or 1
        self._gpus = GpuSampler()
        series = [_series("cpu.total", "CPU total", "%", "cpu", "mean utilisation of all cores")]
        series += [
            _series(f"cpu.core{i}", f"CPU core {i}", "%", "cpu", f"utilisation of core {i}")
            for i in range(self._ncpu)
        ]
        series += [
            _series(
                "mem.rss",
                "RSS (process tree)",
                "bytes",
                "memory",
                "resident memory of the measured process and its children",
            ),
            _series(
                "mem.used",
                "Memory used (system)",
                "bytes",
                "memory",
                "memory in use on the machine (total - available)",
            ),
            _series("disk.read", "Disk read", "bytes/s", "io", "bytes read from disks per second"),
            _series(
                "disk.write", "Disk write", "bytes/s", "io", "bytes written to disks per second"
            ),
            _series(
                "net.recv",
                "Network received",
                "bytes/s",
                "network",
                "bytes received per second on all interfaces but loopback",
            ),
            _series(
                "net.sent",
                "Network sent",
                "bytes/s",
                "network",
                "bytes sent per second on all interfaces but loopback",
            ),
        ]
        series += [
            _series(key, label, unit, "gpu", description)
            for key, label, unit, description in self._gpus.series()
        ]
        if not self._gpus.handles:
            self.notes.append(NO_GPU_NOTE)
        self.series = series
        self._procfs = procfs.Reader(self.pid) if procfs.available() else None
        if self._procfs:
            self._last_cpu = self._procfs.cpu_times()
        else:
            psutil.cpu_percent(percpu=True)  # primes the "since last call" counters
        self._children: list = []
        self._children_at = 0.0
        self._last_t = time.perf_counter_ns()
        self._last_disk = self._disk()
        self._last_net = self._net()

    def _disk(self) -> tuple[float, float]:
        try:
            if self._procfs:
                return self._procfs.disk_bytes()
            d = psutil.disk_io_counters()
            return (float(d.read_bytes), float(d.write_bytes)) if d else (float("nan"),) * 2
        except Exception:
            return (float("nan"), float("nan"))

    def _net(self) -> tuple[float, float]:
        try:
            if self._procfs:
                return self._procfs.net_bytes()
            n = psutil.net_io_counters(pernic=True)
            pairs = [(v.bytes_recv, v.bytes_sent) for k, v in n.items() if k != "lo"]
            return float(sum(p[0] for p in pairs)), float(sum(p[1] for p in pairs))
        except Exception:
            return (float("nan"), float("nan"))

    def _cores(self) -> list[float]:
        if not self._procfs:
            cores = list(psutil.cpu_percent(percpu=True))
            return cores + [float("nan")] * (self._ncpu - len(cores))
        now = self._procfs.cpu_times()
        out = []
        for i in range(self._ncpu):
            if i < len(now) and i < len(self._last_cpu):
                busy = now[i][0] - self._last_cpu[i][0]
                total = now[i][1] - self._last_cpu[i][1]
                out.append(100.0 * busy / total if total > 0 else 0.0)
            else:
                out.append(float("nan"))
        self._last_cpu = now
        return out

    def _memory_used(self) -> float:
        return self._procfs.memory_used() if self._procfs else float(psutil.virtual_memory().used)

    def _gpu_pids(self) -> list[int]:
        """The measured process and its children (as last listed for mem.rss)."""
        pids = [self.pid if self.pid is not None else os.getpid()]
        for child in self._children:
            pid = getattr(child, "pid", child)
            if isinstance(pid, int):
                pids.append(pid)
        return pids

    def _rss(self, now: float) -> float:
        if now - self._children_at >= CHILD_REFRESH_S:
            try:
                if self._procfs:
                    self._children = self._procfs.children()
                else:
                    self._children = self._proc.children(recursive=True)
            except Exception:
                self._children = []
            self._children_at = now
        if self._procfs:
            total = float(self._procfs.rss())
            for child in self._children:
                try:
                    total += self._procfs.rss(child)
                except (OSError, IndexError, ValueError):  # ended since the last refresh
                    pass
            return total
        total = float(self._proc.memory_info().rss)
        for child in self._children:
            try:
                total += child.memory_info().rss
            except Exception:
                pass
        return total

    # --- sampling --------------------------------------------------------------------
    def sample(self) -> None:
        t = time.perf_counter_ns()
        dt = max((t - self._last_t) / 1e9, 1e-9)
        cores = self._cores()
        disk, net = self._disk(), self._net()
        known = [c for c in cores if c == c]
        row = [sum(known) / len(known) if known else float("nan")]
        row += [float(c) for c in cores[: self._ncpu]]
        row += [self._rss(t / 1e9), self._memory_used()]
        row += [
            max(0.0, (disk[0] - self._last_disk[0]) / dt),
            max(0.0, (disk[1] - self._last_disk[1]) / dt),
        ]
        row += [
            max(0.0, (net[0] - self._last_net[0]) / dt),
            max(0.0, (net[1] - self._last_net[1]) / dt),
        ]
        row += self._gpus.read(self._gpu_pids())
        self._last_t, self._last_disk, self._last_net = t, disk, net
        self._times.append(t)
        self._rows.append(row)

    def _run(self) -> None:
        cpu0 = time.thread_time()
        next_at = time.perf_counter() + self.interval_s
        while not self._stop.wait(max(0.0, next_at - time.perf_counter())):
            next_at += self.interval_s
            if next_at < time.perf_counter():  # fell behind (suspended): do not burst
                next_at = time.perf_counter() + self.interval_s
            if self.on_tick is not None:
                try:
                    self.on_tick()
                except Exception:
                    self.errors += 1
            try:
                self.sample()
            except Exception:
                self.errors += 1
        self.cpu_time_s = time.thread_time() - cpu0

    def start(self) -> None:
        self._prepare()
        self._thread = threading.Thread(target=self._run, name="scorep-metric-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> MetricSamples:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        since_last = (time.perf_counter_ns() - self._last_t) / 1e9
        if not self._times or since_last >= self.interval_s / 2:
            # A last, partial interval: short runs get at least one sample. (A sliver of an
            # interval is left out: CPU time is counted in 10 ms ticks.)
            try:
                self.sample()
            except Exception:
                self.errors += 1
        self._gpus.close()
        self.notes += self._gpus.notes
        if self._procfs:
            self._procfs.close()
        if self.errors:
            self.notes.append(f"{self.errors} metric samples failed and were skipped")
        k = len(self.series)
        values = np.asarray(self._rows, np.float64).reshape(len(self._rows), k)
        return MetricSamples(
            series=list(self.series),
            times=np.asarray(self._times, np.int64),
            values=values,
            interval_s=self.interval_s,
            notes=list(self.notes),
        )
