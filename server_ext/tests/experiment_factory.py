"""Experiment directories written the way the kernel writes them: a Recording through
``scorep_kernel.formats.otf2_writer.write_otf2`` and ``cube_writer.write_cubex``, metrics
through ``experiment.write_metrics`` and the manifest through ``experiment``. Every
expected number in the tests follows from the calls defined here."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf
from scorep_kernel.formats.cube_writer import write_cubex
from scorep_kernel.formats.otf2_writer import write_otf2
from scorep_kernel.formats.recording import (
    ENTER,
    LEAVE,
    ROLE_CELL,
    ROLE_FUNCTION,
    MetricSamples,
    Recording,
    Region,
    ThreadEvents,
)

MS = 1_000_000
MONO_BASE = 5_000_000_000
EPOCH_BASE = 1_764_403_200_000_000_000

CELL, G, F, H = 0, 1, 2, 3
REGIONS = [
    Region("__main__:<cell 1>", "__main__", "<cell 1>", 1, ROLE_CELL),
    Region("__main__:g", "__main__", "<cell 1>", 4, ROLE_FUNCTION),
    Region("__main__:f", "__main__", "<cell 1>", 1, ROLE_FUNCTION),
    Region("numpy:h", "numpy", "/usr/lib/numpy/h.py", 77, ROLE_FUNCTION),
]


def thread_from_calls(name: str, thread_id: int, calls) -> ThreadEvents:
    """Events from nested ``(region, start_ms, end_ms, [children...])`` tuples."""
    times, regions, kinds = [], [], []

    def emit(call):
        region, start, end, *rest = call
        times.append(MONO_BASE + start * MS)
        regions.append(region)
        kinds.append(ENTER)
        for child in rest[0] if rest else ():
            emit(child)
        times.append(MONO_BASE + end * MS)
        regions.append(region)
        kinds.append(LEAVE)

    for call in calls:
        emit(call)
    return ThreadEvents(
        name,
        thread_id,
        np.asarray(times, np.int64),
        np.asarray(regions, np.int32),
        np.asarray(kinds, np.int8),
    )


def known_threads() -> list[ThreadEvents]:
    """Master: the cell (0-1000 ms) runs g (100-800) which calls f three times (200 ms
    each); the first f calls h (150-200). Worker: g (200-900) calls f three times."""
    master = thread_from_calls(
        "Master thread",
        0,
        [
            (
                CELL,
                0,
                1000,
                [
                    (
                        G,
                        100,
                        800,
                        [
                            (F, 100, 300, [(H, 150, 200)]),
                            (F, 300, 500),
                            (F, 500, 700),
                        ],
                    ),
                ],
            ),
        ],
    )
    worker = thread_from_calls(
        "Thread 1 (worker)",
        1,
        [
            (G, 200, 900, [(F, 250, 450), (F, 450, 650), (F, 650, 850)]),
        ],
    )
    return [master, worker]


def many_calls_thread(n_calls: int, name="Master thread") -> ThreadEvents:
    """One long cell with ``n_calls`` back-to-back 1 µs calls of f (for level of detail)."""
    starts = 1000 + np.arange(n_calls, dtype=np.int64) * 2000  # ns after MONO_BASE
    times = np.empty(2 * n_calls + 2, np.int64)
    times[0], times[-1] = 0, starts[-1] + 10_000
    times[1:-1:2], times[2:-1:2] = starts, starts + 1000
    regions = np.full(times.size, F, np.int32)
    regions[0] = regions[-1] = CELL
    kinds = np.empty(times.size, np.int8)
    kinds[1:-1:2], kinds[2:-1:2] = ENTER, LEAVE
    kinds[0], kinds[-1] = ENTER, LEAVE
    return ThreadEvents(name, 0, MONO_BASE + times, regions, kinds)


def metric_samples(
    series: dict[str, tuple[str, str, np.ndarray]], n: int = 11, interval_ms: int = 100
) -> MetricSamples:
    """``{key: (unit, group, values)}`` sampled every ``interval_ms`` from MONO_BASE."""
    meta = [
        {"key": k, "label": k, "unit": u, "group": g, "description": k}
        for k, (u, g, _v) in series.items()
    ]
    values = np.column_stack([np.asarray(v, float) for _u, _g, v in series.values()])
    times = MONO_BASE + np.arange(n, dtype=np.int64) * interval_ms * MS
    return MetricSamples(meta, times, values, interval_s=interval_ms / 1000)


def default_metrics() -> MetricSamples:
    n = 11
    return metric_samples(
        {
            "cpu.total": ("%", "cpu", np.linspace(40.0, 60.0, n)),
            "cpu.core0": ("%", "cpu", np.full(n, 98.0)),
            "cpu.core1": ("%", "cpu", np.full(n, 4.0)),
            "mem.rss": ("bytes", "memory", np.linspace(1.0, 3.0, n) * 2**30),
        },
        n,
    )


def write_experiment(
    exp_dir: Path,
    *,
    threads=None,
    regions=REGIONS,
    metrics="default",
    otf2=True,
    cubex=True,
    status="ok",
    files_status="ready",
    measurement=None,
) -> Path:
    threads = known_threads() if threads is None else threads
    metrics = default_metrics() if metrics == "default" else metrics
    exp_dir = Path(exp_dir)
    exp_dir.mkdir(parents=True, exist_ok=True)
    lo = min(int(t.times[0]) for t in threads if len(t))
    hi = max(int(t.times[-1]) for t in threads if len(t))
    recording = Recording(
        regions=list(regions),
        threads=list(threads),
        clock_offset_ns=EPOCH_BASE - MONO_BASE,
        start_ns=lo,
        end_ns=hi,
        hostname="testhost",
        pid=4711,
        metrics=metrics,
    )
    manifest = mf.new_manifest(
        exp_dir.name,
        backend="builtin",
        isolation="inprocess",
        start_ns=EPOCH_BASE + (lo - MONO_BASE),
        cells=[{"cell_id": "c1", "execution_count": 1, "code": "g()"}],
    )
    files = {}
    if otf2:
        write_otf2(recording, exp_dir)
        files["otf2"] = ex.OTF2_ANCHOR
    if cubex:
        write_cubex(recording, exp_dir / ex.CUBEX, root_name=exp_dir.name)
        files["cubex"] = ex.CUBEX
    if metrics is not None:
        ex.write_metrics(
            exp_dir,
            metrics.series,
            metrics.times + recording.clock_offset_ns,
            metrics.values,
            interval_s=metrics.interval_s,
            notes=metrics.notes,
        )
        files["metrics"] = ex.METRICS_SCHEMA
    manifest.update(
        status=status,
        files_status=files_status,
        files=files,
        end_ns=EPOCH_BASE + (hi - MONO_BASE),
        wall_s=(hi - lo) / 1e9,
        measurement=dict(measurement or {"events": recording.event_count}),
    )
    mf.write_manifest(exp_dir, manifest)
    return exp_dir
