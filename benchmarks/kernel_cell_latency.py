"""Latency of a profiled cell in subprocess isolation, with and without the spare worker.

The spare worker is started after each cell with the modules the namespace uses already
imported, so the next profiled cell pays neither interpreter start nor those imports.
Figures (same kernel, same run, a trivial cell ``y = float(arr.sum())`` over a numpy array):
the round trip of the profiled cell with a spare (median of 5), the peer figure without a
spare (a fresh interpreter that imports numpy), and the plain cell's round trip. Also: a cell
printing 100k lines, profiled against unprofiled (the worker's output path under tracing).
Target: with a spare, a profiled cell costs under 0.5 s more than a plain cell.
Run: ``python benchmarks/kernel_cell_latency.py`` (~50 s).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "kernel")]

from _kernel_client import Kernel  # noqa: E402
from _report import report  # noqa: E402

PROFILED = {"scorep": {"profile": True, "backend": "builtin", "isolation": "subprocess"}}
CELL = "y = float(arr.sum())"
SETTLE_S = 3.0  # time between cells, as a person takes: the spare starts and imports


def timed(kernel: Kernel, code: str, metadata: dict | None = None) -> float:
    result = kernel.run(code, metadata)
    assert result.status == "ok", result.error
    return result.seconds


def main() -> None:
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as cwd:
        kernel = Kernel("scorep-python", cwd=cwd)
        try:
            timed(kernel, "import numpy as np\narr = np.ones(100_000)")
            plain = statistics.median(timed(kernel, CELL) for _ in range(5))
            timed(kernel, CELL, PROFILED)  # first profiled cell: no spare yet
            with_spare = []
            for _ in range(5):
                time.sleep(SETTLE_S)
                with_spare.append(timed(kernel, CELL, PROFILED))
            # output-heavy cell: 100k printed lines, live through the worker
            flood = "for i in range(100_000):\n    print(i)"
            flood_plain = timed(kernel, flood)
            time.sleep(SETTLE_S)
            flood_profiled = timed(kernel, flood, PROFILED)
            timed(kernel, "%scorep spare_worker=false")
            without = []
            for _ in range(3):
                time.sleep(SETTLE_S)
                without.append(timed(kernel, CELL, PROFILED))
        finally:
            kernel.close()
    spare_median = statistics.median(with_spare)
    report(
        "profiled cell round trip with spare worker (builtin, subprocess)", spare_median, "s",
        peer="without spare (fresh interpreter + imports)", peer_value=statistics.median(without),
        target="< plain + 0.5 s", met=spare_median < plain + 0.5,
    )  # fmt: skip
    report("plain cell round trip (same kernel)", plain, "s")
    report(
        "profiled cell printing 100k lines (builtin, subprocess)", flood_profiled, "s",
        peer="the same cell unprofiled", peer_value=flood_plain,
    )  # fmt: skip


if __name__ == "__main__":
    main()
