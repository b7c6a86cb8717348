"""Why the device was idle: each gap between its work, put down to a cause.

Following HTA's idle time breakdown (``hta.analyzers.breakdown_analysis``: *host wait*
when the work that ends a gap was launched after the gap began, *kernel wait* / *other*
when it had been launched before), over the device as a whole (no stream busy) and
within the cell, and splitting HTA's host wait by what the host was doing meanwhile:

- ``input``: the host was in the input pipeline (a DataLoader's ``__next__``) during the
  gap: the device waited for data;
- ``sync``: the gap began while the host was blocked in a synchronising call
  (``cudaStreamSynchronize``, a blocking copy ...): the call drained the device's queue,
  so whatever the host did next left the device without work (the input pipeline's share
  of such a gap still counts as ``input``);
- ``host``: any other time the device waited for the host to launch its next work (Python
  between launches, too little work per launch); also the gap at the start of the cell
  and after its last device work;
- ``other``: the next work had been launched before the gap began (dependencies between
  streams, launch latency: HTA's kernel wait and other), or its launch is unknown (a
  trace without callsite links).

This is the place the running/waiting split (time has two kinds: running, and waiting
such as device sync) reads the device's side from; it knows nothing of how the trace was
read (``device_analysis`` hands it arrays).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .ranks import _union  # disjoint sorted intervals covering the given ones

CAUSES = ("input", "sync", "host", "other")
INPUT_PIPELINE = re.compile(r"(?i)dataloader.*__next__")
SYNC_CALLS = frozenset(
    {
        "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
        "cudaStreamWaitEvent", "cudaMemcpy", "cudaMemcpy2D", "cuCtxSynchronize",
        "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2",
        "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipMemcpy",
    }
)  # fmt: skip
SYNC_SLACK_NS = 50_000  # a sync returns a little after the device finished


@dataclass(frozen=True)
class Intervals:
    start: np.ndarray  # int64 ns, sorted, disjoint
    end: np.ndarray

    @staticmethod
    def union(start: np.ndarray, end: np.ndarray) -> Intervals:
        s, e = _union(np.asarray(start, np.int64), np.asarray(end, np.int64))
        return Intervals(s, e)

    def clip(self, lo: int, hi: int) -> Intervals:
        s = np.clip(self.start, lo, hi)
        e = np.clip(self.end, lo, hi)
        keep = e > s
        return Intervals(s[keep], e[keep])

    @property
    def total(self) -> int:
        return int((self.end - self.start).sum()) if self.start.size else 0

    def overlap(self, lo: int, hi: int) -> int:
        """ns of [lo, hi] these intervals cover."""
        if not self.start.size or hi <= lo:
            return 0
        a = int(np.searchsorted(self.end, lo, side="right"))
        b = int(np.searchsorted(self.start, hi, side="left"))
        if b <= a:
            return 0
        s = np.maximum(self.start[a:b], lo)
        e = np.minimum(self.end[a:b], hi)
        return int(np.maximum(e - s, 0).sum())

    def covers(self, t: int) -> bool:
        i = int(np.searchsorted(self.start, t, side="right")) - 1
        return i >= 0 and int(self.end[i]) >= t

    def gaps(self, lo: int, hi: int) -> Intervals:
        """The complement within [lo, hi]."""
        c = self.clip(lo, hi)
        starts = np.concatenate([[lo], c.end])
        ends = np.concatenate([c.start, [hi]])
        keep = ends > starts
        return Intervals(starts[keep].astype(np.int64), ends[keep].astype(np.int64))


@dataclass(frozen=True)
class DeviceWork:
    """All device activity (every stream) and, per activity, when its launch began on the
    host (-1: unknown)."""

    start: np.ndarray  # int64 ns
    end: np.ndarray
    launch: np.ndarray  # int64 ns, -1 unknown


def classify(
    work: DeviceWork, window: tuple[int, int], input_pipeline: Intervals, sync: Intervals
) -> tuple[dict[str, int], Intervals]:
    """ns of device idle time per cause within ``window``, and the idle gaps."""
    lo, hi = window
    busy = Intervals.union(work.start, work.end)
    gaps = busy.gaps(lo, hi)
    out = dict.fromkeys(CAUSES, 0)
    if not gaps.start.size:
        return out, gaps
    order = np.argsort(work.start, kind="stable")
    starts, launches = work.start[order], work.launch[order]
    for g0, g1 in zip(gaps.start.tolist(), gaps.end.tolist()):
        length = g1 - g0
        k = int(np.searchsorted(starts, g1, side="left"))
        if k < starts.size and starts[k] == g1:
            launch = int(launches[k])
            if launch < 0 or launch <= g0:
                out["other"] += length
                continue
        # the host was late (or the cell went on without more device work)
        waited_input = input_pipeline.overlap(g0, g1)
        out["input"] += waited_input
        rest = length - waited_input
        if sync.overlap(g0 - SYNC_SLACK_NS, g0 + SYNC_SLACK_NS) > 0 and g0 > lo:
            out["sync"] += rest
        else:
            out["host"] += rest
    return out, gaps
