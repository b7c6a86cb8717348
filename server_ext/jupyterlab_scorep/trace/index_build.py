"""Build the columnar trace index of an experiment under ``<experiment>/.index/trace-v3/``
(``trace-v<INDEX_VERSION>``).

Layout (all numpy ``.npy``, memory-mapped by the server; a column holds every location's
rows one after the other, so an index of 1,024 ranks is a dozen files, not 7,000: each
file created cost ~0.5 ms here, 3 of the 5.6 s a 1,024-rank build took)::

    meta.json            definitions, locations, range, levels, source files' mtimes+sizes
    layout.npy           int64 [locations, 9]: where location i's rows are in the columns
                         (LAYOUT_FIELDS: items offset, length; ptr offset, rows, columns;
                         px offset, length; metric events offset, length)
    start|end.npy        int64 ns since the run start: per location all its levels
    region.npy           int32 region ref
    count.npy            int32 calls per item (1 in the raw level)
    ptr.npy              int64, per location [levels+1, max_depth+2]: level k, depth d is
                         [ptr[k, d], ptr[k, d+1]) of its items (level 0 = the raw calls)
    px.npy               float64, per location [levels]: pixel size (ns) each stored level
                         was merged at
    mt|mm|mv.npy         metric events: time, member ref, value
    ct.*.npy             call-path profile derived from the trace (see intervals.CallPaths)
    mpi.pairs.npz        the MPI matrix's non-zero pairs, added on the first GET ranks
                         that asks for them (matrix_pairs; not written by the build)

``index_store.LoadedIndex.array("L<i>.<column>")`` hands out location i's part of a column
as it was stored per location before (``ptr`` as its 2-d table).

``.index/`` is the folder the experiment contract leaves to the server
(``experiment.INDEX_DIR``); its contents are the server's alone, versioned by
``INDEX_VERSION`` (a server of another index version builds its own ``trace-v<N>/`` and
ignores this one). The
directory is written under a temporary name and renamed into place, so a reader sees a
complete index or none. This module runs in the indexing worker process (``worker``).

Times are ns since the run's start. That is the OTF2 global offset, except in a trace of a
whole process (it has a ProgramBegin record: Score-P's), whose clock starts when the
process started: for a kernel's worker that is before the cell, by its start-up (~0.4 s)
or, for a worker started ahead as a spare, by however long it waited. There the run
starts at the first recorded event, and the range ends at the last one (Score-P's trace
length runs on to the process's end). ``origin_epoch_ns`` is then derived from the OTF2
realtime timestamp when the trace has one (Score-P 8.4 writes none: null).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from scorep_kernel import experiment as ex

from . import index_levels, intervals, lod, otf2_definitions, otf2_events, otf2_read

# 2: Score-P's traces count from their first event; cells named alike under both backends
# 3: one file per column for all locations (layout.npy)
INDEX_VERSION = 3
INDEX_NAME = f"trace-v{INDEX_VERSION}"
_NONE = np.zeros(0, np.int64)  # a location's events once they are paired
# layout.npy's columns
LAYOUT_FIELDS = (
    "items_offset", "items_length", "ptr_offset", "ptr_rows", "ptr_columns",
    "px_offset", "px_length", "metrics_offset", "metrics_length",
)  # fmt: skip


def source_files(exp_dir: Path) -> dict[str, list[int]]:
    """``{relative name: [mtime_ns, size]}`` of the archive's files: the index is stale
    when any of them changes. (Checked on every request: one scandir, no Path objects per
    file; 1,024 ranks' files through pathlib took ~70 ms.)"""
    out = {}
    for name in (ex.OTF2_ANCHOR, ex.OTF2_DEFS):
        try:
            st = os.stat(os.path.join(exp_dir, name))
        except OSError:
            continue
        out[name] = [st.st_mtime_ns, st.st_size]
    try:
        entries = sorted(
            os.scandir(os.path.join(exp_dir, ex.OTF2_EVENTS_DIR)), key=lambda e: e.name
        )
    except OSError:  # none, or not a directory
        entries = []
    for entry in entries:
        try:
            st = entry.stat()  # follows a symlink, as Path.stat did
        except OSError:
            continue
        out[f"{ex.OTF2_EVENTS_DIR}/{entry.name}"] = [st.st_mtime_ns, st.st_size]
    return out


def build_index(exp_dir: str | os.PathLike, index_parent: str | os.PathLike) -> dict[str, Any]:
    """Read the trace, write the index into ``index_parent/INDEX_NAME``, return meta."""
    exp_dir, index_parent = Path(exp_dir), Path(index_parent)
    t_begin = time.perf_counter()
    sources = source_files(exp_dir)
    paired = _Paired()
    defs, events = otf2_read.read_trace(str(exp_dir / ex.OTF2_ANCHOR), each=paired.add)
    t_read = time.perf_counter()
    index_parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=index_parent))
    try:
        meta = _write(tmp, defs, events, paired, sources)
        meta["build_s"] = {"read": t_read - t_begin, "total": time.perf_counter() - t_begin}
        (tmp / "meta.json").write_text(json.dumps(meta))
        final = index_parent / INDEX_NAME
        if final.exists():
            stale = index_parent / f".stale-{os.getpid()}-{time.monotonic_ns()}"
            os.rename(final, stale)
            shutil.rmtree(stale, ignore_errors=True)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return meta


@dataclasses.dataclass
class _Paired:
    """Each location's calls, paired as the read hands its events over (``add``), in the
    trace's ticks (made ns once the run's start is known: the conversion is per time, so
    converting the calls' times is converting the events'); the events are let go then,
    and the next location's read reuses their memory (16 bytes an event, 1.4 GB of 1,024
    ranks' 100M events when all were read before the first was paired)."""

    calls: list[intervals.Intervals] = dataclasses.field(default_factory=list)
    first_tick: list[int | None] = dataclasses.field(default_factory=list)
    last_tick: list[np.ndarray] = dataclasses.field(default_factory=list)  # [0] or [1]
    events: list[int] = dataclasses.field(default_factory=list)

    def add(self, ev: otf2_events.LocationEvents) -> otf2_events.LocationEvents:
        self.calls.append(intervals.pair_calls(ev.times, ev.signed_regions))
        has = ev.times.size > 0
        self.first_tick.append(int(ev.times[0]) if has else None)
        self.last_tick.append(ev.times[-1:].copy())
        self.events.append(int(ev.times.size))
        return dataclasses.replace(ev, times=_NONE, signed_regions=_NONE)


def run_start(
    defs: otf2_definitions.Definitions,
    events: list[otf2_events.LocationEvents],
    first_ticks: list[int | None],
) -> int:
    """The tick the run starts at: the global offset, or in a trace of a whole process
    (ProgramBegin) its first Enter, Leave or Metric event (``first_ticks``: each
    location's first Enter or Leave, None where it has none)."""
    if not any(ev.program_begin is not None for ev in events):
        return defs.global_offset
    firsts = [t for t in first_ticks if t is not None]
    firsts += [int(ev.metric_times[0]) for ev in events if ev.metric_times.size]
    return min(firsts) if firsts else defs.global_offset


def _durations(per_location: list[intervals.Intervals]) -> np.ndarray:
    """Every call's duration, in one array written in place (no per-location arrays
    concatenated: one fresh array, not two)."""
    out = np.empty(sum(len(iv) for iv in per_location), np.int64)
    at = 0
    for iv in per_location:
        np.subtract(iv.end, iv.start, out=out[at : at + len(iv)])
        at += len(iv)
    return out


def _write(out: Path, defs, events, paired: _Paired, sources) -> dict[str, Any]:
    per_location = paired.calls
    locations = []
    notes = []
    trace_end = 0
    origin = run_start(defs, events, paired.first_tick)
    whole_process = any(ev.program_begin is not None for ev in events)
    n_events = paired.events
    total_events = sum(n_events) - sum(ev.synthetic for ev in events)
    resolution = defs.timer_resolution
    for info, iv, last in zip(defs.locations, per_location, paired.last_tick):
        iv.start = intervals.to_ns(iv.start, origin, resolution)
        iv.end = intervals.to_ns(iv.end, origin, resolution)
        if last.size:
            trace_end = max(trace_end, int(intervals.to_ns(last, origin, resolution)[0]))
        if iv.closed_at_end:
            notes.append(
                f"{info['name']}: {iv.closed_at_end} calls were still open when the trace "
                "ended; they are shown ending at its last event."
            )
        if iv.opened_at_start:
            notes.append(f"{info['name']}: {iv.opened_at_start} calls began before recording.")
        if iv.mismatched:
            notes.append(f"{info['name']}: {iv.mismatched} Leave events name another region.")
    for ev in events:
        if ev.metric_times.size:
            last = intervals.to_ns(ev.metric_times[-1:], origin, defs.timer_resolution)
            trace_end = max(trace_end, int(last[0]))
    if whole_process:
        full_range = trace_end
    else:
        full_range = max(trace_end, int(defs.trace_length * 1e9 / defs.timer_resolution))
    pixels = lod.level_pixels(_durations(per_location), full_range)
    # The call paths first: then the calls' own arrays can go before the levels are built.
    paths = intervals.call_paths(per_location)
    for name in ("parent", "region", "visits", "incl", "excl", "min", "max"):
        np.save(out / f"ct.{name}.npy", getattr(paths, name))
    del paths
    calls = [(iv.max_depth, len(iv)) for iv in per_location]
    # a block of locations at a time; lets each block's calls go once written
    levels = index_levels.write_levels(out, per_location, pixels)
    n_metric = np.array([ev.metric_times.size for ev in events], np.int64)
    metric_at = np.stack([np.cumsum(n_metric) - n_metric, n_metric], axis=1)
    for name, field, dtype in (
        ("mt", "metric_times", np.int64),
        ("mm", "metric_members", np.int32),
        ("mv", "metric_values", np.float64),
    ):
        column = np.concatenate([getattr(ev, field) for ev in events] or [np.zeros(0, dtype)])
        if name == "mt":
            column = intervals.to_ns(column, origin, defs.timer_resolution)
        np.save(out / f"{name}.npy", column.astype(dtype, copy=False))
    layout = np.concatenate(
        [levels.items, levels.ptr_at, levels.px_at, metric_at.reshape(-1, 2)], axis=1
    )
    np.save(out / "layout.npy", layout.astype(np.int64).reshape(-1, len(LAYOUT_FIELDS)))
    for i, (info, (max_depth, n_calls), n, ev) in enumerate(
        zip(defs.locations, calls, n_events, events)
    ):
        locations.append(
            {
                "id": i,
                "ref": info["ref"],
                "name": info["name"],
                "group": info["group"],
                "kind": info["kind"],
                "max_depth": max_depth,
                "events": n,
                "calls": n_calls,
                "metric_events": int(ev.metric_times.size),
            }
        )
    origin_epoch = None
    if defs.realtime_timestamp is not None:
        since_offset = (origin - defs.global_offset) * 1e9 / defs.timer_resolution
        origin_epoch = str(defs.realtime_timestamp + round(since_offset))
    return {
        "version": INDEX_VERSION,
        "sources": sources,
        "range": [0, full_range],
        "origin_epoch_ns": origin_epoch,
        "timer_resolution": defs.timer_resolution,
        # what t=0 is: the OTF2 global offset, or the first event of a whole process's trace
        "origin": "first_event" if whole_process else "global_offset",
        "origin_ticks": int(origin),  # t=0 in the trace's own ticks (device_read's times)
        "events": total_events,
        "levels": pixels,
        "locations": locations,
        "regions": {str(k): v for k, v in defs.regions.items()},
        "metric_members": {str(k): v for k, v in defs.metric_members.items()},
        "notes": notes,
    }
