"""Write a measured run's files into its experiment directory and account for them in the
manifest (``files_status`` "ready", or "failed" with the errors)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from scorep_kernel import manifest as mf

from .. import experiment
from ..formats.recording import Recording
from .top_regions import DisplaySummary, display_summary

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


OnSummary = Callable[[DisplaySummary], None]
OnDone = Callable[[], None]


def build_and_write(
    exp_dir: Path, build: Callable[[], Recording], on_summary: OnSummary | None = None
) -> None:
    """Build the Recording, say its display summary, write the files (write_all records
    its own failures; a failing build is recorded here, in the manifest)."""
    try:
        recording = build()
    except Exception as e:
        mf.update_manifest(
            exp_dir,
            files_status=mf.FILES_FAILED,
            errors=[f"building the recording failed: {type(e).__name__}: {e}"],
        )
        return
    if on_summary is not None:
        on_summary(display_summary(recording))
    write_all(exp_dir, recording)


def write_in_idle_thread(
    exp_dir: Path,
    build: Callable[[], Recording],
    on_summary: OnSummary | None = None,
    on_done: OnDone | None = None,
) -> threading.Thread:
    """``build_and_write`` in a daemon thread of this process at the scheduler's idle
    priority (that thread only, Linux), so that the next cell the user runs meanwhile does
    not wait for it (one way: an unprivileged thread cannot come back from SCHED_IDLE, and
    this one ends when the files are written); ``on_done`` from that thread when it ends.
    A kernel shutting down waits for it only as long as it chooses."""

    def work() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except (AttributeError, OSError):  # not Linux, or not allowed: written as before
            pass
        try:
            build_and_write(exp_dir, build, on_summary)
        finally:
            if on_done is not None:
                on_done()

    thread = threading.Thread(target=work, name="scorep-write-files", daemon=True)
    thread.start()
    return thread
