"""The machine's current speed, measured by a fixed piece of interpreter work.

A shared or loaded machine (a CI runner, a VM whose physical cores, caches and clock are
shared with others) runs the same code in more or less CPU time from one minute to the
next: measured here, a 0.14 s CPU-bound cell's running time varied by +-35 % over minutes
at load 5-7, more than a regression gate's threshold. Hardware instruction counts would not
vary so, but a VM rarely exposes them (on these machines ``perf_event_open`` of
PERF_COUNT_HW_INSTRUCTIONS fails with ENOENT: no PMU in the guest).

So each measurement times a reference workload (``REFERENCE``: integer arithmetic, a dict,
``str`` and ``len``, the mix a notebook's Python does) on the thread that runs the cells,
``CHUNKS`` times just before the tracer starts and again just after it stops, by that
thread's CPU clock. The median of the chunks' CPU seconds is the run's ``ref_cpu_s``
(manifest ``cell_time``): a run whose reference took 1.4 times as long ran on a machine
at 0.71 of the speed, and its CPU time, divided by that, is comparable with a run made on
a faster moment (``compare.BASIS_RUNNING_NORMALISED``). Cost: about 2 * CHUNKS * 3 ms.
"""

from __future__ import annotations

import statistics
import time

CHUNKS = 3
ROUNDS = 24_000  # ~3 ms of CPU per chunk on a 2020s x86 core (CPython 3.11)


def _reference(rounds: int) -> int:
    d: dict[int, int] = {}
    acc = 0
    for i in range(rounds):
        d[i & 255] = i
        acc += len(str(i)) + (i * 7) % 13
    return acc


def chunks(n: int = CHUNKS, rounds: int = ROUNDS) -> list[float]:
    """CPU seconds (this thread's clock) of ``n`` runs of the reference workload."""
    out = []
    for _ in range(n):
        t0 = time.thread_time()
        _reference(rounds)
        out.append(time.thread_time() - t0)
    return out


def reference_cpu_s(samples: list[float]) -> float | None:
    """The run's reference time from its chunks: their median (None without any)."""
    xs = [x for x in samples if x > 0]
    return float(statistics.median(xs)) if xs else None
