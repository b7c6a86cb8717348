"""Shared fixtures for the kernel tests.

Recordings are built by hand from numpy arrays, so every expected number in a test follows
from the events written here (see ``known_threads``). Builders and read-back helpers are
handed to tests through the ``rec`` and ``readback`` fixtures (importing ``conftest``
directly is ambiguous once several test folders have one).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import types
from pathlib import Path

import numpy as np
import otf2
import pytest

from scorep_kernel.formats.recording import (
    ENTER,
    LEAVE,
    ROLE_CELL,
    ROLE_FUNCTION,
    MetricSamples,
    Recording,
    Region,
    ThreadEvents,
)

MS = 1_000_000  # ns
# A monotonic clock reading and the epoch time it corresponds to.
MONO_BASE = 5_000_000_000
EPOCH_BASE = 1_764_403_200_000_000_000


def thread_from_calls(name: str, thread_id: int, calls) -> ThreadEvents:
    """Events from nested ``(region, start, end, [children...])`` tuples."""
    times, regions, kinds = [], [], []

    def emit(call):
        region, start, end, *rest = call
        times.append(start)
        regions.append(region)
        kinds.append(ENTER)
        for child in rest[0] if rest else ():
            emit(child)
        times.append(end)
        regions.append(region)
        kinds.append(LEAVE)

    for call in calls:
        emit(call)
    return ThreadEvents(
        name=name,
        thread_id=thread_id,
        times=np.asarray(times, dtype=np.int64),
        regions=np.asarray(regions, dtype=np.int32),
        kinds=np.asarray(kinds, dtype=np.int8),
    )


# Region indices of the known recording.
CELL, G, F, H = 0, 1, 2, 3
KNOWN_REGIONS = [
    Region("__main__:<cell 1>", "__main__", "<cell 1>", 1, ROLE_CELL),
    Region("__main__:g", "__main__", "<cell 1>", 4, ROLE_FUNCTION),
    Region("__main__:f", "__main__", "<cell 1>", 1, ROLE_FUNCTION),
    Region("numpy:h", "numpy", "/usr/lib/numpy/h.py", 77, ROLE_FUNCTION),
]


def known_threads(base: int = MONO_BASE) -> list[ThreadEvents]:
    """Master thread: the cell runs g, which calls f three times (0.2 s each); the first f
    calls h (grandchild of g: the two CUBE cnode orders differ). Worker: g calls f three
    times, 0.2 s each, no cell around it, so the profile has two roots."""
    b = base
    master = thread_from_calls(
        "Master thread",
        0,
        [
            (
                CELL,
                b,
                b + 1000 * MS,
                [
                    (
                        G,
                        b + 100 * MS,
                        b + 800 * MS,
                        [
                            (F, b + 100 * MS, b + 300 * MS, [(H, b + 150 * MS, b + 200 * MS)]),
                            (F, b + 300 * MS, b + 500 * MS),
                            (F, b + 500 * MS, b + 700 * MS),
                        ],
                    ),
                ],
            ),
        ],
    )
    worker = thread_from_calls(
        "Thread 1 (worker)",
        1,
        [
            (
                G,
                b + 200 * MS,
                b + 900 * MS,
                [
                    (F, b + 250 * MS, b + 450 * MS),
                    (F, b + 450 * MS, b + 650 * MS),
                    (F, b + 650 * MS, b + 850 * MS),
                ],
            ),
        ],
    )
    return [master, worker]


def known_metrics(base: int = MONO_BASE) -> MetricSamples:
    series = [
        {
            "key": "cpu.total",
            "label": "CPU total",
            "unit": "%",
            "group": "cpu",
            "description": "CPU utilisation of all cores",
        },
        {
            "key": "mem.rss",
            "label": "Memory (RSS)",
            "unit": "bytes",
            "group": "memory",
            "description": "Resident memory of the measured process tree",
        },
    ]
    times = base + np.arange(0, 1001 * MS, 100 * MS, dtype=np.int64)
    values = np.column_stack(
        [
            np.linspace(10.0, 90.0, times.size),
            np.full(times.size, 123_456_789.0),
        ]
    )
    return MetricSamples(series=series, times=times, values=values, interval_s=0.1)


def make_recording(threads, regions=KNOWN_REGIONS, metrics=None, *, start=None, end=None):
    all_times = [t.times for t in threads if len(t)]
    lo = min((int(t[0]) for t in all_times), default=MONO_BASE)
    hi = max((int(t[-1]) for t in all_times), default=MONO_BASE)
    return Recording(
        regions=list(regions),
        threads=list(threads),
        clock_offset_ns=EPOCH_BASE - MONO_BASE,
        start_ns=lo - 10 * MS if start is None else start,
        end_ns=hi + 10 * MS if end is None else end,
        hostname="testhost",
        pid=4711,
        metrics=metrics,
    )


@pytest.fixture
def known_recording() -> Recording:
    return make_recording(known_threads(), metrics=known_metrics())


def random_recording(
    seed: int, n_threads: int = 2, n_events: int = 2000, n_regions: int = 12, max_depth: int = 8
) -> Recording:
    """Random balanced call stacks (times strictly increasing per thread)."""
    rng = np.random.default_rng(seed)
    regions = [
        Region(f"mod{i % 3}:fn{i}", f"mod{i % 3}", f"/src/mod{i % 3}.py", i + 1)
        for i in range(n_regions)
    ]
    threads = []
    for t in range(n_threads):
        kinds, regs, stack = [], [], []
        while len(kinds) < n_events or stack:
            if stack and (len(stack) >= max_depth or len(kinds) >= n_events or rng.random() < 0.45):
                kinds.append(LEAVE)
                regs.append(stack.pop())
            else:
                r = int(rng.integers(0, n_regions))
                stack.append(r)
                kinds.append(ENTER)
                regs.append(r)
        steps = rng.integers(1, 1000, size=len(kinds))
        times = MONO_BASE + np.cumsum(steps)
        threads.append(
            ThreadEvents(
                name="Master thread" if t == 0 else f"Thread {t}",
                thread_id=t,
                times=times.astype(np.int64),
                regions=np.asarray(regs, dtype=np.int32),
                kinds=np.asarray(kinds, dtype=np.int8),
            )
        )
    return make_recording(threads, regions)


# --- reading OTF2 back, independently of the writer ---------------------------------


def read_events(anchor) -> list[tuple]:
    """``(location name, kind, time, region name or metric values)`` in reader order."""
    out = []
    with otf2.reader.open(str(anchor)) as trace:
        for location, event in trace.events:
            kind = type(event).__name__
            if kind in ("Enter", "Leave"):
                out.append((location.name, kind, event.time, event.region.name))
            elif kind == "Metric":
                names = tuple(m.name for m in event.metric.members)
                out.append((location.name, kind, event.time, names, tuple(event.values)))
            else:
                out.append((location.name, kind, event.time, None))
    return out


def events_by_location(events) -> dict[str, list[tuple]]:
    per: dict[str, list[tuple]] = {}
    for e in events:
        per.setdefault(e[0], []).append(e[1:])
    return per


def expected_thread_events(recording: Recording) -> dict[str, list[tuple]]:
    """What each thread location must hold: (kind, epoch time, region name)."""
    expected = {}
    for t in recording.threads:
        times = (np.asarray(t.times, np.int64) + recording.clock_offset_ns).tolist()
        expected[t.name] = [
            ("Enter" if k == ENTER else "Leave", ts, recording.regions[r].name)
            for ts, r, k in zip(times, np.asarray(t.regions).tolist(), np.asarray(t.kinds).tolist())
        ]
    return expected


def otf2_print_available() -> bool:
    return shutil.which("otf2-print") is not None


_EVENT_LINE = re.compile(r'^(ENTER|LEAVE)\s+(\d+)\s+(\d+)\s+Region: "(.*)" <(\d+)>\s*$')
_METRIC_LINE = re.compile(r"^METRIC\s+(\d+)\s+(\d+)\s+Metric: (\d+), (\d+) Values: (.*)$")
_METRIC_VALUE = re.compile(r'\("([^"]*)" <\d+>; (\w+); ([^)]*)\)')


def otf2_print_events(anchor) -> list[tuple]:
    """Events from ``otf2-print``: (kind, location id, time, region name) for enter/leave,
    ("METRIC", location id, time, [(member, type, value)])."""
    text = subprocess.run(
        ["otf2-print", str(anchor)], check=True, capture_output=True, text=True, encoding="utf-8"
    ).stdout
    events = []
    for line in text.splitlines():
        m = _EVENT_LINE.match(line)
        if m:
            events.append((m[1], int(m[2]), int(m[3]), m[4]))
            continue
        m = _METRIC_LINE.match(line)
        if m:
            values = [(n, t, float(v)) for n, t, v in _METRIC_VALUE.findall(m[5])]
            events.append(("METRIC", int(m[1]), int(m[2]), values))
    return events


def otf2_print_definitions(anchor) -> str:
    return subprocess.run(
        ["otf2-print", "-G", str(anchor)],
        check=True,
        capture_output=True,
        text=True,
        encoding="utf-8",
    ).stdout


@pytest.fixture
def rec() -> types.SimpleNamespace:
    """Recording builders and the region indices / clock constants of the known recording."""
    return types.SimpleNamespace(
        MS=MS,
        MONO_BASE=MONO_BASE,
        EPOCH_BASE=EPOCH_BASE,
        CELL=CELL,
        G=G,
        F=F,
        H=H,
        KNOWN_REGIONS=KNOWN_REGIONS,
        thread_from_calls=thread_from_calls,
        known_threads=known_threads,
        known_metrics=known_metrics,
        make_recording=make_recording,
        random_recording=random_recording,
    )


@pytest.fixture
def readback() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        read_events=read_events,
        events_by_location=events_by_location,
        expected_thread_events=expected_thread_events,
        otf2_print_available=otf2_print_available,
        otf2_print_events=otf2_print_events,
        otf2_print_definitions=otf2_print_definitions,
    )


@pytest.fixture
def kernel(tmp_path: Path):
    """A fresh Score-P kernel for one test (a module whose tests share one kernel defines
    its own ``kernel`` fixture, which takes precedence)."""
    from test_kernel_harness import KernelHandle

    k = KernelHandle(tmp_path)
    yield k
    k.shutdown()
