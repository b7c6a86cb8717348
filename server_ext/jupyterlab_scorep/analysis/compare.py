"""Comparing two runs: functions and call paths matched by name, Δ of time and visits, the
run-to-run noise rule and the verdict in words.

A pure module over ``calltree.CallTree`` (``from_cubex`` / ``from_index``): no server, no
files. The server's GET compare and the headless CI gate (``jupyter scorep run --baseline
... --fail-if-slower 20%``) both use it. The API, kept stable::

    c = compare_trees(a, b)            # a: the baseline, b: the run looked at; Δ = b - a
    c.total                            # Delta of the notebook's measured time (seconds)
    c.functions                        # [FunctionDelta], largest |Δ exclusive| first
    c.paths                            # CallPaths: the merged call tree, numpy columns
    function_summary(tree)             # one run's functions (the panel's Summary tab)
    compare_verdict.verdict(c, baseline="the previous run")
    v.slower / v.faster / v.within_noise, v.delta_s, v.delta_pct, v.sentence
    compare_json.comparison_json(c, v) # what GET compare answers (besides run facts)
    compare_noise.noise_from_runs([wall_s, ...])  # a Noise measured from repeated runs

How names are matched: ``compare_names``; when a difference is noise: ``compare_noise``.

**What is compared.** Per function: exclusive time, inclusive time (only outermost calls,
so recursion is not counted twice) and visits, each summed over call paths and locations
(threads). Per call path: inclusive and exclusive time and visits. The run's total is the
cells' time: their regions on the thread that ran them (manifest.py's one definition),
which reads the same under either backend and isolation.

**Running and waiting.** Where the trees carry the time split (``CallTree.cpu_s``, builtin
runs) each function's own time is also running (on a CPU, any thread), queued (runnable,
waiting for a CPU other processes held: the machine's load) and waiting (the rest: sleep,
lock, I/O, device, MPI). What the user can speed up, ``effective``: its running time on any
thread plus its waiting on the cell's thread (a thread that only waits does not hold the
cell up; the cell waiting on it does, and says so). Without the split: its own time on
the cell's thread. The Summary ranks by it and the verdict names by its Δ.

**Basis.** The run's time compared, where both runs carry the split: their running time
(``running``) when both ran on a CPU at least half of their unqueued time (CPU-bound: on
a loaded machine the rest grows with other threads preempted while holding the
interpreter lock, measured: a 0.2 s cell's waiting varied 0-330 ms under one CPU hog per
core while its running time stayed within +-15 %); else the cells' time less what they
were queued for a CPU (``time_less_queued``: a loaded machine stretches the wall time, not
this). Without the split: the cells' time (``time``). ``Comparison.basis`` says which.

**Machine speed.** CPU time itself varies on a shared machine (a VM's physical core,
caches and clock shared with others: +-35 % over minutes at load 5-7 here). Where both
runs measured the reference workload (manifest ``cell_time.ref_cpu_s``,
kernel measure/machine_speed.py; given to ``compare_trees`` as ``ref_s``), a CPU-bound
comparison is ``running_normalised``: B's running time at the baseline's machine speed,
``cpu_b * ref_a / ref_b`` (``Comparison.speed`` = ``ref_a / ref_b``: 0.71 means B's
machine ran the reference at 0.71 of A's speed, so B's 200 ms are A's 142 ms).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..trace.calltree import CallTree
from .compare_names import (
    KeyedTree,
    Vocabulary,
    cell_split,
    key_tree,
    keyed_total,
    visit_count,
)
from .compare_noise import DEFAULT_NOISE, Noise

# --- one run: the function summary --------------------------------------------------------


@dataclass
class FunctionStat:
    name: str
    module: str
    excl_s: float
    incl_s: float
    visits: int
    # the split of excl_s (module doc); None without it
    cpu_s: float | None = None
    queue_s: float | None = None
    wait_s: float | None = None
    effective_s: float = 0.0  # what the Summary ranks by (module doc)
    # the region's name where ``name`` adds the function's place (an anonymous function's
    # "__main__:<listcomp> cell [3]:5", compare_names), for finding it in the trace
    region: str | None = None
    group: str = ""  # the region's group (the timeline's, what viewers colour by)

    def to_json(self) -> dict[str, Any]:
        return {
            **({"region": self.region} if self.region else {}),
            **({"group": self.group} if self.group else {}),
            "name": self.name,
            "module": self.module,
            "excl_s": self.excl_s,
            "incl_s": self.incl_s,
            "visits": self.visits,
            "cpu_s": self.cpu_s,
            "queue_s": self.queue_s,
            "wait_s": self.wait_s,
            "effective_s": self.effective_s,
        }


@dataclass
class _PerKey:
    """One tree's values per function key (over call paths)."""

    excl: np.ndarray
    incl: np.ndarray
    visits: np.ndarray
    present: np.ndarray
    effective: np.ndarray
    cpu: np.ndarray | None
    queue: np.ndarray | None
    wait: np.ndarray | None


def _per_key(k: KeyedTree, v: int) -> _PerKey:
    m = k.keep
    outer = k.outer
    by = lambda w: np.bincount(k.key[m], weights=w[m], minlength=v)
    excl_cell = k.excl_cell if k.excl_cell is not None else k.excl
    cpu = queue = wait = None
    if k.split:
        assert k.cpu is not None and k.queue is not None
        assert k.cpu_cell is not None and k.queue_cell is not None
        cpu, queue = by(k.cpu), by(k.queue)
        wait = by(np.maximum(k.excl - k.cpu - k.queue, 0.0))
        waited_here = np.maximum(excl_cell - k.cpu_cell - k.queue_cell, 0.0)
        effective = cpu + by(waited_here)
    else:
        effective = by(excl_cell)
    return _PerKey(
        excl=by(k.excl),
        incl=np.bincount(k.key[outer], weights=k.incl[outer], minlength=v),
        visits=by(k.visits),
        present=np.bincount(k.key[m], minlength=v) > 0,
        effective=effective,
        cpu=cpu,
        queue=queue,
        wait=wait,
    )


def _at(a: np.ndarray | None, i: int) -> float | None:
    return None if a is None else float(a[i])


def function_summary(tree: CallTree) -> tuple[list[FunctionStat], float, float]:
    """``(functions, total_s, outside_s)`` of one run: every function's exclusive time,
    inclusive time (outermost calls) and visits over all call paths and locations, with
    the split of its own time, by what the user can speed up (``effective_s``, module
    doc), largest first; the run's total and the time outside the notebook's code (as in
    ``compare_trees``)."""
    vocab = Vocabulary()
    k = key_tree(tree, vocab)
    p = _per_key(k, len(vocab.keys))
    order = sorted(
        np.flatnonzero(p.present).tolist(),
        key=lambda i: (-p.effective[i], -p.excl[i], vocab.display[i]),
    )
    out = [
        FunctionStat(
            vocab.display[i],
            vocab.module[i],
            float(p.excl[i]),
            float(p.incl[i]),
            visit_count(p.visits[i]),
            _at(p.cpu, i),
            _at(p.queue, i),
            _at(p.wait, i),
            float(p.effective[i]),
            vocab.region[i],
            vocab.group[i],
        )
        for i in order
    ]
    return out, keyed_total(k), k.outside_s


@dataclass(frozen=True)
class CellTime:
    """One run's cells' time (on the thread that ran them) and its split."""

    time_s: float
    cpu_s: float | None = None
    queue_s: float | None = None

    @property
    def wait_s(self) -> float | None:
        if self.cpu_s is None or self.queue_s is None:
            return None
        return max(self.time_s - self.cpu_s - self.queue_s, 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "time_s": self.time_s,
            "cpu_s": self.cpu_s,
            "queue_s": self.queue_s,
            "wait_s": self.wait_s,
        }


def cpu_bound(c: CellTime) -> bool:
    """The cells ran (on a CPU) at least CPU_BOUND_SHARE of their unqueued time."""
    if c.cpu_s is None or c.queue_s is None:
        return False
    return c.cpu_s >= CPU_BOUND_SHARE * max(c.time_s - c.queue_s, 0.0) and c.cpu_s > 0


def cell_time(k: KeyedTree) -> CellTime:
    split = cell_split(k)
    total = keyed_total(k)
    return CellTime(total, *split) if split else CellTime(total)


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
    # what the user can speed up (module doc), and the split of the exclusive time (None
    # where either run lacks it)
    effective: Delta = Delta(0.0, 0.0)
    cpu: Delta | None = None
    wait: Delta | None = None

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
            visits_a=visit_count(self.visits.a),
            visits_b=visit_count(self.visits.b),
            visits_delta=visit_count(self.visits.delta),
            visits_pct=self.visits.pct,
            time_changed=self.time_changed,
            visits_changed=self.visits_changed,
            effective_a=self.effective.a,
            effective_b=self.effective.b,
            effective_delta=self.effective.delta,
            cpu_a=self.cpu.a if self.cpu else None,
            cpu_b=self.cpu.b if self.cpu else None,
            wait_a=self.wait.a if self.wait else None,
            wait_b=self.wait.b if self.wait else None,
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


BASIS_TIME = "time"
BASIS_TIME_LESS_QUEUED = "time_less_queued"
BASIS_RUNNING = "running"
BASIS_RUNNING_NORMALISED = "running_normalised"
# a cell that ran at least this share of its unqueued time is judged by its running time
CPU_BOUND_SHARE = 0.5


@dataclass
class Comparison:
    total: Delta  # the cells' time
    outside: Delta  # time outside the notebook's code (run roots' own time)
    functions: list[FunctionDelta]
    paths: CallPaths
    noise: Noise = field(default_factory=Noise)
    cells_a: CellTime = CellTime(0.0)
    cells_b: CellTime = CellTime(0.0)
    # the reference workload's CPU seconds in each run (module doc: machine speed)
    ref_s: tuple[float | None, float | None] = (None, None)

    @property
    def speed(self) -> float | None:
        """Run B's machine speed as a share of run A's (``ref_a / ref_b``); None unless both
        runs measured it."""
        ra, rb = self.ref_s
        return ra / rb if ra and rb and ra > 0 and rb > 0 else None

    @property
    def basis(self) -> str:
        """What the verdict compares (module doc)."""
        a, b = self.cells_a, self.cells_b
        if a.queue_s is None or b.queue_s is None or a.cpu_s is None or b.cpu_s is None:
            return BASIS_TIME
        if cpu_bound(a) and cpu_bound(b):
            return BASIS_RUNNING if self.speed is None else BASIS_RUNNING_NORMALISED
        return BASIS_TIME_LESS_QUEUED

    @property
    def judged(self) -> Delta:
        """The run's time on the basis the verdict compares."""
        a, b = self.cells_a, self.cells_b
        basis = self.basis
        if basis == BASIS_RUNNING_NORMALISED:
            assert self.speed is not None
            return Delta(a.cpu_s or 0.0, (b.cpu_s or 0.0) * self.speed)
        if basis == BASIS_RUNNING:
            return Delta(a.cpu_s or 0.0, b.cpu_s or 0.0)
        if self.basis == BASIS_TIME_LESS_QUEUED:
            return Delta(self.total.a - (a.queue_s or 0.0), self.total.b - (b.queue_s or 0.0))
        return self.total

    def function(self, name: str) -> FunctionDelta | None:
        """The row of a function by its shown name or key."""
        for f in self.functions:
            if name in (f.name, f.key):
                return f
        return None


def compare_trees(
    a: CallTree,
    b: CallTree,
    noise: Noise = DEFAULT_NOISE,
    ref_s: tuple[float | None, float | None] = (None, None),
) -> Comparison:
    """Compare run ``a`` (the baseline) with run ``b``: functions and call paths matched by
    name path (see the module doc); ``noise`` decides each function's ``time_changed``;
    ``ref_s``: each run's ``cell_time.ref_cpu_s`` (module doc: machine speed)."""
    vocab = Vocabulary()
    ka = key_tree(a, vocab)
    kb = key_tree(b, vocab)  # second, so run B's spelling is the one shown
    v = len(vocab.keys)

    # functions
    A, B = _per_key(ka, v), _per_key(kb, v)
    pa, pb = A.present, B.present
    split = A.cpu is not None and B.cpu is not None
    if not split:  # one run lacks the split: compare both on the cell's thread alone
        A.effective = np.bincount(ka.key[ka.keep], weights=_cell_col(ka)[ka.keep], minlength=v)
        B.effective = np.bincount(kb.key[kb.keep], weights=_cell_col(kb)[kb.keep], minlength=v)

    def delta(x: np.ndarray | None, y: np.ndarray | None, i: int) -> Delta | None:
        return None if x is None or y is None or not split else Delta(float(x[i]), float(y[i]))

    functions = []
    for i in np.flatnonzero(pa | pb).tolist():
        status = "both" if pa[i] and pb[i] else "added" if pb[i] else "removed"
        excl = Delta(float(A.excl[i]), float(B.excl[i]))
        incl = Delta(float(A.incl[i]), float(B.incl[i]))
        visits = Delta(float(A.visits[i]), float(B.visits[i]))
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
                effective=Delta(float(A.effective[i]), float(B.effective[i])),
                cpu=delta(A.cpu, B.cpu, i),
                wait=delta(A.wait, B.wait, i),
            )
        )
    functions.sort(key=lambda f: (-abs(f.excl.delta), -abs(f.incl.delta), f.name))
    return Comparison(
        total=Delta(keyed_total(ka), keyed_total(kb)),
        outside=Delta(ka.outside_s, kb.outside_s),
        functions=functions,
        paths=_merge_paths(ka, kb, vocab),
        noise=noise,
        cells_a=cell_time(ka),
        cells_b=cell_time(kb),
        ref_s=ref_s,
    )


def _cell_col(k: KeyedTree) -> np.ndarray:
    return k.excl_cell if k.excl_cell is not None else k.excl


def _merge_paths(ka: KeyedTree, kb: KeyedTree, vocab: Vocabulary) -> CallPaths:
    """Number the call paths of both runs alike, depth by depth: a path is (its parent's
    path, its key)."""
    v = max(len(vocab.keys), 1)
    pid_a = np.full(ka.key.size, -1, np.int64)
    pid_b = np.full(kb.key.size, -1, np.int64)
    parents: list[np.ndarray] = []
    keys: list[np.ndarray] = []
    n_paths = 0
    max_depth = int(max(ka.depth.max(initial=-1), kb.depth.max(initial=-1)))

    def by_depth(k: KeyedTree) -> list[np.ndarray]:
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

    def sums(k: KeyedTree, pid: np.ndarray):
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
