"""Run-to-run noise: when a difference of times between two runs counts as a change.

**Noise.** Visits are counted exactly: any difference in visits is real. A difference of
times counts only when ``|Δ| > max(floor_s, rel * max(A, B))`` (``Noise.exceeds``):

- ``rel`` is measured when the cell has been run at least ``MIN_NOISE_RUNS`` times with
  the same source (``noise_from_runs``): 2.77 times the runs' relative spread (sigma,
  estimated as 1.4826 * median absolute deviation / median, robust to one slow outlier).
  2.77 = 1.96 * sqrt(2) is the 95 % bound of the difference of two runs that each vary
  with that sigma. It is kept within [MIN_REL, MAX_REL].
- Without such runs, ``rel`` is DEFAULT_REL = 10 %, the factor airspeed velocity uses by
  default to call a benchmark changed. On the 2-core machines this was built on, eight
  runs of one unchanged cell spread by sigma = 6-30 % (a loaded machine), so a smaller default
  would call noise a regression; the measured rule takes over as soon as a cell has a
  history.
- ``floor_s`` (2 ms for the run, 1 ms for one function) keeps a scheduler tick or a timer
  quantum in a very short run from reading as a change of many per cent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from scorep_kernel import manifest as mf

DEFAULT_REL = 0.10
RUN_FLOOR_S = 0.002
FUNCTION_FLOOR_S = 0.001
MIN_REL = 0.02
MAX_REL = 0.50
MIN_NOISE_RUNS = 3
SPREAD_TO_THRESHOLD = 1.96 * math.sqrt(2.0)  # 95 % bound of the difference of two runs


@dataclass(frozen=True)
class Noise:
    """When a difference of times is more than run-to-run noise (see the module doc)."""

    rel: float = DEFAULT_REL
    floor_s: float = RUN_FLOOR_S
    function_floor_s: float = FUNCTION_FLOOR_S
    # how rel was decided, in words, and over how many runs (0: the default)
    basis: str = "default: 10 % (no earlier runs of the same source to measure it from)"
    runs: int = 0

    def threshold(self, a: float, b: float, *, function: bool = False) -> float:
        floor = self.function_floor_s if function else self.floor_s
        return max(floor, self.rel * max(abs(a), abs(b)))

    def exceeds(self, a: float, b: float, *, function: bool = False) -> bool:
        return bool(abs(b - a) > self.threshold(a, b, function=function))

    def to_json(self) -> dict[str, Any]:
        return {
            "rel": self.rel,
            "floor_s": self.floor_s,
            "function_floor_s": self.function_floor_s,
            "basis": self.basis,
            "runs": self.runs,
        }


DEFAULT_NOISE = Noise()


def ref_cpu_s(manifest: mf.Manifest) -> float | None:
    """The run's reference workload CPU seconds (``cell_time.ref_cpu_s``: the machine's
    speed around the run, compare.py's module doc); None where it was not measured."""
    ct = manifest.get("cell_time")
    ref = ct.get("ref_cpu_s") if isinstance(ct, dict) else None
    return float(ref) if isinstance(ref, (int, float)) and ref > 0 else None


def judged_time(manifest: mf.Manifest) -> float | None:
    """A run's time as the verdict compares it (compare.py's basis): where the manifest's
    ``cell_time`` has the split, the running time of a CPU-bound cell (in units of the
    reference workload where the run measured it: ``cpu_s / ref_cpu_s``, the machine's
    speed taken out), else the cells' time less what they were queued for a CPU; else its
    ``wall_s``. What picks the best of repeated runs and what ``noise_from_runs`` measures
    the spread of: compare runs that all measured the reference, or none."""
    wall = manifest.get("wall_s")
    ct = manifest.get("cell_time")
    if isinstance(ct, dict) and isinstance(ct.get("time_s"), (int, float)):
        queue, cpu = ct.get("queue_s"), ct.get("cpu_s")
        unqueued = float(ct["time_s"]) - (float(queue) if isinstance(queue, (int, float)) else 0.0)
        if isinstance(cpu, (int, float)) and cpu > 0 and cpu >= 0.5 * unqueued:
            ref = ref_cpu_s(manifest)  # CPU-bound: its running time (compare.py's basis)
            return float(cpu) / ref if ref else float(cpu)
        return unqueued
    return float(wall) if isinstance(wall, (int, float)) else None


def noise_from_runs(times_s: Sequence[float], default: Noise = DEFAULT_NOISE) -> Noise:
    """The noise of a cell measured from the times of its runs with one source (e.g. the
    manifests' ``wall_s``); ``default`` when fewer than MIN_NOISE_RUNS usable times."""
    xs = np.asarray([t for t in times_s if t is not None and math.isfinite(t) and t > 0], float)
    if xs.size < MIN_NOISE_RUNS:
        return default
    med = float(np.median(xs))
    sigma_rel = 1.4826 * float(np.median(np.abs(xs - med))) / med
    rel = min(MAX_REL, max(MIN_REL, SPREAD_TO_THRESHOLD * sigma_rel))
    return replace(
        default,
        rel=rel,
        basis=(
            f"measured: {xs.size} runs of the same source vary by ±{sigma_rel * 100:.1f} % "
            f"(sigma), so a change must exceed {rel * 100:.0f} %"
        ),
        runs=int(xs.size),
    )
