"""The display's top regions, from a hand-built recording (conftest.known_recording)."""

from __future__ import annotations

import numpy as np

from scorep_kernel.measure.top_regions import exclusive_ns, top_regions

MS = 1_000_000  # ns


def test_exclusive_time_per_region(known_recording):
    # Region ids by name: test modules cannot import conftest when the server's tests, with
    # a conftest of their own, run in the same session.
    ids = {r.name: i for i, r in enumerate(known_recording.regions)}
    CELL, G, F, H = (ids[n] for n in ("__main__:<cell 1>", "__main__:g", "__main__:f", "numpy:h"))
    totals = exclusive_ns(known_recording)
    # master: cell 0-100 and 800-1000; g 700-800; f 3 x 200 less h's 50; worker: g 200-250,
    # 850-900, f 3 x 200
    assert totals[CELL] == 300 * MS
    assert totals[G] == 100 * MS + 100 * MS
    assert totals[F] == 550 * MS + 600 * MS
    assert totals[H] == 50 * MS


def test_top_regions_leave_out_cells(known_recording):
    assert top_regions(known_recording, n=2) == [("__main__:f", 1.15), ("__main__:g", 0.2)]


def test_empty_recording(known_recording):
    for thread in known_recording.threads:
        thread.times, thread.regions, thread.kinds = (np.zeros(0, np.int64), np.zeros(0, np.int32),
                                                      np.zeros(0, np.int8))  # fmt: skip
    assert top_regions(known_recording) == []
