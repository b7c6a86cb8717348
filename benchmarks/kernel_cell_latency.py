"""Latency of a profiled cell in subprocess isolation, with and without the spare worker.

The spare worker is started after each cell with the modules the namespace uses already
imported, so the next profiled cell pays neither interpreter start nor those imports.
Figures (same kernel, same run, a trivial cell ``y = float(arr.sum())`` over a numpy array):
the round trip of the profiled cell with a spare (median of 5), the peer figure without a
spare (a fresh interpreter that imports numpy), and the plain cell's round trip. Also: a cell
printing 100k lines, profiled against unprofiled (the worker's output path under tracing).
Target: with a spare, a profiled cell costs under 0.5 s more than a plain cell.

Ordinary cells against the stock ipykernel (issue 11: they cost nothing): a stock
``python3`` kernel runs beside the Score-P one, and the same unprofiled cells (the trivial
one and ~40 ms of pure Python) alternate between the two, ROUNDS times each, before the
notebook profiled anything and again with the spare and its template ready (paused
while cells run). Medians of the alternating pairs' differences; target <= +3 ms a cell
(the kernel's own work per cell, timed inside it and reported too: the spare's
pause/resume and its preparation after the reply; one pair's difference varies by several
ms here).
Run: ``python benchmarks/kernel_cell_latency.py`` (~70 s).
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
BUSY = "s = sum(i * i for i in range(400_000))"  # ~40 ms of the interpreter
ROUNDS = 30
# The kernel's own work around every cell once a spare exists, timed inside the kernel:
# pausing and resuming the spare and its template, and preparing the spare after the reply.
OWN_WORK = """import time as _t
_k = get_ipython().kernel
_t0 = _t.perf_counter()
for _ in range(100):
    _k.pool.pause()
    _k.pool.resume()
    _k._prepare_spare()
print((_t.perf_counter() - _t0) / 100)
"""


def against_stock(kernel: Kernel, stock: Kernel) -> dict[str, tuple[float, float, float]]:
    """{cell: (Score-P kernel median, stock median, median of paired differences)} s."""
    out = {}
    for code in (CELL, BUSY):
        ours, theirs, diffs = [], [], []
        for i in range(ROUNDS):
            pair = {}
            for k in (kernel, stock) if i % 2 == 0 else (stock, kernel):
                pair[k is kernel] = timed(k, code)
            ours.append(pair[True])
            theirs.append(pair[False])
            diffs.append(pair[True] - pair[False])
        out[code] = (statistics.median(ours), statistics.median(theirs), statistics.median(diffs))
    return out


def timed(kernel: Kernel, code: str, metadata: dict | None = None) -> float:
    result = kernel.run(code, metadata)
    assert result.status == "ok", result.error
    return result.seconds


def main() -> None:
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as cwd:
        kernel = Kernel("scorep-python", cwd=cwd)
        stock = Kernel("python3", cwd=cwd)
        try:
            for k in (kernel, stock):
                timed(k, "import numpy as np\narr = np.ones(100_000)")
            before = against_stock(kernel, stock)
            plain = statistics.median(timed(kernel, CELL) for _ in range(5))
            timed(kernel, CELL, PROFILED)  # first profiled cell: no spare yet
            with_spare = []
            for _ in range(5):
                time.sleep(SETTLE_S)
                with_spare.append(timed(kernel, CELL, PROFILED))
            time.sleep(SETTLE_S)
            beside_spare = against_stock(kernel, stock)
            own = kernel.run(OWN_WORK)
            assert own.status == "ok", own.error
            own_work = float(own.stdout.strip())
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
            stock.close()
    spare_median = statistics.median(with_spare)
    report(
        "profiled cell round trip with spare worker (builtin, subprocess)", spare_median, "s",
        peer="without spare (fresh interpreter + imports)", peer_value=statistics.median(without),
        target="< plain + 0.5 s", met=spare_median < plain + 0.5,
    )  # fmt: skip
    report("plain cell round trip (same kernel)", plain, "s")
    for when, figures in (("no profiling yet", before), ("spare and template ready", beside_spare)):
        for code, name in ((CELL, "trivial cell"), (BUSY, "40 ms cell")):
            ours, theirs, diff = figures[code]
            report(
                f"unprofiled {name} in the Score-P kernel, {when}", ours, "s",
                peer="stock ipykernel, alternating", peer_value=theirs,
                target="<= stock + 3 ms", met=diff <= 0.003,
                note=f"median of {ROUNDS} paired differences: {1000 * diff:+.2f} ms",
            )  # fmt: skip
    report(
        "the kernel's own work per cell with a spare (pause, resume, prepare)", own_work, "s",
        note="timed inside the kernel, mean of 100",
    )  # fmt: skip
    report(
        "profiled cell printing 100k lines (builtin, subprocess)", flood_profiled, "s",
        peer="the same cell unprofiled", peer_value=flood_plain,
    )  # fmt: skip


if __name__ == "__main__":
    main()
