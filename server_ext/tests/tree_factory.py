"""Call trees built by hand (``calltree.CallTree``), for tests of the comparison: every
number in a test follows from the nested tuples it writes."""

from __future__ import annotations

import numpy as np

from jupyterlab_scorep.trace.calltree import CallTree


def tree(*roots, locations: int = 1, source: str = "cubex") -> CallTree:
    """A CallTree from nested ``(name, incl_s, visits, [children])`` tuples. With several
    locations, ``incl_s`` and ``visits`` may be tuples (one value per location).
    Exclusive time is inclusive less the children's inclusive time, as in a profile."""
    parent: list[int] = []
    nodes: list[dict] = []
    incl: list[np.ndarray] = []
    visits: list[np.ndarray] = []

    def per_location(v) -> np.ndarray:
        arr = np.asarray(v if isinstance(v, tuple) else (v,) + (0,) * (locations - 1), float)
        assert arr.shape == (locations,)
        return arr

    def add(node, par):
        name, t, n, *rest = node
        i = len(nodes)
        parent.append(par)
        module = name.split(":", 1)[0] if ":" in name else ""
        nodes.append({"name": name, "group": module, "file": "", "line": 0})
        incl.append(per_location(t))
        visits.append(per_location(n))
        for child in rest[0] if rest else ():
            add(child, i)

    for root in roots:
        add(root, -1)
    p = np.asarray(parent, np.int64)
    inc = np.vstack(incl) if incl else np.zeros((0, locations))
    exc = inc.copy()
    has = p >= 0
    np.subtract.at(exc, p[has], inc[has])
    vis = np.vstack(visits) if visits else np.zeros((0, locations))
    return CallTree(
        source=source,
        locations=[{"id": i, "name": f"thread {i}"} for i in range(locations)],
        parent=p,
        nodes=nodes,
        visits=vis,
        incl_s=inc,
        excl_s=exc,
        min_s=np.zeros_like(inc),
        max_s=np.zeros_like(inc),
    )
