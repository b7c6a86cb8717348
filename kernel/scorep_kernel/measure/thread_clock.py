"""Each recorded thread's running and run-queue time, read at a few moments of the run.

Linux keeps, per thread, the time it ran on a CPU and the time it was runnable but waited
for one (``/proc/self/task/<tid>/schedstat``: ``run_ns queue_ns slices``). A thread's
wall time between two readings is split three ways:

- **running** (CPU): the thread executed;
- **queued**: it was ready but other processes (or threads) had the CPUs: the machine's
  load, not the program's;
- **waiting** (the rest): it slept, waited on a lock, a queue, I/O, a device or MPI.

Nothing is read per traced event (the tracer's cost stays what it was): the readings are
taken when the measurement starts and stops, at each cell's begin and end (on the cell's
thread), when a recorded thread ends (``threading.Thread._delete``, which runs on that thread
after its ``run()``), and on every tick of the metric sampler for the threads alive then
(``MetricSampler.on_tick``, the session's). A call's share is interpolated linearly between
the readings around it (``ThreadClocks.at``), so a call shorter than the sampler's interval
gets the mean split of the interval it lies in; calls that begin and end at readings (the
cells) are exact. Outside a thread's readings its time counts as running, as it did before
this split existed.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import numpy as np

from . import thread_hooks

_TASK_DIR = "/proc/self/task"


def read(tid: int) -> tuple[int, int] | None:
    """(running ns, queued ns) of a thread of this process; None when Linux does not say."""
    try:
        with open(f"{_TASK_DIR}/{tid}/schedstat", "rb") as f:
            run_ns, queue_ns = f.read().split()[:2]
        return int(run_ns), int(queue_ns)
    except (OSError, ValueError):
        return None


def available() -> bool:
    return read(threading.get_native_id()) is not None


class ThreadClocks:
    """Readings per native thread id: (perf_counter_ns, running ns, queued ns)."""

    def __init__(self) -> None:
        self.enabled = available()
        self._rows: dict[int, list[tuple[int, int, int]]] = {}
        self._lock = threading.Lock()
        self._stop_watching: Callable[[], None] | None = None

    def note(self, tid: int) -> None:
        """One reading of thread ``tid`` now."""
        if not self.enabled:
            return
        t = time.perf_counter_ns()
        v = read(tid)
        if v is not None:
            with self._lock:
                self._rows.setdefault(tid, []).append((t, v[0], v[1]))

    def note_all(self, skip: frozenset[int] | set[int] = frozenset()) -> None:
        """A reading of every thread of the process but ``skip``."""
        if not self.enabled:
            return
        try:
            tids = [int(x) for x in os.listdir(_TASK_DIR)]
        except OSError:
            return
        for tid in tids:
            if tid not in skip:
                self.note(tid)

    # --- the end of a thread -----------------------------------------------------------
    def watch_thread_ends(self) -> None:
        """Read a thread's clock when it ends (its task is gone right after), through the
        one wrapper of ``threading.Thread._delete`` that measure.thread_hooks keeps (none
        where Python lacks that method: the threads' last readings are then the sampler's
        and the stop's)."""
        if not self.enabled or self._stop_watching is not None:
            return
        self._stop_watching = thread_hooks.listen(
            "end", lambda _thread: self.note(threading.get_native_id())
        )

    def unwatch_thread_ends(self) -> None:
        if self._stop_watching is not None:
            self._stop_watching()
            self._stop_watching = None

    # --- afterwards --------------------------------------------------------------------
    def tids(self) -> list[int]:
        return list(self._rows)

    def at(
        self, tid: int, times_ns: np.ndarray, born_ns: int | None = None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Cumulative (running, queued) ns of thread ``tid`` at each of ``times_ns``
        (perf_counter ns), interpolated between readings; before the first and after the
        last reading time counts as running. ``born_ns``: the thread began then (its
        clocks were 0). None without readings of that thread."""
        rows = list(self._rows.get(tid) or [])
        if not rows:
            return None
        if born_ns is not None:
            rows.append((int(born_ns), 0, 0))
        a = np.asarray(sorted(rows), np.int64)
        t, run, queue = a[:, 0], a[:, 1], a[:, 2]
        x = np.asarray(times_ns, np.int64)
        run_at = np.interp(x, t, run)
        queue_at = np.interp(x, t, queue)
        before, after = x < t[0], x > t[-1]
        run_at[before] = run[0] - (t[0] - x[before])
        run_at[after] = run[-1] + (x[after] - t[-1])
        return np.rint(run_at).astype(np.int64), np.rint(queue_at).astype(np.int64)
