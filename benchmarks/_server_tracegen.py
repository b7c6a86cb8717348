"""Synthetic OTF2 experiments for the server benchmarks, written fast.

Call trees are synthesised with numpy (repeated random call-tree shapes, log-normal
durations) and written by the kernel's builtin OTF2 writer, so the server reads exactly
what a profiled cell produces.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
sys.path[:0] = [str(HERE.parent / "kernel"), str(HERE.parent / "server_ext")]


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
        kinds, regs, stack = [], [], []
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
    picks = []
    total = 2
    while total < n_events:
        batch = rng.integers(0, len(units), 4096)
        picks.append(batch)
        total += int(lengths[batch].sum())
    picks = np.concatenate(picks)
    cum = np.cumsum(lengths[picks]) + 2
    picks = picks[: int(np.searchsorted(cum, n_events, side="right"))]
    kinds = np.concatenate([[1]] + [units[i][0] for i in picks] + [[0]]).astype(np.int8)
    shift = rng.integers(0, n_regions - 41, len(picks)).repeat(lengths[picks])
    regs = np.concatenate([units[i][1] for i in picks]).astype(np.int64) + 1 + shift
    regions = np.concatenate([[0], regs, [0]]).astype(np.int32)
    deltas = rng.lognormal(mean=6.0, sigma=1.6, size=len(kinds)).astype(np.int64) + 1
    times = np.cumsum(deltas) + 1_000_000
    return times.astype(np.int64), regions, kinds


def write_experiment(
    exp_dir: Path, n_events: int, n_threads: int = 2, n_regions: int = 400, seed: int = 1
) -> Path:
    """An experiment directory (manifest + OTF2) with about n_events events, written by
    the kernel's own writer (``scorep_kernel.formats.otf2_writer``, fast engine)."""
    from scorep_kernel import experiment as ex
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
            "__main__:run" if r == 0 else f"mod{r % 7}:func{r}",
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
    )
    written = write_otf2(recording, exp_dir)
    manifest = ex.new_manifest(
        exp_dir.name, backend="builtin", isolation="inprocess", start_ns=epoch0
    )
    manifest.update(
        status="ok",
        end_ns=epoch0 + end,
        wall_s=end / 1e9,
        files={"otf2": ex.OTF2_ANCHOR},
        files_status="ready",
        measurement={"events": written["events"]},
    )
    ex.write_manifest(exp_dir, manifest)
    return exp_dir


def cached_experiment(name: str, n_events: int, **kw) -> Path:
    """Generate once under benchmarks/.data/<name>/ (gitignored), reuse afterwards."""
    exp = DATA / name
    if not (exp / "manifest.json").exists():
        t = time.perf_counter()
        write_experiment(exp, n_events, **kw)
        print(
            f"generated {exp} ({n_events:,} events) in {time.perf_counter() - t:.1f} s",
            file=sys.stderr,
        )
    return exp


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else DATA / f"synth-{n}"
    t = time.perf_counter()
    write_experiment(out, n)
    dt = time.perf_counter() - t
    print(f"wrote {n:,} events to {out} in {dt:.2f} s ({n / dt / 1e6:.2f} M events/s)")
    print(os.popen(f"du -sh {out}").read().strip())
