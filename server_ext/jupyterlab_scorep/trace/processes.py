"""The processes of a trace for GET timeline's ``ranks=lo:hi``: its shown locations by
location group (an MPI run: a group per rank, "MPI Rank 3"), in rank order when every group
is named by a rank, else in the order the groups first appear. The panel orders its rows
the same way (src/views/timeline/rankLanes.ts ``processes``), so process p of a request is
the panel's row p.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

_RANK = re.compile(r"rank\s*(\d+)\s*$", re.IGNORECASE)


def rank_of(group: str) -> int | None:
    m = _RANK.search(group)
    return int(m[1]) if m else None


def process_order(shown: list[dict[str, Any]]) -> list[np.ndarray]:
    """Per process, in order, the positions in ``shown`` of its locations."""
    by_group: dict[str, list[int]] = {}
    for pos, loc in enumerate(shown):
        by_group.setdefault(str(loc.get("group") or ""), []).append(pos)
    groups = list(by_group)
    ranks = [rank_of(g) for g in groups]
    if all(r is not None for r in ranks):
        # a stable sort: groups of one rank number keep their order
        groups = [groups[i] for i in sorted(range(len(groups)), key=lambda i: ranks[i] or 0)]
    return [np.asarray(by_group[g], np.int64) for g in groups]
