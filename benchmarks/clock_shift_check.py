"""How torch.profiler's operators land under the Python call that made them when Kineto's
clock and ours disagree (accel.host_merge's clock shift).

Our tracer's times are mapped to Unix time by ``measure.session.clock_offset``; Kineto
maps its own clock when the profiler starts. This script pushes our mapping by a given
number of ns (as a late or early calibration under load would) and profiles, in this
process, a cell of three ``step()`` calls that each run one ``aten::matmul``. A run is
*right* when no operator was left out and each ``step`` holds exactly one matmul; printed
per offset: right runs of N, the shifts host_merge found, and the operators left out.

Run: ``python benchmarks/clock_shift_check.py [RUNS] [OFFSET_NS ...]`` (default
``10 0 15000 -15000 40000 -40000``; needs torch, skipped without). Not a timing: the
figures are counts, the same on a quiet or a loaded machine but for the clocks' own
disagreement, which this adds to.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "kernel")]

from scorep_kernel.formats.recording import ENTER  # noqa: E402
from scorep_kernel.measure import session  # noqa: E402
from scorep_kernel.measure.measure_config import MeasureConfig  # noqa: E402

CELL = """
w = torch.randn(64, 64)
def step(x):
    return torch.relu(x @ w).sum()
for _ in range(3):
    loss = step(w)
"""
STEPS = 3


def matmuls_per_step(recording) -> list[int]:
    """Per ``__main__:step`` call on the master thread, the aten::matmul calls directly in it."""
    master = recording.threads[0]
    per: list[int] = []
    stack: list[str] = []
    for region, kind in zip(master.regions.tolist(), master.kinds.tolist()):
        if kind != ENTER:
            stack.pop()
            continue
        name = recording.regions[region].name
        if name == "__main__:step":
            per.append(0)
        elif name == "aten::matmul" and stack[-1:] == ["__main__:step"]:
            per[-1] += 1
        stack.append(name)
    return per


def one_run(torch, exp_dir: str) -> tuple[bool, int | None, int]:
    m = session.Measurement(exp_dir, MeasureConfig())
    m.start()
    with m.cell("cell [1]"):
        exec(CELL, {"torch": torch, "__name__": "__main__"})
    recording = m.stop()
    notes = recording.notes["accelerator"]
    left_out = int(notes["left_out_not_nested"])
    right = matmuls_per_step(recording) == [1] * STEPS and left_out == 0
    return right, notes.get("clock_shift_ns"), left_out


def main() -> None:
    if importlib.util.find_spec("torch") is None:
        print("clock shift check: skipped, torch is not installed here")
        return
    import torch

    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    offsets = [int(x) for x in sys.argv[2:]] or [0, 15_000, -15_000, 40_000, -40_000]
    read = session.clock_offset
    push = 0
    session.clock_offset = lambda: read() + push  # type: ignore[assignment]
    print(f"{STEPS} step() calls of one aten::matmul each, {runs} runs per offset")
    with tempfile.TemporaryDirectory() as tmp:
        for push in offsets:
            outcomes = [one_run(torch, f"{tmp}/{push}_{i}") for i in range(runs)]
            right = sum(o[0] for o in outcomes)
            print(
                f"our clock {push / 1000:+g} us: right {right}/{runs}, "
                f"shifts found (ns) {[o[1] for o in outcomes]}, left out {[o[2] for o in outcomes]}",
                flush=True,
            )


if __name__ == "__main__":
    main()
