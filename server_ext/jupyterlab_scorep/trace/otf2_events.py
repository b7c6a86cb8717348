"""A location's events as every reader hands them on (``otf2_read``'s libotf2 callbacks,
``otf2_fast``'s native scanner and numpy decoder): ``LocationEvents``, and Score-P's buffer
flushes and "recording off" spans turned into calls of its artificial regions, the same
way for every reader (``with_artificial_calls``; otf2_read's module doc says why)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from .otf2_definitions import Definitions

# How read_trace reads the event files the fast paths can read (see otf2_read.read_trace).
Decoder = Literal["auto", "numpy", "callbacks"]


@dataclass
class LocationEvents:
    ref: int
    times: np.ndarray  # int64, as recorded (not yet relative to the global offset)
    signed_regions: np.ndarray  # int64: region ref for Enter, ~region (negative) for Leave
    metric_times: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    metric_members: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    metric_values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    program_begin: int | None = None  # time of a ProgramBegin record on this location
    synthetic: int = 0  # Enter/Leave events made here from flushes and on/off records


def with_artificial_calls(
    times: np.ndarray,
    regions: np.ndarray,
    flushes: list[tuple[int, int, int]],
    switches: list[tuple[int, int, bool]],
    defs: Definitions,
) -> tuple[np.ndarray, np.ndarray, int]:
    """The Enter/Leave stream with Score-P's flushes and "recording off" spans as calls of
    its artificial regions (see the module docstring); the number of events added."""
    at: list[int] = []  # insert before this position of the original stream
    t_new: list[int] = []
    r_new: list[int] = []
    if defs.flush_region is not None and flushes:
        times = times.copy()
        for pos, start, stop in flushes:
            stop = max(stop, start)
            at += [pos, pos]
            t_new += [start, stop]
            r_new += [defs.flush_region, ~defs.flush_region]
            # events stamped before the flush ended happened after it
            end = pos + int(np.searchsorted(times[pos:], stop, side="left"))
            times[pos:end] = stop
    if defs.off_region is not None and switches:
        off = False
        for pos, t, turns_off in switches:
            if turns_off != off:
                off = turns_off
                at.append(pos)
                t_new.append(t)
                r_new.append(defs.off_region if off else ~defs.off_region)
        if off:  # never switched back on: off until the last event
            at.append(times.size)
            t_new.append(max(int(times[-1]) if times.size else 0, t_new[-1]))
            r_new.append(~defs.off_region)
    if not at:
        return times, regions, 0
    # np.insert keeps the given order among equal positions (a flush's Enter, then Leave)
    order = np.argsort(np.asarray(at), kind="stable")
    where = np.asarray(at, np.int64)[order]
    times = np.insert(times, where, np.asarray(t_new, np.int64)[order])
    regions = np.insert(regions, where, np.asarray(r_new, np.int64)[order])
    return times, regions, len(at)
