"""Writing the builtin backend's files: OTF2 events/s of the fast engine (target >= 1.5M/s)
against the otf2 package's public high-level writer, plus the profile.cubex write time.

One synthetic Recording of ~2M events (2 threads, call trees of depth <= 10 over 400
regions, a few thousand distinct call paths, 10 Hz system metrics) goes through the fast
engine (numpy-encoded event files) and the ctypes engine (one libotf2 call per event); a
~300k-event Recording of the same shape goes through the high-level engine (it would take
~12 s for 2M). Run: ``python benchmarks/otf2_write.py [n_events]``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "kernel")]

from _report import report  # noqa: E402
from _server_tracegen import call_trees  # noqa: E402

from scorep_kernel.formats.callpath import build_profile  # noqa: E402
from scorep_kernel.formats.cube_writer import write_cubex  # noqa: E402
from scorep_kernel.formats.otf2_writer import write_otf2  # noqa: E402
from scorep_kernel.formats.recording import (  # noqa: E402
    MetricSamples,
    Recording,
    Region,
    ThreadEvents,
)

TARGET = 1.5e6
N_REGIONS = 400


def synth_thread(name: str, tid: int, n_events: int, seed: int) -> ThreadEvents:
    """A root region around ~n_events of repeated call trees (numpy, no Python per event)."""
    rng = np.random.default_rng(seed)
    trees = call_trees(rng, 64, max_depth=10, max_size=40, regions=(1, 60))
    lengths = np.array([len(k) for k, _ in trees])
    picks = rng.integers(0, len(trees), int(n_events / lengths.mean()) + 64)
    picks = picks[: int(np.searchsorted(np.cumsum(lengths[picks]), n_events - 2))]
    shift = rng.integers(0, 6, len(picks)).repeat(lengths[picks]) * 60
    kinds = np.concatenate([[1]] + [trees[i][0] for i in picks] + [[0]]).astype(np.int8)
    regs = np.concatenate([trees[i][1] for i in picks]) + shift
    regions = np.concatenate([[0], regs, [0]]).astype(np.int32)
    times = np.cumsum(rng.integers(50, 5000, len(kinds))).astype(np.int64) + 1_000_000
    return ThreadEvents(name, tid, times, regions, kinds)


def synth_recording(n_events: int, n_threads: int = 2, seed: int = 1) -> Recording:
    threads = [
        synth_thread(
            "Master thread" if i == 0 else f"Thread {i}", i, n_events // n_threads, seed + i
        )
        for i in range(n_threads)
    ]
    end = max(int(t.times[-1]) for t in threads) + 1000
    regions = [
        Region(
            "__main__:<cell 1>" if r == 0 else f"mod{r % 7}:func{r}",
            "__main__" if r == 0 else f"mod{r % 7}",
            f"/src/mod{r % 7}.py",
            r,
            "cell" if r == 0 else "function",
        )
        for r in range(N_REGIONS)
    ]
    sample_t = np.arange(0, end, 100_000_000, dtype=np.int64)
    series = [
        {"key": k, "label": k, "unit": u, "group": g}
        for k, u, g in (("cpu.total", "%", "cpu"), ("mem.rss", "bytes", "memory"))
    ]
    metrics = MetricSamples(series, sample_t, np.random.default_rng(0).random((sample_t.size, 2)))
    return Recording(
        regions=regions,
        threads=threads,
        clock_offset_ns=time.time_ns(),
        start_ns=0,
        end_ns=end,
        hostname="bench",
        pid=1,
        metrics=metrics,
    )


def main() -> None:
    n_fast = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    n_high = min(300_000, n_fast)
    big = synth_recording(n_fast)
    small = synth_recording(n_high, seed=5)
    with tempfile.TemporaryDirectory(prefix="otf2-bench-") as tmp:
        tmp = Path(tmp)
        fast = write_otf2(big, tmp / "fast", engine="fast")
        per_call = write_otf2(big, tmp / "ctypes", engine="ctypes")
        high = write_otf2(small, tmp / "highlevel", engine="highlevel")
        fast_rate = fast["events"] / fast["seconds"]
        high_rate = high["events"] / high["seconds"]
        report(
            "otf2 write, fast engine",
            fast_rate,
            "events/s",
            peer="otf2 high-level writer",
            peer_value=high_rate,
            target=">= 1.5e6",
            met=fast_rate >= TARGET,
            note=f"{fast['events']:,} events in {fast['seconds']:.2f} s vs "
            f"{high['events']:,} in {high['seconds']:.2f} s",
        )
        per_call_rate = per_call["events"] / per_call["seconds"]
        report(
            "otf2 write, ctypes engine (one libotf2 call per event)",
            per_call_rate,
            "events/s",
            peer="otf2 high-level writer",
            peer_value=high_rate,
            note="the fallback engine; the target applies to the default (fast) engine; "
            f"{per_call['events']:,} events in {per_call['seconds']:.2f} s",
        )

        started = time.perf_counter()
        profile = build_profile(big, root_name="bench")
        profile_s = time.perf_counter() - started
        cube = write_cubex(big, tmp / "profile.cubex", profile=profile)
        total_s = profile_s + cube["seconds"]
        report(
            "profile.cubex write (call paths + file)",
            total_s,
            "s",
            peer="OTF2 fast write of the same events",
            peer_value=fast["seconds"],
            note=f"{big.event_count:,} events, {cube['cnodes']:,} cnodes, "
            f"{cube['locations']} locations: call paths {profile_s:.2f} s, "
            f"file {cube['seconds']:.3f} s",
        )


if __name__ == "__main__":
    main()
