"""The heat map's row search in C (busy_search.c) against numpy's searchsorted: random
rows of sorted keys (empty rows, repeated keys, edges on keys, repeated edges)."""

from __future__ import annotations

import numpy as np

from jupyterlab_scorep.trace import busy_time


def test_the_c_search_is_numpys(monkeypatch):
    assert busy_time._search_library() is not None  # built with the scanner (make setup)
    rng = np.random.default_rng(4)
    for _ in range(200):
        span = int(rng.integers(2, 10_000))
        rows = int(rng.integers(1, 12))
        per_row = [
            np.sort(rng.integers(0, span, int(rng.choice([0, 1, 5, 300])))) for _ in range(rows)
        ]
        key = np.concatenate([k + r * span for r, k in enumerate(per_row)]).astype(np.int64)
        bounds = np.searchsorted(key, np.arange(rows + 1, dtype=np.int64) * span)
        edges = np.sort(rng.integers(0, span, int(rng.integers(1, 40))))
        if key.size and rng.random() < 0.5:  # edges on keys
            edges = np.sort(np.r_[edges, key[: min(5, key.size)] % span])
        want = np.searchsorted(key, np.arange(rows)[:, None] * span + edges[None, :])
        np.testing.assert_array_equal(busy_time.search_rows(key, bounds, edges, span), want)
        monkeypatch.setattr(busy_time, "NATIVE", False)
        np.testing.assert_array_equal(busy_time.search_rows(key, bounds, edges, span), want)
        monkeypatch.setattr(busy_time, "NATIVE", True)
