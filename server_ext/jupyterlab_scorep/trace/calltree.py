"""GET calltree: the call-path profile from profile.cubex (pycubexr) or, without a profile,
from the trace index. Both sources become one ``CallTree`` of numpy arrays; ``to_json``
renders it, for one location or summed over all.

A profile's artificial top (Score-P's program region, "python3.11", with its "THREADS"
node that holds the threads Score-P did not see created; the builtin writer's synthetic
root) is the measurement's frame: ``CallTree.frame`` marks it, and the JSON and the
summary leave it out, so their roots are the run's cells and threads, as in the tree
derived from the trace, under either backend. The program region's own time is the
measured process outside the cells (its start-up, the namespace's transfer, its exit), not
the run's (compare.py reports it as ``outside_s``). Names and groups follow the contract
as in the trace reader (``otf2_definitions.region_label``, ``region_group``): a cell
reads "cell [n]" under both backends.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np

from scorep_kernel import region_words as rw

from .otf2_definitions import FLUSH_REGION_NAME, OFF_REGION_NAME, region_group, region_label

# Larger trees keep their heaviest nodes (by inclusive time); ``truncated`` says so.
MAX_NODES = 5000


class ProfileReadError(Exception):
    """A profile.cubex that cannot be read; the message says why."""


@dataclass
class CallTree:
    source: str  # "cubex" | "trace"
    locations: list[dict[str, Any]]  # [{id, name}]
    parent: np.ndarray  # int64 [P], -1 for roots; parents come before children
    nodes: Sequence[dict[str, Any]]  # region info per node: name, group, file, line
    visits: np.ndarray  # float64 [P, L]
    incl_s: np.ndarray
    excl_s: np.ndarray
    min_s: np.ndarray
    max_s: np.ndarray
    # bool [P]: the measurement's frame (see the module docstring), None: no such node
    frame: np.ndarray | None = None
    # int [P]: the node's region, numbered 0..R-1; nodes of one region share one dict in
    # ``nodes``. None where the reader did not number them (compare.py keys by it).
    region: np.ndarray | None = None
    # float [P, L], exclusive like excl_s: of the node's own time, how long its thread ran
    # on a CPU and how long it was queued for one (the rest it waited: sleep, lock, I/O).
    # None where the measurement did not read the threads' clocks (profile.cubex's
    # cpu_time / queue_time metrics, builtin runs).
    cpu_s: np.ndarray | None = None
    queue_s: np.ndarray | None = None

    def shown(self) -> np.ndarray:
        """bool [P]: the nodes a viewer shows (all but the frame)."""
        n = len(self.nodes)
        return np.ones(n, bool) if self.frame is None else ~np.asarray(self.frame, bool)

    def top_level(self) -> np.ndarray:
        """bool [P]: shown nodes whose parent is none or the frame: the run's top."""
        shown = self.shown()
        parent = np.asarray(self.parent, np.int64)
        above = np.where(parent >= 0, ~shown[np.maximum(parent, 0)], True)
        return shown & above


def from_cubex(path: str | Path) -> CallTree:
    """Read a CUBE4 profile. Raises ProfileReadError for anything pycubexr rejects."""
    try:
        return _from_cubex(Path(path))
    except ProfileReadError:
        raise
    except Exception as e:  # tarfile, XML, index, data and KeyError failures alike
        raise ProfileReadError(
            f"profile.cubex cannot be read ({type(e).__name__}: {e}); it is truncated, "
            "damaged or not a CUBE4 file. Re-run the cell, or use the trace's call tree."
        ) from None


def _cube_group(paradigm: str | None) -> str | None:
    """The region group in Cube's "<paradigm>:<group>"; None where it names none."""
    _, colon, group = (paradigm or "").partition(":")
    return group if colon else None


def _from_cubex(path: Path) -> CallTree:
    from pycubexr import CubexParser
    from pycubexr.utils.exceptions import MissingMetricError

    with CubexParser(path) as cube:
        every = []
        for root in cube.get_root_cnodes():
            every += root.get_all_children()  # depth-first pre-order
        regions = [c.region or cube.get_region(c) for c in every]
        # Cube's paradigm reads "<paradigm>:<group>" ("user:__main__", a cell's "user:cell")
        groups = [_cube_group(r.paradigm) for r in regions]
        roles = [
            rw.decode_region_role(r.description, r.role or "", r.name or "", g)
            for r, g in zip(regions, groups)
        ]
        # the artificial top: artificial roots and artificial children of those (parents
        # come first in pre-order), but never the flush and recording-off markers
        position = {c.id: i for i, c in enumerate(every)}
        top = np.zeros(len(every), bool)
        for i, c in enumerate(every):
            p = position.get(c.parent.id, -1) if c.parent else -1
            top[i] = (
                roles[i] == rw.ROLE_ARTIFICIAL
                and regions[i].name not in (FLUSH_REGION_NAME, OFF_REGION_NAME)
                and (p < 0 or top[p])
            )
        cnodes = every
        locations = [{"id": i, "name": loc.name} for i, loc in enumerate(cube.get_locations())]
        n_loc = len(locations)
        index = {c.id: i for i, c in enumerate(cnodes)}
        parent = np.array(
            [index.get(c.parent.id, -1) if c.parent else -1 for c in cnodes], np.int64
        )

        def metric(name: str, **conv):
            try:
                values = cube.get_metric_values(cube.get_metric_by_name(name))
            except (MissingMetricError, KeyError, ValueError):
                return None
            out = np.zeros((len(cnodes), n_loc))
            for i, c in enumerate(cnodes):
                row = values.cnode_values(c, **conv)
                # min_time / max_time come wrapped in pycubexr's MinValues / MaxValues.
                row = np.asarray(getattr(row, "_values", row), np.float64).reshape(-1)
                out[i, : row.size] = row[:n_loc]
            return out

        time_incl = metric("time", convert_to_inclusive=True)
        if time_incl is None:
            raise ProfileReadError(
                "profile.cubex has no 'time' metric: it was not written "
                "by Score-P or the builtin tracer"
            )
        time_excl = metric("time", convert_to_exclusive=True)
        visits = metric("visits")
        mins, maxs = metric("min_time"), metric("max_time")
        cpu = metric("cpu_time", convert_to_exclusive=True)
        queue = metric("queue_time", convert_to_exclusive=True) if cpu is not None else None
        nodes = []
        for c, region, role, group in zip(cnodes, regions, roles, groups):
            name = region.name or f"region {c.callee_region_id}"
            # ``mod`` holds the source file, under both writers
            file = region.url or region.mod or ""
            line = int(region.begin) if str(region.begin).lstrip("-").isdigit() else 0
            nodes.append(
                {
                    "name": region_label(name, role),
                    "group": region_group(name, role, group, file),
                    "file": file,
                    "line": max(line, 0),
                }
            )
    zeros = np.zeros_like(time_incl)
    return CallTree(
        source="cubex",
        locations=locations,
        parent=parent,
        nodes=nodes,
        visits=visits if visits is not None else zeros,
        incl_s=time_incl,
        excl_s=time_excl if time_excl is not None else zeros,
        min_s=mins if mins is not None else zeros,
        max_s=maxs if maxs is not None else zeros,
        frame=top,
        cpu_s=cpu if queue is not None else None,
        queue_s=queue if cpu is not None else None,
    )


class RegionNodes(Sequence[dict[str, Any]]):
    """``CallTree.nodes`` of a tree whose nodes are numbered by region: node i is
    ``infos[refs[i]]``, looked up when asked (a list of 150,000 references to a few hundred
    dicts cost 13 ms per tree to build, and a comparison reads a few hundred of them)."""

    def __init__(self, infos: list[dict[str, Any]], refs: np.ndarray):
        self._infos, self._refs = infos, refs

    def __len__(self) -> int:
        return int(self._refs.shape[0])

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self._infos[r] for r in self._refs[i].tolist()]
        return self._infos[int(self._refs[i])]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        infos = self._infos
        return (infos[r] for r in self._refs.tolist())


def from_index(index) -> CallTree:
    """The call-path profile the index builder derived from the trace."""
    a = index.array
    regions = np.asarray(a("ct.region"))
    locs = [{"id": loc["id"], "name": loc["name"]} for loc in index.locations]
    # one dict per region, shared by all its call paths (readers copy, never change them):
    # a 1M-event trace has ~150,000 call paths over a few hundred regions
    refs = regions.astype(np.int64, copy=False).reshape(-1)
    infos: list[dict[str, Any]] = [{}] * (int(refs.max()) + 1 if refs.size else 0)
    for r in np.flatnonzero(np.bincount(refs, minlength=len(infos))).tolist():
        info = index.region_info(r)
        infos[r] = {k: info[k] for k in ("name", "group", "file", "line")}
    return CallTree(
        source="trace",
        locations=locs,
        parent=np.asarray(a("ct.parent"), np.int64),
        nodes=RegionNodes(infos, refs),
        visits=np.asarray(a("ct.visits"), np.float64),
        incl_s=a("ct.incl") / 1e9,
        excl_s=a("ct.excl") / 1e9,
        min_s=a("ct.min") / 1e9,
        max_s=a("ct.max") / 1e9,
        region=refs,
    )


def _columns(tree: CallTree, location: int | None):
    if location is not None:
        col = slice(location, location + 1)
        pick = lambda m: m[:, col][:, 0]
        return (
            pick(tree.visits),
            pick(tree.incl_s),
            pick(tree.excl_s),
            pick(tree.min_s),
            pick(tree.max_s),
        )
    visited = tree.visits > 0
    mins = np.where(visited, tree.min_s, np.inf).min(axis=1, initial=np.inf)
    mins = np.where(np.isfinite(mins), mins, 0.0)
    maxs = np.where(visited, tree.max_s, 0.0).max(axis=1, initial=0.0)
    return (tree.visits.sum(axis=1), tree.incl_s.sum(axis=1), tree.excl_s.sum(axis=1), mins, maxs)


def to_json(
    tree: CallTree, location: int | None, run_name: str, max_nodes: int = MAX_NODES
) -> dict[str, Any]:
    visits, incl, excl, mins, maxs = _columns(tree, location)
    n = len(tree.nodes)
    keep = tree.shown()
    if location is not None:
        keep &= visits > 0
    dropped = 0
    if keep.sum() > max_nodes:
        # Heaviest first; a parent's inclusive time is at least its child's, so the kept
        # set stays connected (ties broken towards parents by their lower index).
        order = np.lexsort((np.arange(n), -incl))
        order = order[keep[order]]
        chosen = np.zeros(n, bool)
        chosen[order[:max_nodes]] = True
        dropped = int(keep.sum() - max_nodes)
        keep = chosen
    built: dict[int, dict[str, Any]] = {}
    roots = []
    for i in np.flatnonzero(keep).tolist():
        node = {
            "id": i,
            **tree.nodes[i],
            "incl_s": float(incl[i]),
            "excl_s": float(excl[i]),
            "visits": int(visits[i]),
            "min_s": float(mins[i]),
            "max_s": float(maxs[i]),
            "children": [],
        }
        built[i] = node
        p = int(tree.parent[i])
        if p >= 0 and p in built:
            built[p]["children"].append(node)
        else:
            roots.append(node)
    # the run's root whenever the profile has several top-level paths, also where one
    # location saw only one of them (so that every location's tree starts alike)
    if len(roots) == 1 and int(np.count_nonzero(tree.top_level())) == 1:
        root = roots[0]
    else:
        total = float(sum(r["incl_s"] for r in roots))
        root = {
            "id": -1,
            "name": run_name,
            "group": "",
            "file": "",
            "line": 0,
            "incl_s": total,
            "excl_s": 0.0,
            "visits": 1 if location is not None else max(len(tree.locations), 1),
            "min_s": total,
            "max_s": total,
            "children": roots,
        }
    out = {
        "source": tree.source,
        "location": location,
        "total_s": root["incl_s"],
        "locations": tree.locations,
        "root": root,
    }
    if dropped:
        out["truncated"] = {"nodes_dropped": dropped, "max_nodes": max_nodes}
    return out
