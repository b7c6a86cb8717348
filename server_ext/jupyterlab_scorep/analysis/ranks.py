"""GET ranks: an MPI run's processes side by side, and who talked to whom.

``summarize(index, traffic)`` is pure over a loaded trace index and ``mpi_read``'s
traffic. Per rank, from its locations' calls (the index's exact level, not a level of
detail):

- ``cell_s``: time inside the run's cells (regions of role "cell"; a trace without cell
  regions counts its top-level calls);
- ``mpi_s``: time inside MPI calls (regions of paradigm MPI, nested ones once) within the
  cells: MPI_Init and MPI_Finalize, outside the cells, are not the cell's communication;
- ``compute_s`` = ``cell_s - mpi_s``.

Over the ranks, as the POP project's efficiency metrics define them: ``load_balance`` =
mean / max of the compute times (1 is perfect; ``imbalance_pct`` = 100 (1 - it)), and
``communication_share`` = the MPI time's share of the ranks' cell time. The communication
matrix comes from the trace's MPI messages (``mpi_read``).

``verdicts`` turns them into words for GET summary, with the POP project's rule of thumb
for when an efficiency needs attention: a load balance below 0.8 (IMBALANCE_PCT = 20) and
communication above 20 % of the time (COMMUNICATION_SHARE = 0.2). The routes that read the
index and the MPI records for it are http/rank_routes.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scorep_kernel import region_words as rw

from ..trace import matrix_pairs

IMBALANCE_PCT = 20.0
COMMUNICATION_SHARE = 0.2
MIN_CELL_S = 0.001  # a run shorter than this per rank says nothing about balance
# GET ranks?matrix=pairs sends the matrix as its non-zero pairs (1,024 ranks densely:
# 2 x 1M numbers, 6.5 MB of JSON, 116 ms to encode); without it the matrix is dense.
MATRIX_FORMS = ("dense", "pairs")
SLOWEST_NAMED = 5  # ranks the imbalance verdict names


def matrix_of(traffic: dict[str, Any], form: str = "dense") -> dict[str, Any]:
    """GET ranks' ``matrix``: dense, or (``form`` "pairs") ``size`` and ``pairs`` with
    ``bytes`` and ``messages`` empty. (GET ranks finds the pairs once per index:
    ``matrix_pairs.of_index``.)"""
    dense_bytes = traffic.get("bytes") or []
    dense_messages = traffic.get("messages") or []
    if form != "pairs":
        return {"bytes": dense_bytes, "messages": dense_messages}
    return pairs_matrix(matrix_pairs.from_dense(dense_bytes, dense_messages))


def pairs_matrix(pairs: matrix_pairs.Pairs) -> dict[str, Any]:
    """GET ranks' ``matrix`` in the form "pairs"."""
    return {"bytes": [], "messages": [], "size": pairs.size, "pairs": pairs.as_json()}


def _union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if not start.size:
        return start, end
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(s.size, bool)
    new[1:] = s[1:] > reach[:-1]
    idx = np.flatnonzero(new)
    return s[idx], np.maximum.reduceat(e, idx)


def _length(start: np.ndarray, end: np.ndarray) -> int:
    return int((end - start).sum()) if start.size else 0


def _covered(start: np.ndarray, end: np.ndarray, t: np.ndarray) -> np.ndarray:
    """ns of the disjoint sorted intervals (start, end) before each time of ``t``."""
    before = np.concatenate([[0], np.cumsum(end - start)])
    n = np.searchsorted(start, t, side="right")  # intervals that start by t
    # all of them end by t but the last, which may reach past it
    past = np.where(n > 0, np.maximum(end[np.maximum(n - 1, 0)] - t, 0), 0)
    return before[n] - past


def _overlap(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> int:
    """ns covered by both sets of disjoint sorted intervals: for each interval of ``b``,
    how much of ``a`` lies before its end less how much before its start (a Python loop
    over the pairs took 13 s for the 100M-event benchmark archive's 13M MPI calls)."""
    (s1, e1), (s2, e2) = a, b
    if not s1.size or not s2.size:
        return 0
    return int((_covered(s1, e1, e2) - _covered(s1, e1, s2)).sum())


def _region_kinds(index: Any) -> tuple[np.ndarray, np.ndarray]:
    """Whether each region ref is a cell's and whether an MPI call's (bool tables with one
    slot more, for refs outside), once per index: per location, a np.unique and two
    np.isin over its calls took 0.8 s of the 100M-event benchmark archive's 1.5 s."""

    def make(loaded: Any) -> tuple[np.ndarray, np.ndarray]:
        regions = loaded.regions
        size = max((int(k) for k in regions), default=-1) + 2
        cell, mpi = np.zeros(size, bool), np.zeros(size, bool)
        for key, info in regions.items():
            cell[int(key)] = (info or {}).get("role") == rw.ROLE_CELL
            mpi[int(key)] = (info or {}).get("paradigm") == "mpi"
        return cell, mpi

    return index.cached("ranks_region_kinds", make)


def location_times(index: Any, loc: int) -> tuple[int, int]:
    """(ns in cells, ns in MPI calls within cells) of one location."""
    info = index.locations[loc]
    n = int(info.get("calls") or 0)
    if not n:
        return 0, 0
    start = np.asarray(index.array(f"L{loc}.start")[:n], np.int64)
    end = np.asarray(index.array(f"L{loc}.end")[:n], np.int64)
    region = np.asarray(index.array(f"L{loc}.region")[:n], np.int64)
    cell_region, mpi_region = _region_kinds(index)
    outside = cell_region.size - 1  # refs the definitions do not have: neither
    at = np.where((region >= 0) & (region < outside), region, outside)
    is_cell, is_mpi = cell_region[at], mpi_region[at]
    if is_cell.any():
        cells = _union(start[is_cell], end[is_cell])
    else:
        ptr = np.asarray(index.array(f"L{loc}.ptr")[0], np.int64)
        top = slice(int(ptr[0]), int(ptr[1]) if ptr.size > 1 else n)
        cells = _union(start[top], end[top])
    mpi = _union(start[is_mpi], end[is_mpi])
    return _length(*cells), _overlap(cells, mpi)


def summarize(index: Any, traffic: dict[str, Any]) -> dict[str, Any]:
    processes = traffic.get("processes") or []
    kinds = [loc.get("kind") for loc in index.locations]
    rows = []
    for p in processes:
        cell = mpi = 0
        threads = [i for i in p["locations"] if kinds[i] not in ("metric",)]
        for i, loc in enumerate(threads):
            c, m = location_times(index, loc)
            # the rank's time is its first thread's (the one that runs the cells); MPI
            # calls of its other threads count too
            if i == 0:
                cell = c
            mpi += m
        mpi = min(mpi, cell) if cell else mpi
        r = p["rank"]
        sent = (traffic.get("bytes") or [])[r] if r < len(traffic.get("bytes") or []) else []
        msgs = traffic.get("messages") or []
        coll = (traffic.get("collectives") or [])[r : r + 1] or [{}]
        rows.append(
            {
                "rank": r,
                "name": p["name"],
                "locations": threads,
                "cell_s": cell / 1e9,
                "mpi_s": mpi / 1e9,
                "compute_s": max(0, cell - mpi) / 1e9,
                "bytes_sent": int(sum(sent)),
                "messages_sent": int(sum(msgs[r])) if r < len(msgs) else 0,
                "collective_calls": int(coll[0].get("calls", 0)),
                "collective_bytes_sent": int(coll[0].get("bytes_sent", 0)),
                "collective_bytes_received": int(coll[0].get("bytes_received", 0)),
            }
        )
    compute = np.asarray([row["compute_s"] for row in rows], np.float64)
    cells = np.asarray([row["cell_s"] for row in rows], np.float64)
    mpis = np.asarray([row["mpi_s"] for row in rows], np.float64)
    balance = None
    slowest = None
    slowest_ranks: list[int] = []
    if compute.size and compute.max() > 0:
        balance = float(compute.mean() / compute.max())
        slowest = int(rows[int(np.argmax(compute))]["rank"])
        order = np.argsort(-compute, kind="stable")[:SLOWEST_NAMED]
        slowest_ranks = [int(rows[int(i)]["rank"]) for i in order]
    share = float(mpis.sum() / cells.sum()) if cells.sum() > 0 else None
    return {
        "ranks": rows,
        "load_balance": None if balance is None else round(balance, 4),
        "imbalance_pct": None if balance is None else round(100.0 * (1.0 - balance), 2),
        "slowest_rank": slowest,
        "slowest_ranks": slowest_ranks,
        "communication_share": None if share is None else round(share, 4),
        "matrix": matrix_of(traffic),
        "received": traffic.get("received") or [],
        "unmatched": int(traffic.get("unmatched") or 0),
    }


def _slowest_words(rows: list[dict[str, Any]], slowest: list[int], top: float) -> str:
    """For more than two ranks: the slowest ones by name, and how many are near the
    slowest (within 5 % of its compute time)."""
    if len(rows) <= 2 or len(slowest) < 2:
        return ""
    near = sum(1 for row in rows if row["compute_s"] >= 0.95 * top)
    names = ", ".join(str(r) for r in slowest)
    return f" Slowest: ranks {names} ({near} of {len(rows)} ranks within 5 % of the slowest)."


def verdicts(ranks: dict[str, Any]) -> list[dict[str, Any]]:
    """Imbalance and communication share in words (for GET summary); none for one rank."""
    rows = ranks.get("ranks") or []
    if len(rows) < 2:
        return []
    out = []
    compute = [row["compute_s"] for row in rows]
    cell = [row["cell_s"] for row in rows]
    imbalance = ranks.get("imbalance_pct")
    if imbalance is not None and max(cell) >= MIN_CELL_S:
        slowest = ranks.get("slowest_rank")
        mean = sum(compute) / len(compute)
        numbers = {
            "imbalance_pct": imbalance,
            "load_balance": ranks.get("load_balance"),
            "slowest_rank": slowest,
            "slowest_ranks": ranks.get("slowest_ranks") or [],
            "max_compute_s": round(max(compute), 6),
            "mean_compute_s": round(mean, 6),
        }
        if imbalance >= IMBALANCE_PCT:
            text = (
                f"Load imbalance: rank {slowest} computes {max(compute):.3g} s while the ranks "
                f"average {mean:.3g} s ({imbalance:.0f} % imbalance); the others wait for it, "
                "in MPI calls or at the cell's end. Spread the work more evenly."
            )
            text += _slowest_words(rows, ranks.get("slowest_ranks") or [], max(compute))
            out.append({"kind": "mpi", "level": "warning", "text": text, "numbers": numbers})
        else:
            text = (
                f"The {len(rows)} ranks are balanced: {imbalance:.0f} % imbalance (rank "
                f"{slowest} computes longest, {max(compute):.3g} s)."
            )
            out.append({"kind": "mpi", "level": "info", "text": text, "numbers": numbers})
    share = ranks.get("communication_share")
    if share is not None and sum(cell) > 0:
        mpi_total = sum(row["mpi_s"] for row in rows)
        sent = sum(row["bytes_sent"] for row in rows)
        numbers = {
            "communication_share": share,
            "mpi_s": round(mpi_total, 6),
            "cell_s": round(sum(cell), 6),
            "bytes_sent": sent,
        }
        pct = 100.0 * share
        if share >= COMMUNICATION_SHARE:
            text = (
                f"Communication takes {pct:.0f} % of the ranks' time ({mpi_total:.3g} s of "
                f"{sum(cell):.3g} s in MPI calls): waiting for other ranks or moving data. "
                "The Ranks tab shows who waits and who talks to whom."
            )
            out.append({"kind": "mpi", "level": "warning", "text": text, "numbers": numbers})
        else:
            text = f"Communication takes {pct:.0f} % of the ranks' time ({mpi_total:.3g} s in MPI calls)."
            out.append({"kind": "mpi", "level": "info", "text": text, "numbers": numbers})
    return out
