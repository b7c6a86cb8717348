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


def test_mpi_calls_location_by_location_are_np_isin_over_all_calls():
    """The heat map's MPI calls, found per location through a table of MPI regions, are
    the old selection's: np.isin over every raw call's region (region 0 an MPI one,
    refs outside the definitions, negative ones, locations without calls, none MPI)."""
    from types import SimpleNamespace

    rng = np.random.default_rng(9)
    for regions in (
        {"0": {"paradigm": "mpi"}, "1": {"paradigm": "python"}, "4": {"paradigm": "mpi"},
         "5": None, "7": {}},
        {"1": {"paradigm": "python"}},
    ):  # fmt: skip
        index = SimpleNamespace(regions=regions)
        mpi = [int(k) for k, v in regions.items() if (v or {}).get("paradigm") == "mpi"]
        for _ in range(50):
            region = rng.integers(-3, 12, 3000).astype(np.int32)
            n = int(rng.integers(0, 20))
            calls = rng.integers(0, 80, n) * (rng.random(n) < 0.8)
            gaps = rng.integers(0, 30, n)
            offset = np.cumsum(gaps + np.r_[0, calls[:-1]]).astype(np.int64)
            raw = busy_time._ranges(offset, calls)
            pos = np.repeat(np.arange(n, dtype=np.int64), calls)
            keep = np.isin(region[raw], mpi)
            got_raw, got_pos = busy_time._mpi_calls(index, region, offset, calls)
            np.testing.assert_array_equal(got_raw, raw[keep])
            np.testing.assert_array_equal(got_pos, pos[keep])
