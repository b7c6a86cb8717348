"""The clocks of an MPI run's ranks mapped onto the kernel's: ranks on the kernel's host
share its CLOCK_MONOTONIC; a rank on another host is probed (Cristian's method,
CLOCK_PROBES round trips, the shortest wins) at the run's start and end, and its times
are mapped linearly between the two."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from typing import Protocol

from scorep_kernel.measure.session import clock_offset
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.protocol import AsyncChannel, ChannelClosed

CLOCK_PROBES = 8
DRIFT_MIN_S = 60.0  # (see clock_map)


class ProbedRank(Protocol):
    """What the clocks need of a rank (``rank_pool.Rank``, whose reader thread files the
    answers): its channel, its probes in flight and the pairs answered."""

    channel: AsyncChannel
    local: bool
    # seq -> kernel ns when sent; answered (sent, received, rank ns)
    probes: dict[int, int]
    clock: list[tuple[int, int, int]]
    answered: asyncio.Event


async def probe(ranks: Iterable[ProbedRank], seq: int) -> int:
    """CLOCK_PROBES round trips to each of ``ranks``, their answers kept in ``Rank.clock``
    (by the rank's reader); the last probe's sequence number."""
    for rank in ranks:
        for _ in range(CLOCK_PROBES):
            seq += 1
            rank.answered.clear()
            rank.probes[seq] = time.perf_counter_ns()
            try:
                await rank.channel.send(msg.ClockProbe(seq))
                await asyncio.wait_for(rank.answered.wait(), 1.0)
            except (ChannelClosed, asyncio.TimeoutError):
                break
    return seq


def clock_map(ranks: Mapping[int, ProbedRank]) -> dict[int, dict[str, float]]:
    """Per rank: rank ns -> kernel ns as ``kernel = slope * rank + offset_ns``, and the
    round trip of the probe it rests on (``rtt_ns``: the offset is good to half of it).

    The offset is the midpoint of the shortest round trip (Cristian). A rate (slope) is
    estimated from the best probes at the run's start and end only when they are more
    than DRIFT_MIN_S apart: hosts' clocks drift by ~10 ppm, so over a shorter run the
    drift stays below the probes' own error (here ~0.1 ms of round trip on a busy
    machine: a slope from probes 1 s apart was off by 1e-4, i.e. 0.5 s at t = 1.4e13)."""
    out: dict[int, dict[str, float]] = {}
    for r, rank in ranks.items():
        pairs = list(rank.clock)
        if rank.local or not pairs:
            out[r] = {"slope": 1.0, "offset_ns": 0.0, "rtt_ns": 0.0}
            continue
        best = [
            min(phase, key=lambda p: p[1] - p[0])
            for phase in (pairs[:CLOCK_PROBES], pairs[CLOCK_PROBES:])
            if phase
        ]
        (k0, r0), (k1, r1) = [((b[0] + b[1]) / 2, b[2]) for b in (best[0], best[-1])]
        slope = 1.0
        if r1 - r0 > DRIFT_MIN_S * 1e9:
            slope = (k1 - k0) / (r1 - r0)
            if not 1 - 1e-4 < slope < 1 + 1e-4:
                slope = 1.0
        anchor = min(best, key=lambda p: p[1] - p[0])
        k, t = (anchor[0] + anchor[1]) / 2, anchor[2]
        out[r] = {
            "slope": slope,
            "offset_ns": k - slope * t,
            "rtt_ns": float(anchor[1] - anchor[0]),
        }
    return out


def epoch_offset() -> int:
    """time.time_ns() - time.perf_counter_ns() (the measurement session reads it so too)."""
    return clock_offset()
