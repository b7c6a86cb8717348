"""System metric sampling: series as documented in experiment.py, plausible values."""

from __future__ import annotations

import time

import numpy as np
import psutil

from scorep_kernel.measure.sampler import NO_GPU_NOTE, MetricSampler


def gpus_present() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetCount() > 0
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return False


def test_samples_are_plausible_and_follow_the_documented_series():
    ticks = []
    s = MetricSampler(0.05, on_tick=lambda: ticks.append(time.perf_counter_ns()))
    t0 = time.perf_counter_ns()
    s.start()
    block = np.ones(4_000_000)  # 32 MB more resident while sampling
    deadline = time.perf_counter() + 0.5
    while time.perf_counter() < deadline:
        block.sum()
    samples = s.stop()
    t1 = time.perf_counter_ns()

    keys = [x["key"] for x in samples.series]
    ncpu = psutil.cpu_count(logical=True)
    expected = (
        ["cpu.total"]
        + [f"cpu.core{i}" for i in range(ncpu)]
        + ["mem.rss", "mem.used", "disk.read", "disk.write", "net.recv", "net.sent"]
    )
    gpu_keys = keys[len(expected) :]
    assert keys[: len(expected)] == expected
    assert all(k.startswith("gpu") and k.endswith((".util", ".mem")) for k in gpu_keys)
    units = {x["key"]: x["unit"] for x in samples.series}
    assert (
        units["cpu.total"] == "%"
        and units["mem.rss"] == "bytes"
        and units["disk.read"] == "bytes/s"
    )
    assert {x["group"] for x in samples.series} <= {"cpu", "memory", "io", "network", "gpu"}
    assert all(set(x) == {"key", "label", "unit", "group", "description"} for x in samples.series)

    n = len(samples.times)
    # 0.5 s at 0.05 s (about 10, fewer when this shared machine starves the thread)
    assert 3 <= n <= (t1 - t0) / 0.05e9 + 2, n
    assert samples.values.shape == (n, len(keys))
    assert (np.diff(samples.times) > 0).all()
    assert t0 < samples.times[0] and samples.times[-1] <= t1
    assert n - 1 <= len(ticks) <= n  # the cap check runs once per interval; stop() may add one
    col = {k: samples.values[:, i] for i, k in enumerate(keys)}
    assert ((col["cpu.total"] >= 0) & (col["cpu.total"] <= 100)).all()
    assert col["cpu.total"][1:].max() > 10  # this process kept a core busy
    assert (col["mem.rss"] > 32e6).all()
    assert (col["mem.used"] > 0).all()
    for k in ("disk.read", "disk.write", "net.recv", "net.sent"):
        assert np.nan_to_num(col[k]).min() >= 0
    assert samples.interval_s == 0.05
    if not gpus_present():
        assert samples.notes == [NO_GPU_NOTE] and not gpu_keys
    del block


def test_rss_counts_child_processes():
    import subprocess
    import sys

    # The child says when its 200 MB are touched (no sleeping and hoping), then waits.
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; b = bytearray(200_000_000); b[::4096] = b'x' * len(b[::4096]); "
            "print('ready', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        own = psutil.Process().memory_info().rss
        s = MetricSampler(0.05)
        s.start()
        samples = s.stop()  # at least one sample, taken while the child holds its memory
    finally:
        child.kill()
        child.wait()
    rss = samples.values[:, [x["key"] for x in samples.series].index("mem.rss")]
    assert len(rss) >= 1
    assert rss.max() > own + 150e6


def test_gpu_series_through_nvml(monkeypatch):
    """No GPU on the test machines: a stand-in pynvml with two devices checks our side of
    NVML (series, units, values, shutdown): utilisation, memory, the memory this process
    holds (not another process's), and SM activity through GPM where the device offers it
    (gpu1 only, as a Hopper beside an older GPU)."""
    import os
    import types

    calls = []
    fake = types.ModuleType("pynvml")
    fake.nvmlInit = lambda: calls.append("init")
    fake.nvmlShutdown = lambda: calls.append("shutdown")
    fake.nvmlDeviceGetCount = lambda: 2
    fake.nvmlDeviceGetHandleByIndex = lambda i: f"gpu{i}"
    fake.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(
        gpu=40 if h == "gpu0" else 75
    )
    fake.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(
        used=(1 if h == "gpu0" else 3) * 2**30
    )
    me = os.getpid()
    fake.nvmlDeviceGetComputeRunningProcesses = lambda h: [
        types.SimpleNamespace(pid=me, usedGpuMemory=(2 if h == "gpu0" else 5) * 2**20),
        types.SimpleNamespace(pid=1, usedGpuMemory=7 * 2**30),  # another process's
    ]
    fake.nvmlGpmQueryDeviceSupport = lambda h: types.SimpleNamespace(isSupportedDevice=h == "gpu1")
    fake.nvmlGpmSampleAlloc = lambda: types.SimpleNamespace(n=0)
    fake.nvmlGpmSampleGet = lambda h, sample: None
    fake.nvmlGpmSampleFree = lambda sample: None
    fake.NVML_GPM_METRICS_GET_VERSION = 1
    fake.NVML_GPM_METRIC_SM_UTIL = 2

    class MetricsGet:
        def __init__(self):
            self.metrics = [types.SimpleNamespace(metricId=0, value=0.0)]

    def metrics_get(get):
        assert get.metrics[0].metricId == 2 and get.sample1 is not get.sample2
        get.metrics[0].value = 37.5

    fake.c_nvmlGpmMetricsGet_t = MetricsGet
    fake.nvmlGpmMetricsGet = metrics_get
    monkeypatch.setitem(__import__("sys").modules, "pynvml", fake)

    s = MetricSampler(0.05)
    s.start()
    time.sleep(0.2)
    samples = s.stop()
    keys = [x["key"] for x in samples.series]
    gpu = [
        "gpu0.util",
        "gpu0.mem",
        "gpu0.proc_mem",
        "gpu1.util",
        "gpu1.mem",
        "gpu1.proc_mem",
        "gpu1.sm",
    ]
    assert keys[-7:] == gpu
    units = {x["key"]: (x["unit"], x["group"]) for x in samples.series}
    assert units["gpu1.util"] == ("%", "gpu") and units["gpu0.mem"] == ("bytes", "gpu")
    assert units["gpu1.sm"] == ("%", "gpu") and units["gpu0.proc_mem"] == ("bytes", "gpu")
    expected = [40, 2**30, 2 * 2**20, 75, 3 * 2**30, 5 * 2**20, 37.5]
    assert (samples.values[:, -7:] == expected).all()
    assert NO_GPU_NOTE not in samples.notes
    assert calls == ["init", "shutdown"]


def test_no_nvml_library_is_the_no_gpu_note(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "pynvml", None)  # import fails
    s = MetricSampler(0.05)
    s.start()
    samples = s.stop()
    assert samples.notes == [NO_GPU_NOTE]
    assert not [x for x in samples.series if x["group"] == "gpu"]
