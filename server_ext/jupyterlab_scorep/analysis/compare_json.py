"""A comparison of two runs as GET compare answers it (docs/API.md): totals, the verdict,
the functions and the merged call tree, cut to what a browser can show."""

from __future__ import annotations

from typing import Any

import numpy as np

from .compare import CallPaths, Comparison
from .compare_verdict import Verdict, verdict

MAX_PATHS = 1000
MAX_FUNCTIONS = 2000


def _select_paths(p: CallPaths, max_paths: int) -> np.ndarray:
    """The paths to send: all when few; else the heaviest and the most changed, with
    their ancestors, so the tree stays connected."""
    n = len(p)
    if n <= max_paths:
        return np.ones(n, bool)
    half = max_paths // 2
    heavy = np.argpartition(-np.maximum(p.incl_a, p.incl_b), half)[:half]
    moved = np.argpartition(-np.abs(p.incl_b - p.incl_a), half)[:half]
    chosen = np.zeros(n, bool)
    chosen[heavy] = chosen[moved] = True
    anc = p.parent[np.flatnonzero(chosen)]
    while anc.size:  # up one level per step, only from paths just added
        anc = anc[anc >= 0]
        fresh = anc[~chosen[anc]]
        chosen[fresh] = True
        anc = p.parent[fresh]
    return chosen


def paths_json(p: CallPaths, max_paths: int = MAX_PATHS) -> tuple[list[dict[str, Any]], int]:
    """The merged call tree as nested nodes (top-level paths as the list), and how many
    paths were left out."""
    keep = _select_paths(p, max_paths)
    sel = np.flatnonzero(keep)
    cols = zip(
        sel.tolist(),
        p.key[sel].tolist(),
        p.parent[sel].tolist(),
        p.in_a[sel].tolist(),
        p.in_b[sel].tolist(),
        p.incl_a[sel].tolist(),
        p.incl_b[sel].tolist(),
        p.excl_a[sel].tolist(),
        p.excl_b[sel].tolist(),
        np.rint(p.visits_a[sel]).astype(np.int64).tolist(),
        np.rint(p.visits_b[sel]).astype(np.int64).tolist(),
    )
    built: dict[int, dict[str, Any]] = {}
    roots: list[dict[str, Any]] = []
    for i, k, parent, in_a, in_b, ia, ib, ea, eb, va, vb in cols:
        node = {
            "name": p.names[k],
            "key": p.keys[k],
            "status": "both" if in_a and in_b else "added" if in_b else "removed",
            "incl_a": ia,
            "incl_b": ib,
            "excl_a": ea,
            "excl_b": eb,
            "visits_a": va,
            "visits_b": vb,
            "children": [],
        }
        built[i] = node
        (built[parent]["children"] if parent >= 0 else roots).append(node)
    return roots, int(len(p) - keep.sum())


def comparison_json(
    c: Comparison,
    v: Verdict | None = None,
    *,
    max_paths: int = MAX_PATHS,
    max_functions: int = MAX_FUNCTIONS,
) -> dict[str, Any]:
    """The comparison as GET compare answers it (docs/API.md), without the runs' facts."""
    v = verdict(c) if v is None else v
    tree, dropped = paths_json(c.paths, max_paths)
    out: dict[str, Any] = {
        "total": {
            "a_s": c.total.a,
            "b_s": c.total.b,
            "delta_s": c.total.delta,
            "delta_pct": c.total.pct,
        },
        "outside": {"a_s": c.outside.a, "b_s": c.outside.b},
        "verdict": v.to_json(),
        "functions": [f.to_json() for f in c.functions[:max_functions]],
        "tree": tree,
    }
    if len(c.functions) > max_functions or dropped:
        out["truncated"] = {
            "functions_dropped": max(0, len(c.functions) - max_functions),
            "paths_dropped": dropped,
            "max_functions": max_functions,
            "max_paths": max_paths,
        }
    return out
