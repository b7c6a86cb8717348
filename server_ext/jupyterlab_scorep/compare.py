"""Comparing two runs: functions and call paths matched by name, Δ of time and visits, the
run-to-run noise rule and the verdict in words.

A pure module over ``calltree.CallTree`` (``from_cubex`` / ``from_index``): no server, no
files. The server's GET compare and the headless CI gate (``jupyter scorep run --baseline
... --fail-if-slower 20%``) both use it. The API, kept stable::

    c = compare_trees(a, b)            # a: the baseline, b: the run looked at; Δ = b - a
    c.total                            # Delta of the notebook's measured time (seconds)
    c.functions                        # [FunctionDelta], largest |Δ exclusive| first
    c.paths                            # CallPaths: the merged call tree, numpy columns
    v = verdict(c, baseline="the previous run")
    v.slower / v.faster / v.within_noise, v.delta_s, v.delta_pct, v.sentence
    comparison_json(c, v)              # what GET compare answers (besides run facts)
    function_summary(tree)             # one run's functions (the panel's Summary tab)
    noise_from_runs([wall_s, ...])     # a Noise measured from repeated runs

**Matching.** A function is its region name (``module:function``, ``module.Class:method``,
as both backends name them, see scorep_kernel.experiment); a call path is the sequence of
names from its top-level call down. Two parts of a name are normalised so that runs of one
cell compare across executions and backends:

- a cell's own region (the builtin's ``cell [7]``, Score-P's ``:cell [7]``) is matched by
  its place among the run's cells (``cell #1`` for the first), not by its execution count,
  which changes with every run; it is shown as ``cell [7]``;
- a top-level region whose name has no ``module:`` part and is not a cell (Score-P's
  program region ``python3.11``, the builtin profile's synthetic root named after the run),
  and any node the reader marked as the measurement's frame (``CallTree.frame``, e.g.
  Score-P's ``THREADS``), is not the notebook's code: it is left out, its children become
  top-level paths, and its own exclusive time (interpreter start-up, measurement set-up)
  is reported apart as ``outside_s``.

**What is compared.** Per function: exclusive time, inclusive time (only outermost calls,
so recursion is not counted twice) and visits, each summed over call paths and locations
(threads). Per call path: inclusive and exclusive time and visits. The run's total is the
inclusive time of its top-level paths summed over locations (for a single-threaded cell:
the cell's time), which reads the same under either backend and isolation.

**Noise.** Visits are counted exactly: any difference in visits is real. A difference of
times counts only when ``|Δ| > max(floor_s, rel * max(A, B))`` (``Noise.exceeds``):

- ``rel`` is measured when the cell has been run at least ``MIN_NOISE_RUNS`` times with
  the same source (``noise_from_runs``): 2.77 times the runs' relative spread (sigma,
  estimated as 1.4826 * median absolute deviation / median, robust to one slow outlier).
  2.77 = 1.96 * sqrt(2) is the 95 % bound of the difference of two runs that each vary
  with that sigma. It is kept within [MIN_REL, MAX_REL].
- Without such runs, ``rel`` is DEFAULT_REL = 10 %, the factor airspeed velocity uses by
  default to call a benchmark changed. On the 2-core machines this was built on, eight
  runs of one unchanged cell spread by sigma = 6-30 % (a loaded machine), so a smaller default
  would call noise a regression; the measured rule takes over as soon as a cell has a
  history.
- ``floor_s`` (2 ms for the run, 1 ms for one function) keeps a scheduler tick or a timer
  quantum in a very short run from reading as a change of many per cent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from scorep_kernel import experiment as ex

from .calltree import CallTree

# --- noise -------------------------------------------------------------------------------

DEFAULT_REL = 0.10
RUN_FLOOR_S = 0.002
FUNCTION_FLOOR_S = 0.001
MIN_REL = 0.02
MAX_REL = 0.50
MIN_NOISE_RUNS = 3
SPREAD_TO_THRESHOLD = 1.96 * math.sqrt(2.0)  # 95 % bound of the difference of two runs


@dataclass(frozen=True)
class Noise:
    """When a difference of times is more than run-to-run noise (see the module doc)."""

    rel: float = DEFAULT_REL
    floor_s: float = RUN_FLOOR_S
    function_floor_s: float = FUNCTION_FLOOR_S
    # how rel was decided, in words, and over how many runs (0: the default)
    basis: str = "default: 10 % (no earlier runs of the same source to measure it from)"
    runs: int = 0

    def threshold(self, a: float, b: float, *, function: bool = False) -> float:
        floor = self.function_floor_s if function else self.floor_s
        return max(floor, self.rel * max(abs(a), abs(b)))

    def exceeds(self, a: float, b: float, *, function: bool = False) -> bool:
        return bool(abs(b - a) > self.threshold(a, b, function=function))

    def to_json(self) -> dict[str, Any]:
        return {
            "rel": self.rel,
            "floor_s": self.floor_s,
            "function_floor_s": self.function_floor_s,
            "basis": self.basis,
            "runs": self.runs,
        }


DEFAULT_NOISE = Noise()


def noise_from_runs(times_s: Sequence[float], default: Noise = DEFAULT_NOISE) -> Noise:
    """The noise of a cell measured from the times of its runs with one source (e.g. the
    manifests' ``wall_s``); ``default`` when fewer than MIN_NOISE_RUNS usable times."""
    xs = np.asarray([t for t in times_s if t is not None and math.isfinite(t) and t > 0], float)
    if xs.size < MIN_NOISE_RUNS:
        return default
    med = float(np.median(xs))
    sigma_rel = 1.4826 * float(np.median(np.abs(xs - med))) / med
    rel = min(MAX_REL, max(MIN_REL, SPREAD_TO_THRESHOLD * sigma_rel))
    return replace(
        default,
        rel=rel,
        basis=(
            f"measured: {xs.size} runs of the same source vary by ±{sigma_rel * 100:.1f} % "
            f"(sigma), so a change must exceed {rel * 100:.0f} %"
        ),
        runs=int(xs.size),
    )


# --- names -------------------------------------------------------------------------------


def _count(x: float) -> int:
    """A visit count summed as a float, back to an int."""
    return int(np.rint(x))


def cell_key(ordinal: int) -> str:
    return f"cell #{ordinal}"


def _display(name: str) -> str:
    count = ex.cell_region_count(name)
    return f"cell [{count}]" if count is not None else name


def short_name(name: str) -> str:
    """``step`` for ``__main__:step``, ``Model.fit`` for ``m.Model:fit``: for sentences."""
    if ex.cell_region_count(name) is not None:
        return _display(name)
    module, sep, function = name.rpartition(":")
    if not sep:
        return name
    owner = module.rsplit(".", 1)[-1] if "." in module else ""
    # a method's owner class starts with a capital letter by convention; modules do not
    return f"{owner}.{function}" if owner[:1].isupper() else function


def module_of(name: str, group: str = "") -> str:
    """The module a function is grouped under: ``cell`` for cells, else the name's module
    part (experiment.region_module), else the region's group."""
    if ex.cell_region_count(name) is not None:
        return "cell"
    return ex.region_module(name) or group or name


@dataclass
class _Keyed:
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


class _Vocabulary:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.keys: list[str] = []
        self.display: list[str] = []  # the name shown: the last tree's (b over a)
        self.module: list[str] = []

    def id(self, key: str, display: str, module: str) -> int:
        i = self.ids.get(key)
        if i is None:
            i = self.ids[key] = len(self.keys)
            self.keys.append(key)
            self.display.append(display)
            self.module.append(module)
        else:
            self.display[i] = display
        return i


def _key_tree(tree: CallTree, vocab: _Vocabulary) -> _Keyed:
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
        dict_names = [tree.nodes[i]["name"] for i in first[order].tolist()]
    else:
        per_dict = np.arange(n)
        rank = per_dict
        dict_names = [node["name"] for node in tree.nodes]
    # cells by their place among the run's cells (execution counts in order)
    counts = sorted({c for c in map(ex.cell_region_count, set(dict_names)) if c is not None})
    ordinal = {c: i + 1 for i, c in enumerate(counts)}
    name_ids: dict[str, int] = {}
    for name in dict_names:
        if name in name_ids:
            continue
        count = ex.cell_region_count(name)
        if count is not None:
            name_ids[name] = vocab.id(cell_key(ordinal[count]), _display(name), "cell")
        else:
            name_ids[name] = vocab.id(name, name, module_of(name))
    dict_key = np.asarray([name_ids[nm] for nm in dict_names], np.int64)
    key = dict_key[rank[per_dict]] if n else np.zeros(0, np.int64)
    run_root = np.zeros(n, bool)
    for i in np.flatnonzero(parent0 < 0).tolist():
        name = tree.nodes[i]["name"]
        run_root[i] = ":" not in name and ex.cell_region_count(name) is None
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
    return _Keyed(
        keep=keep,
        key=key,
        parent=parent,
        depth=depth,
        outer=keep & ~recursive,
        incl=incl,
        excl=excl,
        visits=visits,
        outside_s=float(excl[run_root].sum()),
    )


def _total(k: _Keyed) -> float:
    return float(k.incl[k.keep & (k.parent < 0)].sum())


# --- one run: the function summary --------------------------------------------------------


@dataclass
class FunctionStat:
    name: str
    module: str
    excl_s: float
    incl_s: float
    visits: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "module": self.module,
            "excl_s": self.excl_s,
            "incl_s": self.incl_s,
            "visits": self.visits,
        }


def function_summary(tree: CallTree) -> tuple[list[FunctionStat], float, float]:
    """``(functions, total_s, outside_s)`` of one run: every function's exclusive time,
    inclusive time (outermost calls) and visits over all call paths and locations, by
    exclusive time, largest first; the run's total and the time outside the notebook's code
    (as in ``compare_trees``)."""
    vocab = _Vocabulary()
    k = _key_tree(tree, vocab)
    v = len(vocab.keys)
    m = k.keep
    excl = np.bincount(k.key[m], weights=k.excl[m], minlength=v)
    visits = np.bincount(k.key[m], weights=k.visits[m], minlength=v)
    outer = k.outer
    incl = np.bincount(k.key[outer], weights=k.incl[outer], minlength=v)
    present = np.bincount(k.key[m], minlength=v) > 0
    order = sorted(np.flatnonzero(present).tolist(), key=lambda i: (-excl[i], vocab.display[i]))
    out = [
        FunctionStat(
            vocab.display[i],
            vocab.module[i],
            float(excl[i]),
            float(incl[i]),
            _count(visits[i]),
        )
        for i in order
    ]
    return out, _total(k), k.outside_s


# --- two runs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Delta:
    """A value in run A (the baseline) and run B; Δ = B - A."""

    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a

    @property
    def pct(self) -> float | None:
        """Δ as % of A; None when A is 0."""
        return 100.0 * self.delta / self.a if self.a else None


@dataclass
class FunctionDelta:
    name: str  # as shown (run B's spelling where both have it)
    key: str  # what matched the two runs' functions
    module: str
    status: str  # "both" | "added" (only in B) | "removed" (only in A)
    excl: Delta
    incl: Delta
    visits: Delta
    time_changed: bool  # |Δ exclusive| or |Δ inclusive| beyond noise
    visits_changed: bool

    @property
    def changed(self) -> bool:
        return self.time_changed or self.visits_changed or self.status != "both"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "key": self.key,
            "module": self.module,
            "status": self.status,
        }
        for what, d in (("excl", self.excl), ("incl", self.incl)):
            out.update(
                {
                    f"{what}_a": d.a,
                    f"{what}_b": d.b,
                    f"{what}_delta": d.delta,
                    f"{what}_pct": d.pct,
                }
            )
        out.update(
            visits_a=_count(self.visits.a),
            visits_b=_count(self.visits.b),
            visits_delta=_count(self.visits.delta),
            visits_pct=self.visits.pct,
            time_changed=self.time_changed,
            visits_changed=self.visits_changed,
        )
        return out


@dataclass
class CallPaths:
    """The merged call tree of two runs, as columns over P call paths; parents come before
    their children. ``key`` indexes ``keys`` / ``names``; a path missing in a run has 0
    there and ``in_a`` / ``in_b`` False."""

    parent: np.ndarray  # int64 [P], -1 for top-level
    key: np.ndarray  # int64 [P]
    keys: list[str]
    names: list[str]
    in_a: np.ndarray
    in_b: np.ndarray
    incl_a: np.ndarray
    incl_b: np.ndarray
    excl_a: np.ndarray
    excl_b: np.ndarray
    visits_a: np.ndarray
    visits_b: np.ndarray

    def __len__(self) -> int:
        return int(self.parent.size)

    def status(self, i: int) -> str:
        return "both" if self.in_a[i] and self.in_b[i] else "added" if self.in_b[i] else "removed"

    def find(self, *names: str) -> int:
        """The path with these keys (or shown names) from the top; -1 when there is none."""
        at = -1
        for name in names:
            hits = [
                i
                for i in np.flatnonzero(self.parent == at).tolist()
                if name in (self.keys[self.key[i]], self.names[self.key[i]])
            ]
            if not hits:
                return -1
            at = hits[0]
        return at


@dataclass
class Comparison:
    total: Delta
    outside: Delta  # time outside the notebook's code (run roots' own time)
    functions: list[FunctionDelta]
    paths: CallPaths
    noise: Noise = field(default_factory=Noise)

    def function(self, name: str) -> FunctionDelta | None:
        """The row of a function by its shown name or key."""
        for f in self.functions:
            if name in (f.name, f.key):
                return f
        return None


def compare_trees(a: CallTree, b: CallTree, noise: Noise = DEFAULT_NOISE) -> Comparison:
    """Compare run ``a`` (the baseline) with run ``b``: functions and call paths matched by
    name path (see the module doc); ``noise`` decides each function's ``time_changed``."""
    vocab = _Vocabulary()
    ka = _key_tree(a, vocab)
    kb = _key_tree(b, vocab)  # second, so run B's spelling is the one shown
    v = len(vocab.keys)

    # functions
    def per_key(k: _Keyed):
        m = k.keep
        outer = k.outer
        return (
            np.bincount(k.key[m], weights=k.excl[m], minlength=v),
            np.bincount(k.key[outer], weights=k.incl[outer], minlength=v),
            np.bincount(k.key[m], weights=k.visits[m], minlength=v),
            np.bincount(k.key[m], minlength=v) > 0,
        )

    ea, ia, va, pa = per_key(ka)
    eb, ib, vb, pb = per_key(kb)
    functions = []
    for i in np.flatnonzero(pa | pb).tolist():
        status = "both" if pa[i] and pb[i] else "added" if pb[i] else "removed"
        excl = Delta(float(ea[i]), float(eb[i]))
        incl = Delta(float(ia[i]), float(ib[i]))
        visits = Delta(float(va[i]), float(vb[i]))
        functions.append(
            FunctionDelta(
                name=vocab.display[i],
                key=vocab.keys[i],
                module=vocab.module[i],
                status=status,
                excl=excl,
                incl=incl,
                visits=visits,
                time_changed=noise.exceeds(excl.a, excl.b, function=True)
                or noise.exceeds(incl.a, incl.b, function=True),
                visits_changed=bool(round(visits.a) != round(visits.b)),
            )
        )
    functions.sort(key=lambda f: (-abs(f.excl.delta), -abs(f.incl.delta), f.name))
    return Comparison(
        total=Delta(_total(ka), _total(kb)),
        outside=Delta(ka.outside_s, kb.outside_s),
        functions=functions,
        paths=_merge_paths(ka, kb, vocab),
        noise=noise,
    )


def _merge_paths(ka: _Keyed, kb: _Keyed, vocab: _Vocabulary) -> CallPaths:
    """Number the call paths of both runs alike, depth by depth: a path is (its parent's
    path, its key)."""
    v = max(len(vocab.keys), 1)
    pid_a = np.full(ka.key.size, -1, np.int64)
    pid_b = np.full(kb.key.size, -1, np.int64)
    parents: list[np.ndarray] = []
    keys: list[np.ndarray] = []
    n_paths = 0
    max_depth = int(max(ka.depth.max(initial=-1), kb.depth.max(initial=-1)))

    def by_depth(k: _Keyed) -> list[np.ndarray]:
        nodes = np.flatnonzero(k.keep)
        nodes = nodes[np.argsort(k.depth[nodes], kind="stable")]
        cuts = np.searchsorted(k.depth[nodes], np.arange(max_depth + 2))
        return [nodes[cuts[d] : cuts[d + 1]] for d in range(max_depth + 1)]

    levels_a, levels_b = by_depth(ka), by_depth(kb)
    for d in range(max_depth + 1):
        sa, sb = levels_a[d], levels_b[d]
        par_a = np.where(ka.parent[sa] >= 0, pid_a[np.maximum(ka.parent[sa], 0)], -1)
        par_b = np.where(kb.parent[sb] >= 0, pid_b[np.maximum(kb.parent[sb], 0)], -1)
        comp = np.concatenate([(par_a + 1) * v + ka.key[sa], (par_b + 1) * v + kb.key[sb]])
        if not comp.size:
            continue
        uniq, inverse = np.unique(comp, return_inverse=True)
        pid_a[sa] = n_paths + inverse[: sa.size]
        pid_b[sb] = n_paths + inverse[sa.size :]
        parents.append(uniq // v - 1)
        keys.append(uniq % v)
        n_paths += uniq.size
    parent = np.concatenate(parents) if parents else np.zeros(0, np.int64)
    key = np.concatenate(keys) if keys else np.zeros(0, np.int64)

    def sums(k: _Keyed, pid: np.ndarray):
        m = k.keep
        return (
            np.bincount(pid[m], minlength=n_paths) > 0,
            np.bincount(pid[m], weights=k.incl[m], minlength=n_paths),
            np.bincount(pid[m], weights=k.excl[m], minlength=n_paths),
            np.bincount(pid[m], weights=k.visits[m], minlength=n_paths),
        )

    in_a, incl_a, excl_a, visits_a = sums(ka, pid_a)
    in_b, incl_b, excl_b, visits_b = sums(kb, pid_b)
    return CallPaths(
        parent=parent,
        key=key,
        keys=vocab.keys,
        names=vocab.display,
        in_a=in_a,
        in_b=in_b,
        incl_a=incl_a,
        incl_b=incl_b,
        excl_a=excl_a,
        excl_b=excl_b,
        visits_a=visits_a,
        visits_b=visits_b,
    )


# --- the verdict ---------------------------------------------------------------------------

SLOWER, FASTER, WITHIN_NOISE = "slower", "faster", "within_noise"


@dataclass(frozen=True)
class Verdict:
    kind: str  # SLOWER | FASTER | WITHIN_NOISE
    total: Delta
    threshold_s: float
    noise: Noise
    function: FunctionDelta | None  # the function that moved most in the verdict's way
    sentence: str

    @property
    def slower(self) -> bool:
        return self.kind == SLOWER

    @property
    def faster(self) -> bool:
        return self.kind == FASTER

    @property
    def within_noise(self) -> bool:
        return self.kind == WITHIN_NOISE

    @property
    def delta_s(self) -> float:
        return self.total.delta

    @property
    def delta_pct(self) -> float | None:
        return self.total.pct

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "sentence": self.sentence,
            "a_s": self.total.a,
            "b_s": self.total.b,
            "delta_s": self.delta_s,
            "delta_pct": self.delta_pct,
            "threshold_s": self.threshold_s,
            "noise": self.noise.to_json(),
            "function": self.function.name if self.function else None,
        }


def format_seconds(s: float, sign: bool = False) -> str:
    """Three significant digits in the largest fitting unit: ``120 ms``, ``+1.5 s``."""
    prefix = ("+" if s > 0 else "-" if s < 0 else "±") if sign else ("-" if s < 0 else "")
    x = abs(s)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):  # noqa: B007 (used after)
        if x >= scale:
            break
    else:
        scale, unit = 1e-9, "ns"
    value = x / scale
    text = f"{value:.3g}" if value < 1000 else f"{value:.0f}"
    return f"{prefix}{text} {unit}"


def _pct_words(pct: float) -> str:
    return f"{abs(pct):.0f} %" if abs(pct) >= 10 else f"{abs(pct):.1f} %"


def _visits(d: Delta) -> str:
    return f"visits {_count(d.a):,} → {_count(d.b):,}"


def verdict(
    comparison: Comparison, noise: Noise | None = None, baseline: str = "the previous run"
) -> Verdict:
    """Slower, faster or within noise: run B's total against run A's (``noise`` defaults
    to the one ``compare_trees`` was given). The sentence names the function whose
    exclusive time moved most in that direction, e.g. "31 % slower than the previous run:
    `step` +120 ms, visits 600 → 900"."""
    noise = comparison.noise if noise is None else noise
    total = comparison.total
    threshold = noise.threshold(total.a, total.b)
    if total.delta > threshold:
        kind = SLOWER
    elif total.delta < -threshold:
        kind = FASTER
    else:
        kind = WITHIN_NOISE
    sign = 1 if kind == SLOWER else -1 if kind == FASTER else 0
    culprit = None
    if sign:
        moved = [f for f in comparison.functions if f.excl.delta * sign > 0]
        culprit = max(moved, key=lambda f: abs(f.excl.delta), default=None)
    pct = total.pct
    if kind == WITHIN_NOISE:
        change = f"{pct:+.1f} %" if pct is not None else format_seconds(total.delta, True)
        sentence = (
            f"Within run-to-run noise of {baseline} ({change}; a change must exceed "
            f"{format_seconds(threshold)})"
        )
        visits = [f for f in comparison.functions if f.visits_changed]
        if visits:
            f = max(visits, key=lambda f: abs(f.visits.delta))
            sentence += f"; `{short_name(f.name)}` {_visits(f.visits)}"
        sentence += "."
    else:
        amount = _pct_words(pct) if pct is not None else format_seconds(abs(total.delta))
        sentence = f"{amount} {kind} than {baseline}"
        if culprit is not None:
            sentence += f": `{short_name(culprit.name)}` {format_seconds(culprit.excl.delta, True)}"
            if culprit.status != "both":
                sentence += " (new)" if culprit.status == "added" else " (gone)"
            elif culprit.visits_changed:
                sentence += f", {_visits(culprit.visits)}"
        sentence += "."
    return Verdict(kind, total, threshold, noise, culprit, sentence)


# --- JSON ---------------------------------------------------------------------------------

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
