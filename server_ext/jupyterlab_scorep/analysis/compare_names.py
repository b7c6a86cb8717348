"""The names two runs are matched by: a function is its region name, a call path the
names from its top-level call down; each tree's nodes keyed into one shared vocabulary.

**Matching.** A function is its region name (``module:function``, ``module.Class:method``,
as both backends name them, see scorep_kernel.experiment); a call path is the sequence of
names from its top-level call down. Two parts of a name are normalised so that runs of one
cell compare across executions and backends:

- a cell's own region (``cell [7]`` under either backend; ``:cell [7]`` in older Score-P
  experiments) is matched by its place among the run's cells (``cell #1`` for the first),
  not by its execution count, which changes with every run; it is shown as ``cell [7]``.
  A cell the user labelled is a region of group ``cell`` (``is_cell``), matched and shown
  by its label;
- a top-level region whose name has no ``module:`` part and is not a cell (Score-P's
  program region ``python3.11``, the builtin profile's synthetic root named after the run),
  and any node the reader marked as the measurement's frame (``CallTree.frame``, e.g.
  Score-P's ``THREADS``), is not the notebook's code: it is left out, its children become
  top-level paths, and its own exclusive time (interpreter start-up, measurement set-up)
  is reported apart as ``outside_s``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from scorep_kernel import region_words as rw

from ..trace.calltree import CallTree


def visit_count(x: float) -> int:
    """A visit count summed as a float, back to an int."""
    return int(np.rint(x))


def cell_key(ordinal: int) -> str:
    return f"cell #{ordinal}"


def labelled_cell_key(label: str) -> str:
    return f"cell {label!r}"


def is_cell(node: dict) -> bool:
    """Whether a tree's node is a cell's own region: by its name or its group "cell"."""
    return rw.is_cell_region(str(node["name"]), str(node.get("group") or ""))


def _display(name: str) -> str:
    count = rw.cell_region_count(name)
    return f"cell [{count}]" if count is not None else name


def short_name(name: str) -> str:
    """``step`` for ``__main__:step``, ``Model.fit`` for ``m.Model:fit``: for sentences."""
    if rw.cell_region_count(name) is not None:
        return _display(name)
    module, sep, function = name.rpartition(":")
    if not sep:
        return name
    owner = module.rsplit(".", 1)[-1] if "." in module else ""
    # a method's owner class starts with a capital letter by convention; modules do not
    return f"{owner}.{function}" if owner[:1].isupper() else function


_DOTTED = re.compile(r"[A-Za-z_][\w.]*")


def module_of(name: str, group: str = "") -> str:
    """The module a function is grouped under: ``cell`` for cells, else the name's module
    part (experiment.region_module), else the region's group."""
    if rw.cell_region_count(name) is not None:
        return "cell"
    module = rw.region_module(name)
    if module is not None and not _DOTTED.fullmatch(module):
        module = None  # a C++ name's "void at::native::..." is no module (CUDA kernels)
    return module or group or name


@dataclass
class KeyedTree:
    """One tree with its nodes keyed: key ids (into the shared vocabulary), the parent once
    run roots are dropped, depth, and per-node values summed over locations."""

    keep: np.ndarray  # bool [N]: not a run root
    key: np.ndarray  # int64 [N]
    parent: np.ndarray  # int64 [N], -1 for top-level (after dropping run roots)
    depth: np.ndarray  # int64 [N]
    outer: np.ndarray  # bool [N]: kept, and no ancestor of the same key (outermost call)
    incl: np.ndarray
    excl: np.ndarray
    visits: np.ndarray
    outside_s: float
    # The thread that ran the cells (the location holding the cell regions; None when the
    # tree has no cell region) and per-node values on it alone.
    cell_loc: int | None = None
    cell_top: np.ndarray | None = None  # bool [N]: a top-level cell region
    incl_cell: np.ndarray | None = None
    excl_cell: np.ndarray | None = None
    # The time split (CallTree.cpu_s / queue_s), exclusive, summed over locations and on
    # the cell's thread; None where the measurement did not read the threads' clocks.
    cpu: np.ndarray | None = None
    queue: np.ndarray | None = None
    cpu_cell: np.ndarray | None = None
    queue_cell: np.ndarray | None = None

    @property
    def split(self) -> bool:
        return self.cpu is not None and self.queue is not None


class Vocabulary:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.keys: list[str] = []
        self.display: list[str] = []  # the name shown: the last tree's (b over a)
        self.module: list[str] = []
        # the region's own name where the shown one adds its place (anonymous functions)
        self.region: list[str | None] = []
        # the region's group as the trace or profile holds it (what viewers colour by)
        self.group: list[str] = []

    def id(
        self, key: str, display: str, module: str, region: str | None = None, group: str = ""
    ) -> int:
        i = self.ids.get(key)
        if i is None:
            i = self.ids[key] = len(self.keys)
            self.keys.append(key)
            self.display.append(display)
            self.module.append(module)
            self.region.append(region)
            self.group.append(group)
        else:
            self.display[i] = display
        return i


# Python's names for code without a name of its own: two of them in one module are two
# functions (two list comprehensions of one cell), told apart by file and line.
_ANONYMOUS = re.compile(r"<[a-z]+>")


def anonymous(name: str) -> bool:
    """``__main__:<listcomp>``, ``m:<lambda>``, ``m.f.<locals>:<genexpr>``, ..."""
    return bool(_ANONYMOUS.fullmatch(name.rpartition(":")[2]))


def _place(
    node: dict, cell_files: dict[str, int], ordinal: dict[int, int]
) -> tuple[str, str] | None:
    """(what runs are matched by, what is shown) of an anonymous function's place: its
    cell by the cell's place among the run's cells (as cells are matched) and its line
    (``cell #1:5``, shown ``cell [3]:5``), else its file's name and line; None without a
    file."""
    file, line = str(node.get("file") or ""), int(node.get("line") or 0)
    if not file:
        return None
    count = cell_files.get(file)
    if count is None:
        count = _input_count(file)
    at = f":{line}" if line > 0 else ""
    if count is not None and count in ordinal:
        return f"{cell_key(ordinal[count])}{at}", f"cell [{count}]{at}"
    if count is not None:  # IPython's name of a cell not in this run
        return f"cell [{count}]{at}", f"cell [{count}]{at}"
    return f"{file}{at}", f"{file.replace(chr(92), '/').rpartition('/')[2]}{at}"


# IPython's name for a cell's code under Score-P's bindings ("<ipython-input-3-5f2a…>",
# which Score-P writes with the working directory in front)
_IPYTHON_INPUT = re.compile(r"(?:.*[/\\])?<ipython-input-(\d+)-[0-9a-f]+>")


def _input_count(file: str) -> int | None:
    m = _IPYTHON_INPUT.fullmatch(file)
    return int(m.group(1)) if m else None


def key_tree(tree: CallTree, vocab: Vocabulary) -> KeyedTree:
    n = len(tree.nodes)
    parent0 = np.asarray(tree.parent, np.int64).reshape(n)
    # Names are looked at once per region where the reader numbered the regions
    # (CallTree.region, from the trace index), else once per node.
    region = getattr(tree, "region", None)
    if region is not None and n:
        per_dict = np.asarray(region, np.int64).reshape(n)
        first = np.full(int(per_dict.max()) + 1, n, np.int64)
        first[per_dict[::-1]] = np.arange(n - 1, -1, -1)  # the last write wins: the first
        used = np.flatnonzero(first < n)
        order = used[np.argsort(first[used], kind="stable")]  # first-seen order
        rank = np.zeros(first.size, np.int64)
        rank[order] = np.arange(order.size)
        dict_nodes = [tree.nodes[i] for i in first[order].tolist()]
    else:
        per_dict = np.arange(n)
        rank = per_dict
        dict_nodes = list(tree.nodes)
    dict_names = [node["name"] for node in dict_nodes]
    # cells by their place among the run's cells (execution counts in order)
    counts = sorted({c for c in map(rw.cell_region_count, set(dict_names)) if c is not None})
    ordinal = {c: i + 1 for i, c in enumerate(counts)}
    # the files the run's cells were compiled as: a function defined in a cell has its file
    cell_files = {
        str(node.get("file") or ""): c
        for node in dict_nodes
        if (c := rw.cell_region_count(node["name"])) is not None and node.get("file")
    }
    name_ids: dict[tuple[str, str], int] = {}
    dict_ids = []
    for node in dict_nodes:
        name = node["name"]
        count = rw.cell_region_count(name)
        # an anonymous function (<listcomp>, <lambda>, ...) is also told apart by its place
        labelled = count is None and is_cell(node)
        place = (
            _place(node, cell_files, ordinal)
            if count is None and not labelled and anonymous(name)
            else None
        )
        known = (name, place[0] if place else "")
        group = str(node.get("group") or "")
        if known not in name_ids:
            if count is not None:
                name_ids[known] = vocab.id(
                    cell_key(ordinal[count]), _display(name), "cell", group="cell"
                )
            elif labelled:  # its label is the same in every run
                name_ids[known] = vocab.id(labelled_cell_key(name), name, "cell", group="cell")
            elif place:
                name_ids[known] = vocab.id(
                    f"{name} @{place[0]}",
                    f"{name} {place[1]}",
                    module_of(name),
                    region=name,
                    group=group,
                )
            else:
                name_ids[known] = vocab.id(name, name, module_of(name), group=group)
        dict_ids.append(name_ids[known])
    dict_key = np.asarray(dict_ids, np.int64)
    key = dict_key[rank[per_dict]] if n else np.zeros(0, np.int64)
    run_root = np.zeros(n, bool)
    for i in np.flatnonzero(parent0 < 0).tolist():
        node = tree.nodes[i]
        run_root[i] = ":" not in node["name"] and not is_cell(node)
    frame = getattr(tree, "frame", None)  # the measurement's frame, as the reader marked it
    if frame is not None:
        run_root |= np.asarray(frame, bool).reshape(n)
    keep = ~run_root
    parent = parent0.copy()
    has_parent = parent >= 0
    parent[has_parent & run_root[np.where(has_parent, parent, 0)]] = -1
    parent[run_root] = -1
    # Walk up all ancestors at once, one level per step, only for nodes that still have
    # one: the depth, and whether an ancestor has the same key (a recursive call, whose
    # inclusive time its outermost call already holds).
    depth = np.zeros(n, np.int64)
    recursive = np.zeros(n, bool)
    walk = np.flatnonzero(parent >= 0)
    anc = parent[walk]
    while walk.size:
        depth[walk] += 1
        recursive[walk] |= key[anc] == key[walk]
        up = parent[anc]
        more = up >= 0
        walk, anc = walk[more], up[more]

    def summed(m: np.ndarray) -> np.ndarray:  # over locations
        m = np.asarray(m, float)
        # a product with ones: numpy's sum over a short last axis is several times slower
        return m @ np.ones(m.shape[1]) if m.ndim == 2 else m.reshape(n)

    incl, excl, visits = summed(tree.incl_s), summed(tree.excl_s), summed(tree.visits)
    cells = _cell_regions(dict_nodes, rank, per_dict, n) & ~run_root
    cell_loc = None
    cell_top = cells & (parent < 0)
    extra: dict = {}
    n_loc = max(len(tree.locations), 1)
    if cell_top.any():
        incl_m = np.asarray(tree.incl_s, float).reshape(n, n_loc)
        cell_loc = int(np.argmax(incl_m[cell_top].sum(axis=0)))

    def col(m) -> np.ndarray:
        if cell_loc is None:
            return summed(m)
        return np.asarray(m, float).reshape(n, n_loc)[:, cell_loc]

    extra.update(
        cell_loc=cell_loc,
        cell_top=cell_top,
        incl_cell=col(tree.incl_s),
        excl_cell=col(tree.excl_s),
    )
    cpu_s, queue_s = getattr(tree, "cpu_s", None), getattr(tree, "queue_s", None)
    if cpu_s is not None and queue_s is not None:
        extra.update(
            cpu=summed(cpu_s), queue=summed(queue_s), cpu_cell=col(cpu_s), queue_cell=col(queue_s)
        )
    return KeyedTree(
        keep=keep,
        key=key,
        parent=parent,
        depth=depth,
        outer=keep & ~recursive,
        incl=incl,
        excl=excl,
        visits=visits,
        outside_s=float(excl[run_root].sum()),
        **extra,
    )


def _cell_regions(dict_nodes: list[dict], rank, per_dict, n: int) -> np.ndarray:
    """bool [N]: the nodes that are a cell's own region."""
    cell = np.asarray([is_cell(node) for node in dict_nodes], bool)
    return cell[rank[per_dict]] if n else np.zeros(0, bool)


def keyed_total(k: KeyedTree) -> float:
    """The run's time: its cells' regions on the thread that ran them (manifest.py's one
    definition); a tree without cell regions: its top-level paths over all locations."""
    if k.cell_top is not None and k.cell_top.any() and k.incl_cell is not None:
        return float(k.incl_cell[k.cell_top].sum())
    return float(k.incl[k.keep & (k.parent < 0)].sum())


def subtree_sums(k: KeyedTree, values: np.ndarray) -> np.ndarray:
    """Inclusive sums of an exclusive per-node value (children folded into parents, the
    deepest level first)."""
    out = np.asarray(values, float).copy()
    if not out.size:
        return out
    for d in range(int(k.depth.max()), 0, -1):
        at = np.flatnonzero(k.keep & (k.depth == d) & (k.parent >= 0))
        np.add.at(out, k.parent[at], out[at])
    return out


def cell_split(k: KeyedTree) -> tuple[float, float] | None:
    """(running, queued) seconds of the cells on the thread that ran them; None without
    the split or without cell regions."""
    if not k.split or k.cell_top is None or not k.cell_top.any():
        return None
    assert k.cpu_cell is not None and k.queue_cell is not None
    cpu = subtree_sums(k, k.cpu_cell)[k.cell_top].sum()
    queue = subtree_sums(k, k.queue_cell)[k.cell_top].sum()
    return float(cpu), float(queue)
