"""NVIDIA GPUs' metrics for the metric sampler, through NVML (``pynvml`` from nvidia-ml-py,
optional): per GPU ``gpu<i>.util`` (%, NVML's busy time), ``gpu<i>.mem`` (bytes in use on
the device), ``gpu<i>.proc_mem`` (bytes the measured process and its children hold there,
nvmlDeviceGetComputeRunningProcesses) and, where the GPU offers GPU Performance Monitoring
(GPM: Hopper and later), ``gpu<i>.sm`` (% SM activity between two samples,
NVML_GPM_METRIC_SM_UTIL): the utilisation figure says a kernel ran, SM activity how much
of the chip it kept busy.

A reading NVML refuses is NaN; GPM that fails once is dropped for the run (a note says so)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class GpuSampler:
    def __init__(self) -> None:
        self.handles: list = []
        self.nvml: Any = None
        self.notes: list[str] = []
        self._gpm: list[bool] = []
        self._last: list[Any] = []
        try:
            import pynvml  # nvidia-ml-py, optional

            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            self.nvml = pynvml
        except Exception:
            self.handles = []
            return
        for h in self.handles:
            self._gpm.append(self._gpm_supported(h))
            self._last.append(self._gpm_sample(h) if self._gpm[-1] else None)

    def _gpm_supported(self, handle: Any) -> bool:
        nvml = self.nvml
        try:
            return bool(nvml.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice)
        except Exception:
            return False

    def _gpm_sample(self, handle: Any) -> Any:
        nvml = self.nvml
        sample = nvml.nvmlGpmSampleAlloc()
        nvml.nvmlGpmSampleGet(handle, sample)
        return sample

    def series(self) -> list[tuple[str, str, str, str]]:
        """(key, label, unit, description) in the order ``read`` returns values."""
        out = []
        for i, gpm in enumerate(self._gpm or [False] * len(self.handles)):
            out += [
                (f"gpu{i}.util", f"GPU {i} utilisation", "%", f"NVIDIA GPU {i} busy time"),
                (f"gpu{i}.mem", f"GPU {i} memory", "bytes", f"NVIDIA GPU {i} memory in use"),
                (f"gpu{i}.proc_mem", f"GPU {i} memory of the run", "bytes",
                 f"NVIDIA GPU {i} memory held by the measured process and its children"),
            ]  # fmt: skip
            if gpm:
                out.append((f"gpu{i}.sm", f"GPU {i} SM activity", "%",
                            f"NVIDIA GPU {i} streaming multiprocessors active (GPM)"))  # fmt: skip
        return out

    def read(self, pids: Iterable[int]) -> list[float]:
        nvml = self.nvml
        if nvml is None:  # no NVML: no handles either
            return []
        mine = set(pids)
        out: list[float] = []
        for i, h in enumerate(self.handles):
            out.append(self._call(lambda h=h: float(nvml.nvmlDeviceGetUtilizationRates(h).gpu)))
            out.append(self._call(lambda h=h: float(nvml.nvmlDeviceGetMemoryInfo(h).used)))
            out.append(self._call(lambda h=h: self._process_memory(h, mine)))
            if self._gpm and self._gpm[i]:
                out.append(self._sm_activity(i, h))
        return out

    def _process_memory(self, handle: Any, pids: set[int]) -> float:
        used = 0
        for p in self.nvml.nvmlDeviceGetComputeRunningProcesses(handle):
            if p.pid in pids and p.usedGpuMemory is not None:
                used += int(p.usedGpuMemory)
        return float(used)

    def _sm_activity(self, i: int, handle: Any) -> float:
        nvml = self.nvml
        try:
            sample = self._gpm_sample(handle)
            get = nvml.c_nvmlGpmMetricsGet_t()
            get.version = nvml.NVML_GPM_METRICS_GET_VERSION
            get.numMetrics = 1
            get.sample1, get.sample2 = self._last[i], sample
            get.metrics[0].metricId = nvml.NVML_GPM_METRIC_SM_UTIL
            nvml.nvmlGpmMetricsGet(get)
            previous, self._last[i] = self._last[i], sample
            try:
                nvml.nvmlGpmSampleFree(previous)
            except Exception:
                pass
            return float(get.metrics[0].value)
        except Exception as e:
            self._gpm[i] = False  # the series stays, NaN from now on
            self.notes.append(f"GPU {i}: GPM SM activity stopped ({type(e).__name__}: {e})")
            return float("nan")

    @staticmethod
    def _call(fn) -> float:
        try:
            return fn()
        except Exception:
            return float("nan")

    def close(self) -> None:
        if self.nvml is not None:
            try:
                self.nvml.nvmlShutdown()
            except Exception:
                pass
