"""A torch.profiler trace into a Recording: operators and runtime calls onto the host
threads that ran them, device activity onto one ``DeviceStream`` per stream.

Kineto stamps events in epoch ns (``KinetoTrace``); the Recording counts monotonic ns,
``epoch = t + clock_offset_ns``. Host events are matched to threads by their thread id
(Kineto's ``tid`` is the OS thread id, ``ThreadEvents.thread_id`` the native id); a
thread the tracer did not record (a DataLoader worker's pin-memory thread) gets a lane of
its own, named as Kineto names it. Only what lies within the recording's span is taken.
Kineto's clock and ours are calibrated apart: where they disagree by more than the gap
between a Python call and its first operator, every event moves by the shift that nests
the operators in their callers (``host_merge.clock_shift``; the notes' ``clock_shift_ns``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..formats.recording import (
    COPY_KINDS,
    ENTER,
    LEAVE,
    ROLE_KERNEL,
    ROLE_MEMCPY,
    ROLE_MEMSET,
    ROLE_OPERATOR,
    ROLE_RUNTIME,
    DeviceStream,
    Recording,
    Region,
    ThreadEvents,
)
from ..manifest import AcceleratorNotes
from . import host_merge
from .kineto_trace import (
    DEVICE_KERNEL,
    DEVICE_MEMCPY,
    HOST_RUNTIME,
    DeviceActivity,
    HostEvent,
    KinetoTrace,
)

RUNTIME_GROUP = "cuda"
_DEVICE_ROLE = {DEVICE_KERNEL: ROLE_KERNEL, DEVICE_MEMCPY: ROLE_MEMCPY}


def stream_name(device: int, stream: int) -> str:
    """The location name Score-P's CUDA adapter gives a stream."""
    return f"CUDA[{device}:{stream}]"


def operator_group(name: str) -> str:
    """The region group (what viewers colour by) of an operator: its namespace
    (``aten::mm`` -> ``aten``), else ``torch``."""
    head, sep, _ = name.partition("::")
    return head if sep and head.isidentifier() else "torch"


class _Regions:
    def __init__(self, regions: list[Region]):
        self.regions = regions
        self.index = {r: i for i, r in enumerate(regions)}

    def of(self, region: Region) -> int:
        found = self.index.get(region)
        if found is None:
            found = self.index[region] = len(self.regions)
            self.regions.append(region)
        return found


def _host_region(e: HostEvent) -> Region:
    if e.kind == HOST_RUNTIME:
        return Region(e.name, RUNTIME_GROUP, "", 0, ROLE_RUNTIME)
    return Region(e.name, operator_group(e.name), "", 0, ROLE_OPERATOR)


def _device_region(a: DeviceActivity) -> Region:
    role = _DEVICE_ROLE.get(a.kind, ROLE_MEMSET)
    return Region(a.name, role, "", 0, role)


def _streams(
    acts: list[DeviceActivity], offset: int, lo: int, hi: int, table: _Regions, names: dict
) -> tuple[list[DeviceStream], int]:
    """One DeviceStream per (device, stream); a start before the previous end on the
    same stream (clock jitter) is moved to that end, as Score-P's adapter does."""
    out: list[DeviceStream] = []
    moved = 0
    by_stream: dict[tuple[int, int], list[DeviceActivity]] = {}
    for a in acts:
        t0, t1 = a.start_ns - offset, a.end_ns - offset
        if t1 < lo or t0 > hi:
            continue
        by_stream.setdefault((a.device, a.stream), []).append(a)
    for (device, stream), items in sorted(by_stream.items()):
        starts = np.array([a.start_ns - offset for a in items], np.int64)
        ends = np.array([a.end_ns - offset for a in items], np.int64)
        prev_end = np.maximum.accumulate(np.concatenate([[starts[0]], ends[:-1]]))
        late = starts < prev_end
        moved += int(late.sum())
        starts = np.maximum(starts, prev_end)
        ends = np.maximum(ends, starts)
        out.append(
            DeviceStream(
                device=device,
                stream=stream,
                name=stream_name(device, stream),
                starts=starts,
                ends=ends,
                regions=np.array([table.of(_device_region(a)) for a in items], np.int32),
                correlation=np.array([a.correlation for a in items], np.int64),
                bytes=np.array([a.bytes for a in items], np.int64),
                copy=np.array(
                    [COPY_KINDS.index(a.copy) if a.copy in COPY_KINDS else -1 for a in items],
                    np.int8,
                ),
                device_name=names.get(device, ""),
            )
        )
    return out, moved


def _lane(name: str, tid: int, intervals: host_merge.HostIntervals) -> ThreadEvents:
    """A thread lane of host events only (a thread the tracer did not record)."""
    empty = ThreadEvents(name, tid, np.zeros(0, np.int64), np.zeros(0, np.int32),
                         np.zeros(0, np.int8))  # fmt: skip
    merged, _ = host_merge.merge(empty, intervals)
    return merged


def _by_tid(events: list[HostEvent], offset: int, lo: int, hi: int) -> dict[int, list[HostEvent]]:
    """The host events within [lo, hi] (monotonic ns, ``epoch - offset``) by thread id."""
    by_tid: dict[int, list[HostEvent]] = {}
    for e in events:
        if e.end_ns - offset >= lo and e.start_ns - offset <= hi:
            by_tid.setdefault(e.tid, []).append(e)
    return by_tid


def _clock_shift(recording: Recording, by_tid: dict[int, list[HostEvent]]) -> int:
    """The shift (ns) that nests the host events of the recorded threads in their
    Python calls (``host_merge.clock_shift``), one for all: the clocks are the process's."""
    offset = recording.clock_offset_ns
    threads = []
    for thread in recording.threads:
        events = by_tid.get(thread.thread_id, [])
        starts = np.array([e.start_ns - offset for e in events], np.int64)
        ends = np.array([e.end_ns - offset for e in events], np.int64)
        threads.append((thread, starts, ends))
    return host_merge.find_shift(threads)


def add_to_recording(recording: Recording, trace: KinetoTrace) -> AcceleratorNotes:
    """``recording`` with the trace's operators, launches and device streams; returns
    what the manifest's ``measurement.accelerator`` says of it (counts, what was left
    out, the clock shift)."""
    lo, hi = recording.start_ns, recording.end_ns
    table = _Regions(recording.regions)
    pids = {e.pid for e in trace.host}
    mine = [e for e in trace.host if e.pid == recording.pid or len(pids) == 1]
    shift = _clock_shift(recording, _by_tid(mine, recording.clock_offset_ns, lo, hi))
    offset = recording.clock_offset_ns - shift  # Kineto's epoch ns -> ours, shifted
    by_tid = _by_tid(mine, offset, lo, hi)
    threads = list(recording.threads)
    index = {t.thread_id: i for i, t in enumerate(threads)}
    dropped = 0
    for tid, events in by_tid.items():
        intervals = host_merge.HostIntervals(
            starts=np.array([max(e.start_ns - offset, lo) for e in events], np.int64),
            ends=np.array([min(e.end_ns - offset, hi) for e in events], np.int64),
            regions=np.array([table.of(_host_region(e)) for e in events], np.int32),
            callsite=np.array(
                [e.correlation if e.kind == HOST_RUNTIME else -1 for e in events], np.int64
            ),
        )
        if tid in index:
            merged, n = host_merge.merge(threads[index[tid]], intervals)
            threads[index[tid]] = merged
            dropped += n
        else:
            label = trace.thread_names.get((events[0].pid, tid)) or f"thread {tid}"
            name = f"Thread {len(threads)} (torch: {label})" if recording.threads else label
            index[tid] = len(threads)
            threads.append(_lane(name, tid, intervals))
    names = {d.id: d.name for d in trace.devices}
    streams, moved = _streams(trace.device, offset, lo, hi, table, names)
    recording.threads = threads
    recording.regions = table.regions
    recording.devices = streams
    return AcceleratorNotes(
        operators=sum(1 for e in mine if e.kind != HOST_RUNTIME),
        runtime_calls=sum(1 for e in mine if e.kind == HOST_RUNTIME),
        device_activities=sum(len(s) for s in streams),
        streams=[s.name for s in streams],
        left_out_not_nested=dropped,
        device_starts_moved=moved,
        skipped_events=trace.skipped,
        clock_shift_ns=shift,
    )


def device_thread_events(stream: DeviceStream) -> ThreadEvents:
    """A stream's activities as an enter/leave stream (the profile builder's input)."""
    n = len(stream)
    times = np.empty(2 * n, np.int64)
    times[0::2], times[1::2] = stream.starts, stream.ends
    regions = np.repeat(np.asarray(stream.regions, np.int32), 2)
    kinds = np.tile(np.array([ENTER, LEAVE], np.int8), n)
    return ThreadEvents(stream.name, -1 - stream.stream, times, regions, kinds)


def with_device_lanes(recording: Recording) -> Recording:
    """A copy whose threads end with the device streams (for the call-path profile)."""
    extra = [device_thread_events(s) for s in recording.devices]
    return replace(recording, threads=list(recording.threads) + extra, devices=[])
