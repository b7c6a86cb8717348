"""Large synthetic experiments, written fast: for the server's load and event-loop tests and
for the server benchmarks (benchmarks/_server_tracegen.py imports this module).

Call trees are synthesised with numpy (repeated random call-tree shapes, log-normal
durations) and written by the kernel's own writers (OTF2 fast engine, CUBE4, metrics,
manifest), so the server reads exactly what a profiled cell produces. The same arguments
give the same events.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf
from scorep_kernel import region_words as rw


def call_trees(
    rng: np.random.Generator,
    n_units: int,
    max_depth: int,
    max_size: int = 24,
    regions: tuple[int, int] = (0, 40),
):
    """Call-tree shapes: lists of (kind, relative region) with kind 1 enter, 0 leave. Each
    tree grows to a random size in [2, max_size), then closes its open calls; relative
    regions are drawn from the half-open range ``regions``."""
    units = []
    for _ in range(n_units):
        kinds: list[int] = []
        regs: list[int] = []
        stack: list[int] = []
        target = int(rng.integers(2, max_size))
        while len(kinds) < target or stack:
            if stack and (len(stack) >= max_depth or len(kinds) >= target or rng.random() < 0.45):
                kinds.append(0)
                regs.append(stack.pop())
            else:
                r = int(rng.integers(*regions))
                stack.append(r)
                kinds.append(1)
                regs.append(r)
        units.append((np.array(kinds, np.int8), np.array(regs, np.int32)))
    return units


def synth_thread(n_events: int, n_regions: int, seed: int, max_depth: int = 10):
    """(times, regions, kinds) of one thread: a root region around repeated call trees
    with log-normal durations, so every zoom level has structure."""
    rng = np.random.default_rng(seed)
    units = call_trees(rng, 64, max_depth)
    lengths = np.array([len(k) for k, _ in units])
    picks_parts = []
    total = 2
    while total < n_events:
        batch = rng.integers(0, len(units), 4096)
        picks_parts.append(batch)
        total += int(lengths[batch].sum())
    picks = np.concatenate(picks_parts)
    cum = np.cumsum(lengths[picks]) + 2
    picks = picks[: int(np.searchsorted(cum, n_events, side="right"))]
    kinds = np.concatenate([[1]] + [units[i][0] for i in picks] + [[0]]).astype(np.int8)
    shift = rng.integers(0, n_regions - 41, len(picks)).repeat(lengths[picks])
    regs = np.concatenate([units[i][1] for i in picks]).astype(np.int64) + 1 + shift
    regions = np.concatenate([[0], regs, [0]]).astype(np.int32)
    deltas = rng.lognormal(mean=6.0, sigma=1.6, size=len(kinds)).astype(np.int64) + 1
    times = np.cumsum(deltas) + 1_000_000
    return times.astype(np.int64), regions, kinds


def synth_metrics(end_ns: int, interval_s: float = 0.1, seed: int = 0):
    """System metric samples over [0, end_ns], every ``interval_s``: CPU per core and in
    total, and a growing RSS (keys and units as experiment.py lists them)."""
    from scorep_kernel.formats.recording import MetricSamples

    rng = np.random.default_rng(seed)
    step = int(interval_s * 1e9)
    times = np.arange(0, end_ns + step, step, dtype=np.int64)
    n = times.size
    core0 = np.clip(rng.normal(90, 5, n), 0, 100)
    core1 = np.clip(rng.normal(10, 5, n), 0, 100)
    series = [
        {"key": "cpu.total", "label": "CPU total", "unit": "%", "group": "cpu"},
        {"key": "cpu.core0", "label": "CPU core 0", "unit": "%", "group": "cpu"},
        {"key": "cpu.core1", "label": "CPU core 1", "unit": "%", "group": "cpu"},
        {"key": "mem.rss", "label": "RSS", "unit": "bytes", "group": "memory"},
    ]
    for s in series:
        s["description"] = s["label"]
    values = np.column_stack(
        [(core0 + core1) / 2, core0, core1, np.linspace(1e8, 5e8, n) + rng.normal(0, 1e6, n)]
    )
    return MetricSamples(series, times, values, interval_s=interval_s)


def write_experiment(
    exp_dir: Path,
    n_events: int,
    n_threads: int = 2,
    n_regions: int = 400,
    seed: int = 1,
    *,
    metrics: bool = False,
    cubex: bool = False,
) -> Path:
    """An experiment directory with about ``n_events`` events: manifest and OTF2, plus
    system metrics (in the trace and in metrics.json/.npz, as the kernel writes them) and a
    CUBE4 profile when asked for."""
    from scorep_kernel.formats.cube_writer import write_cubex
    from scorep_kernel.formats.otf2_writer import write_otf2
    from scorep_kernel.formats.recording import Recording, Region, ThreadEvents

    exp_dir = Path(exp_dir)
    exp_dir.mkdir(parents=True, exist_ok=True)
    threads = []
    for i in range(n_threads):
        times, regs, kinds = synth_thread(n_events // n_threads, n_regions, seed + i)
        threads.append(
            ThreadEvents("Master thread" if i == 0 else f"Thread {i}", i, times, regs, kinds)
        )
    regions = [
        Region(
            rw.function_region_name("__main__", "run")
            if r == 0
            else rw.function_region_name(f"mod{r % 7}", f"func{r}"),
            "__main__" if r == 0 else f"mod{r % 7}",
            f"mod{r % 7}.py",
            r,
        )
        for r in range(n_regions)
    ]
    end = max(int(t.times[-1]) for t in threads)
    epoch0 = time.time_ns()
    recording = Recording(
        regions=regions,
        threads=threads,
        clock_offset_ns=epoch0,
        start_ns=0,
        end_ns=end + 1000,
        hostname="bench",
        pid=1,
        metrics=synth_metrics(end, seed=seed) if metrics else None,
    )
    written = write_otf2(recording, exp_dir)
    files = {"otf2": ex.OTF2_ANCHOR}
    if cubex:
        write_cubex(recording, exp_dir / ex.CUBEX, root_name=exp_dir.name)
        files["cubex"] = ex.CUBEX
    if recording.metrics is not None:
        m = recording.metrics
        ex.write_metrics(
            exp_dir, m.series, m.times + epoch0, m.values, interval_s=m.interval_s, notes=m.notes
        )
        files["metrics"] = ex.METRICS_SCHEMA
    manifest = mf.new_manifest(
        exp_dir.name, backend="builtin", isolation="inprocess", start_ns=epoch0
    )
    manifest.update(
        status=mf.STATUS_OK,
        end_ns=epoch0 + end,
        wall_s=end / 1e9,
        files=files,
        files_status=mf.FILES_READY,
        measurement={"events": written["events"]},
    )
    mf.write_manifest(exp_dir, manifest)
    return exp_dir
