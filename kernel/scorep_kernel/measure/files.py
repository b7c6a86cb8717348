"""Write a measured run's files into its experiment directory and account for them in the
manifest (``files_status`` "ready", or "failed" with the errors)."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import numpy as np

from scorep_kernel import manifest as mf

from .. import experiment
from ..formats.recording import Recording

# Never print here: in the kernel the files are written after the cell's reply, and
# whatever reached sys.stderr would show in the output of whichever cell runs then.
log = logging.getLogger("scorep_kernel")


def _measurement_summary(recording: Recording) -> dict:
    notes = dict(recording.notes or {})
    dropped = notes.get("dropped", {})
    summary = dict(notes)  # engine, filters, dropped {reason: calls}, cap, messages
    summary.update(
        events=recording.event_count,
        dropped_total=int(sum(v for v in dropped.values() if isinstance(v, int))),
        threads=len(recording.threads),
        regions=len(recording.regions),
        duration_s=(recording.end_ns - recording.start_ns) / 1e9,
    )
    if recording.metrics is not None:
        summary["metric_samples"] = len(recording.metrics.times)
        summary["metric_notes"] = list(recording.metrics.notes)
    return summary


def write_all(exp_dir: str | Path, recording: Recording) -> dict:
    """traces.otf2, profile.cubex, metrics.json/.npz, then the manifest. Never raises:
    failures are recorded in the manifest (files_status "failed", errors [...])."""
    exp_dir = Path(exp_dir)
    files: dict[str, str] = {}
    errors: list[str] = []
    timings: dict[str, float] = {}

    def step(name: str, fn) -> None:
        t = time.perf_counter()
        try:
            fn()
        except Exception as e:  # reported in the manifest, never raised
            errors.append(f"{name}: {type(e).__name__}: {e}")
            log.warning("writing %s into %s failed", name, exp_dir, exc_info=True)
        timings[name] = round(time.perf_counter() - t, 4)

    def otf2() -> None:
        from ..formats.otf2_writer import write_otf2

        write_otf2(recording, exp_dir)
        files["otf2"] = experiment.OTF2_ANCHOR

    def cubex() -> None:
        from ..formats.cube_writer import write_cubex

        if recording.devices:  # the device streams as locations of their own
            from ..formats.cube_devices import write_cubex_with_devices

            write_cubex_with_devices(recording, exp_dir / experiment.CUBEX)
        else:
            write_cubex(recording, exp_dir / experiment.CUBEX)
        files["cubex"] = experiment.CUBEX

    def metrics() -> None:
        m = recording.metrics
        if m is None:
            return
        t = np.asarray(m.times, np.int64) + np.int64(recording.clock_offset_ns)
        experiment.write_metrics(
            exp_dir, m.series, t, m.values, interval_s=m.interval_s, notes=m.notes
        )
        files["metrics"] = experiment.METRICS_SCHEMA
        files["metrics_data"] = experiment.METRICS_DATA

    if (exp_dir / experiment.KINETO_TRACE).is_file():  # torch.profiler's own trace
        files["kineto"] = experiment.KINETO_TRACE
    step("traces.otf2", otf2)
    step("profile.cubex", cubex)
    step("metrics", metrics)
    summary = _measurement_summary(recording)
    summary["write_seconds"] = timings
    summary["written_by_pid"] = os.getpid()  # the kernel's own, a worker's, or a writer's
    changes: mf.ManifestChanges = {
        "files": files,
        "measurement": summary,
        "files_status": mf.FILES_FAILED if errors else mf.FILES_READY,
    }
    if errors:
        changes["errors"] = errors
    try:
        mf.update_manifest(exp_dir, **changes)
    except Exception as e:
        # No manifest (a bare directory) or an unwritable one: leave what we can.
        errors.append(f"manifest: {type(e).__name__}: {e}")
    return {"files": files, "errors": errors, "seconds": timings}
