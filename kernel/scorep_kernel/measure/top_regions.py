"""The few numbers a profiled cell's display shows at once: the regions with the most
exclusive time, computed from the Recording with numpy (no per-event Python loop).

They are ranked by what the user can speed up, as the panel's Summary ranks them
(server_ext compare.py, ``effective``): where the threads' clocks were read
(``ThreadEvents.run_ns``), a region's running time on any thread plus its waiting on the
thread that ran the cells (a thread that only sleeps ranks low); else its exclusive time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scorep_kernel.formats.recording import ENTER, ROLE_CELL, Recording


def exclusive_ns(recording: Recording, effective: bool = False) -> np.ndarray:
    """Exclusive time per region index, summed over threads (``effective``: the part the
    module doc ranks by).

    Each gap between two consecutive events of a thread belongs to the region on top of the
    stack after the first of them: the entered region after an ENTER, the caller (the last
    region entered one level up) after a LEAVE."""
    totals = np.zeros(len(recording.regions), dtype=np.int64)
    for thread in recording.threads:
        n = len(thread)
        if n < 2:
            continue
        kinds = thread.kinds.astype(np.int64)
        regions = thread.regions.astype(np.int64)
        step = np.where(kinds == ENTER, 1, -1)
        depth_after = np.cumsum(step)
        top = np.full(n, -1, dtype=np.int64)
        is_enter = kinds == ENTER
        top[is_enter] = regions[is_enter]
        leaves = np.flatnonzero(~is_enter & (depth_after > 0))
        enter_pos = np.flatnonzero(is_enter)
        enter_depth = depth_after[enter_pos]
        for d in np.unique(depth_after[leaves]):
            candidates = enter_pos[enter_depth == d]
            at = leaves[depth_after[leaves] == d]
            k = np.searchsorted(candidates, at) - 1
            ok = k >= 0
            top[at[ok]] = regions[candidates[k[ok]]]
        gaps = np.diff(thread.times.astype(np.int64))
        if effective and thread.run_ns is not None and thread.queue_ns is not None:
            if thread.name == "Master thread":  # the cells' thread: all but the queued
                gaps = gaps - np.diff(thread.queue_ns.astype(np.int64))
            else:
                gaps = np.diff(thread.run_ns.astype(np.int64))
        owner = top[:-1]
        valid = owner >= 0
        np.add.at(totals, owner[valid], gaps[valid])
    return totals


def top_regions(recording: Recording, n: int = 5) -> list[tuple[str, float]]:
    """``[(name, exclusive seconds)]``, largest first, cells left out (they are the frame)."""
    return _top(recording, exclusive_ns(recording), n, exclusive_ns(recording, True))


def top_and_measured(recording: Recording, n: int = 5) -> tuple[list[tuple[str, float]], float]:
    """``top_regions`` and the exclusive time of every region (cells too) on every thread,
    in seconds: what the top regions' shares are of (the panel's summary divides by the
    same, the inclusive time of the call tree's roots)."""
    totals = exclusive_ns(recording)
    rank = exclusive_ns(recording, True)
    return _top(recording, totals, n, rank), round(float(totals.sum()) / 1e9, 6)


def _top(
    recording: Recording, totals: np.ndarray, n: int, rank: np.ndarray
) -> list[tuple[str, float]]:
    order = np.lexsort((-totals, -rank))
    out: list[tuple[str, float]] = []
    for index in order:
        if len(out) >= n:
            break
        if totals[index] <= 0:
            continue
        region = recording.regions[index]
        if region.role == ROLE_CELL:
            continue
        out.append((region.name, round(float(totals[index]) / 1e9, 6)))
    return out


def top_and_measured_or_empty(
    recording: Recording, n: int = 5
) -> tuple[list[tuple[str, float]], float | None]:
    """``top_and_measured``, or ``([], None)`` if it fails: a summary must never cost the run."""
    try:
        return top_and_measured(recording, n)
    except Exception:
        return [], None


@dataclass(frozen=True)
class DisplaySummary:
    """What a profiled cell's display says of its recording: the events, the top regions
    and what their shares are of (``top_and_measured``)."""

    events: int
    top: list[tuple[str, float]]
    measured_s: float | None

    def to_json(self) -> dict[str, object]:
        return {"events": self.events, "top": self.top, "measured_s": self.measured_s}

    @classmethod
    def from_json(cls, data: object) -> DisplaySummary:
        """As ``to_json`` wrote it; ValueError naming the key otherwise."""
        if not isinstance(data, dict):
            raise ValueError(f"a display summary is an object, not {type(data).__name__}")
        events, top, measured = data.get("events"), data.get("top"), data.get("measured_s")
        if not isinstance(events, int):
            raise ValueError(f"display summary: events must be an int, not {events!r}")
        if not isinstance(top, list) or not all(
            isinstance(t, list) and len(t) == 2 and isinstance(t[0], str) for t in top
        ):
            raise ValueError(f"display summary: top must be [[name, seconds]...], not {top!r}")
        if measured is not None and not isinstance(measured, (int, float)):
            raise ValueError(f"display summary: measured_s must be seconds, not {measured!r}")
        return cls(events, [(str(n), float(t)) for n, t in top], measured)


def display_summary(recording: Recording, n: int = 5) -> DisplaySummary:
    """The display's numbers of ``recording`` (top regions empty if they cannot be had)."""
    top, measured_s = top_and_measured_or_empty(recording, n)
    return DisplaySummary(recording.event_count, top, measured_s)
