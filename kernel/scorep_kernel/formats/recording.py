"""What a measured run recorded, in memory: the hand-off from the tracer to the writers.

The tracer fills a ``Recording``; ``formats.otf2_writer`` and ``formats.cube_writer`` turn
it into files. Neither side knows how the other works.

Times are integer nanoseconds of one monotonic clock (``time.perf_counter_ns``);
``clock_offset_ns`` converts them to the epoch: ``epoch_ns = t + clock_offset_ns``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Region roles belong to the experiment contract (region_words.REGION_ROLES, which also
# says how a trace carries them); re-exported here for the tracer and the writers.
from ..region_words import (
    REGION_ROLES,
    ROLE_ARTIFICIAL,
    ROLE_CELL,
    ROLE_FUNCTION,
    ROLE_IMPORT,
    ROLE_KERNEL,
    ROLE_MEMCPY,
    ROLE_MEMSET,
    ROLE_OPERATOR,
    ROLE_RUNTIME,
    ROLE_USER,
)

__all__ = [
    "COPY_KINDS",
    "ENTER",
    "LEAVE",
    "REGION_ROLES",
    "ROLE_ARTIFICIAL",
    "ROLE_CELL",
    "ROLE_FUNCTION",
    "ROLE_IMPORT",
    "ROLE_KERNEL",
    "ROLE_MEMCPY",
    "ROLE_MEMSET",
    "ROLE_OPERATOR",
    "ROLE_RUNTIME",
    "ROLE_USER",
    "Callsites",
    "DeviceStream",
    "Marker",
    "Markers",
    "MetricSamples",
    "Recording",
    "Region",
    "ThreadEvents",
    "ThreadSpan",
]

ENTER = 1
LEAVE = 0


@dataclass(frozen=True)
class Region:
    """A region named by the contract's naming rule (region_words.py: ``module:function``,
    ``module.Class:method``, ``user:<name>``, ``import:<module>``); ``group`` is the module
    (Score-P's region group), which the viewers colour by; ``role`` one of REGION_ROLES."""

    name: str
    group: str
    file: str = ""
    line: int = 0
    role: str = ROLE_FUNCTION


@dataclass
class ThreadEvents:
    """The events of one thread, in time order (times never decrease).

    ``times`` int64 ns, ``regions`` int32 index into ``Recording.regions``, ``kinds`` int8
    ENTER or LEAVE. Enters and leaves are balanced: the tracer closes what is still open
    at the end of the run.
    """

    name: str  # "Master thread", "Thread 1 (worker)", ...
    thread_id: int
    times: np.ndarray
    regions: np.ndarray
    kinds: np.ndarray
    # Accelerator launches among the events (runtime calls that started device work).
    callsites: Callsites | None = None
    # User parameters and measurement on/off (the scorep shim), between the events.
    markers: Markers | None = None
    # int64 ns per event, cumulative: how long the thread had run on a CPU, and had been
    # runnable but queued for one, by each event's time (measure.thread_clock); None where
    # not read (the writers then count all time as running).
    run_ns: np.ndarray | None = None
    queue_ns: np.ndarray | None = None
    # When a thread other than the master began and ended: written as Score-P's pthread
    # adapter writes it (THREAD_BEGIN with the ThreadId attribute = ``thread_id`` before
    # the first event, THREAD_END after the last); None for the master thread, which
    # Score-P gives no such records.
    span: ThreadSpan | None = None

    def __len__(self) -> int:
        return int(self.times.shape[0])


@dataclass(frozen=True)
class ThreadSpan:
    """A thread's begin and end, ns of the events' clock; the writers never put the begin
    after the thread's first event nor the end before its last."""

    begin_ns: int
    end_ns: int


@dataclass(frozen=True)
class Marker:
    """An event of a thread that is no enter or leave: a user parameter (``kind`` "int",
    "uint" or "string", ``name`` and ``value``), the measurement switched off and on
    (``kind`` "on_off", ``value`` True for on), or a file I/O event (``name``: "read" or
    "write" for an operation, ``value``: its matching id), as Score-P writes them."""

    kind: str
    name: str
    value: int | str | bool
    # file I/O (kind "io_create", "io_begin", "io_complete", "io_destroy"): the handle's
    # index into Recording.io_handles, and the bytes asked for (begin) or moved (complete)
    handle: int = -1
    nbytes: int = 0


@dataclass(frozen=True)
class Markers:
    """A thread's markers, each written after the enter/leave event at its position
    (``after``: index into the thread's events, -1 before the first), in order."""

    after: np.ndarray  # int64, non-decreasing
    times: np.ndarray  # int64 ns, same clock as the events
    items: list[Marker]


@dataclass(frozen=True)
class Callsites:
    """Which enter events of a thread launched device work, and the launch's correlation
    id (CUPTI's), which the device activity it started carries too (``DeviceStream``).
    Written as Score-P's CUDA adapter writes its kernel callsites: a "callsite id"
    parameter right after the enter, on the host thread and on the device stream."""

    events: np.ndarray  # int64 positions in ThreadEvents (enter events), increasing
    ids: np.ndarray  # int64 correlation id per position


# Copy directions of DeviceStream.copy (index into this tuple; -1 for no copy).
COPY_KINDS = ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP")


@dataclass
class DeviceStream:
    """One stream of an accelerator, as Score-P's CUDA adapter makes a location of it:
    ``name`` "CUDA[<device>:<stream>]". One row per activity (kernel, copy or set), in
    start order; activities of one stream do not overlap. Times are monotonic ns as the
    threads' events; ``regions`` index ``Recording.regions`` (roles kernel, memcpy,
    memset)."""

    device: int
    stream: int
    name: str
    starts: np.ndarray  # int64
    ends: np.ndarray  # int64
    regions: np.ndarray  # int32
    correlation: np.ndarray  # int64, -1 when the trace had none
    bytes: np.ndarray  # int64, copies and sets; 0 for kernels
    copy: np.ndarray  # int8, index into COPY_KINDS, -1 for kernels and sets
    device_name: str = ""  # "NVIDIA H200", when the trace says

    def __len__(self) -> int:
        return int(self.starts.shape[0])


@dataclass
class MetricSamples:
    """System metrics sampled during the run (see experiment.py for keys and units)."""

    series: list[dict[str, str]]  # [{"key", "label", "unit", "group", "description"}]
    times: np.ndarray  # int64 ns, same monotonic clock as the events
    values: np.ndarray  # float64 [n, len(series)]
    interval_s: float = 0.1
    notes: list[str] = field(default_factory=list)


@dataclass
class Recording:
    regions: list[Region]
    threads: list[ThreadEvents]
    clock_offset_ns: int  # epoch_ns = monotonic ns + clock_offset_ns
    start_ns: int  # monotonic ns when recording started
    end_ns: int  # monotonic ns when recording stopped
    hostname: str = ""
    pid: int = 0
    metrics: MetricSamples | None = None
    # What the tracer wants in the manifest: filters applied, events dropped after the cap...
    notes: dict = field(default_factory=dict)
    # Accelerator streams (torch.profiler's device activity), in (device, stream) order.
    devices: list[DeviceStream] = field(default_factory=list)
    # files opened by the recorded code (their paths; Marker.handle indexes this)
    io_handles: list[str] = field(default_factory=list)

    @property
    def event_count(self) -> int:
        return sum(len(t) for t in self.threads) + 2 * sum(len(d) for d in self.devices)
