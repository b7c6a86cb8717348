"""``--baseline DIR_OR_SUMMARY --fail-if-slower PCT``: each profiled cell against its
baseline run, by the server's comparison (``jupyterlab_scorep.analysis.compare``, shared).

**Baseline.** A ``scorep-summary.json`` of an earlier ``jupyter scorep run`` (or the
directory holding one), or a directory of experiments (a previous run's experiment
directory, e.g. a CI artifact): there each experiment's manifest names its cells; when a
cell has several runs, the newest is the baseline and, with at least
``compare_noise.MIN_NOISE_RUNS`` runs of the same source, their wall times measure the noise
(``compare_noise.noise_from_runs``).

**Repeats.** Where the baseline holds several runs of a cell with one source (``--repeat N``,
or runs kept over time), the best on the verdict's basis is the baseline and their spread
measures the noise; a run with ``--repeat N`` is judged by its best repetition.

**Matching.** A cell of this run is matched with a baseline cell by its JupyterLab
``cellId``, else by the hash of its source, else by its code-cell number; the report says
which, and names the cells on either side that found no partner.

**Nothing to compare.** A baseline that yields no comparison (no such path, a folder
without experiments, a summary whose experiments are gone, no cell in common) fails the
gate with its own exit status (``run_summary.EXIT_NO_BASELINE``) and says why, unless
``--allow-missing-baseline`` (the first run of a new notebook): then the run passes and the
report says that nothing was compared.

**The rule.** A cell regressed when ``compare_verdict.verdict`` calls it slower (its judged time
grew by more than the noise: 10 % or the measured spread, at least 2 ms) *and* by more
than PCT of the baseline's time. The functions named are those whose exclusive time grew
beyond the noise (``FunctionDelta.time_changed``), largest first, with their visits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf

from ..analysis import compare, compare_noise, compare_verdict
from . import run_summary as hs
from .experiments import NoCallTree, load_tree

MAX_FUNCTIONS_NAMED = 3
# a function is named when it carries at least this share of its cell's slowdown
SHARE_NAMED = 0.1


class BaselineError(Exception):
    """A --baseline that is a file but no readable summary."""


@dataclass
class BaselineCell:
    """One cell's baseline run."""

    cell_id: str | None
    source_sha256: str | None
    number: int | None
    first_line: str
    experiment: Path
    # wall times of the runs of the same source (for the noise), newest first
    history_s: list[float] = field(default_factory=list)
    # the machine's speed around the baseline run (compare_noise.ref_cpu_s)
    ref_cpu_s: float | None = None


@dataclass
class Baseline:
    where: Path
    cells: list[BaselineCell]
    note: str = ""
    # why there is nothing to compare with, when the baseline is absent or empty
    missing: str = ""

    @classmethod
    def load(cls, where: str | os.PathLike, notebook: str | None = None) -> Baseline:
        path = Path(where)
        if path.is_dir() and (path / hs.SUMMARY_NAME).is_file():
            path = path / hs.SUMMARY_NAME
        if path.is_file():
            try:
                data = hs.read_summary(path)
            except hs.SummaryError as e:
                raise BaselineError(f"--baseline {where}: {e}") from None
            return cls.from_summary(path, data)
        if path.is_dir():
            return cls.from_directory(path, notebook)
        return cls(
            path,
            [],
            missing=f"{where}: no such file or directory (expected a {hs.SUMMARY_NAME} or a "
            "directory of experiments: a previous run's scorep-experiments/)",
        )

    @classmethod
    def from_summary(cls, path: Path, data: dict[str, Any]) -> Baseline:
        # earlier runs kept beside the summary's (a baseline folder that accumulates them)
        history = _histories(mf.list_experiments(path.parent))
        cells = []
        for c in data["cells"]:
            e = c.get("experiment")
            if not e or not isinstance(e.get("path"), str):
                continue
            cells.append(
                BaselineCell(
                    cell_id=c.get("cell_id"),
                    source_sha256=c.get("source_sha256"),
                    number=c.get("number"),
                    first_line=c.get("first_line", ""),
                    experiment=hs.resolve_ref(e["path"], path.parent),
                    history_s=history.get((c.get("cell_id"), c.get("source_sha256")), []),
                    ref_cpu_s=compare_noise.ref_cpu_s(e),
                )
            )
        return cls(path, cells)

    @classmethod
    def from_directory(cls, path: Path, notebook: str | None) -> Baseline:
        found = mf.list_experiments(path)  # newest first
        if not found:
            return cls(
                path,
                [],
                missing=f"{path} holds no experiments (no subdirectory with a readable "
                f"{ex.MANIFEST}) and no {hs.SUMMARY_NAME}",
            )
        note = ""
        if notebook is not None:
            same = [(p, m) for p, m in found if m.get("notebook") == notebook]
            if same and len(same) < len(found):
                note = f"used the {len(same)} of {len(found)} experiments that ran {notebook}"
                found = same
        history = _histories(found)
        by_key: dict[tuple, BaselineCell] = {}
        # several runs of one cell and source (--repeat, or runs kept over time): the best
        # on the verdict's basis is the baseline; their spread measures the noise
        found = sorted(found, key=lambda pm: _best_first(pm[1]))
        for exp, m in found:
            if m.get("status") == mf.STATUS_RUNNING:
                continue
            for rec in m.get("cells") or []:
                key = (rec.get("cell_id"), rec.get("source_sha256"))
                if key not in by_key:  # the best run of this cell and source
                    code = rec.get("code") or ""
                    by_key[key] = BaselineCell(
                        cell_id=rec.get("cell_id"),
                        source_sha256=rec.get("source_sha256"),
                        number=rec.get("execution_count"),
                        first_line=code.strip().splitlines()[0] if code.strip() else "",
                        experiment=exp,
                        history_s=history.get(key, []),
                        ref_cpu_s=compare_noise.ref_cpu_s(m),
                    )
        return cls(path, list(by_key.values()), note)

    def match(
        self, cell: dict[str, Any], taken: set[int]
    ) -> tuple[BaselineCell | None, str | None]:
        """The baseline cell for one cell record of this run, and what matched them."""
        for how in ("cell_id", "source_sha256", "number"):
            value = cell.get(how)
            if value is None:
                continue
            for i, b in enumerate(self.cells):
                if i not in taken and getattr(b, how) == value:
                    taken.add(i)
                    return b, how
        return None, None


def _best_first(m: mf.Manifest) -> tuple[int, float]:
    """Sort key: single-cell runs that ended ok by their time on the verdict's basis first,
    the rest after them (newest first, as listed)."""
    t = compare_noise.judged_time(m)
    ok = m.get("status") == mf.STATUS_OK and len(m.get("cells") or []) == 1 and t is not None
    return (0, float(t or 0.0)) if ok else (1, 0.0)


def _histories(found: list[tuple[Path, mf.Manifest]]) -> dict[tuple, list[float]]:
    """(cell id, source hash) -> the times of its single-cell runs that ended well, on the
    verdict's basis (compare_noise.judged_time), newest first: what measures its noise."""
    out: dict[tuple, list[float]] = {}
    for _exp, m in found:
        cells = m.get("cells") or []
        wall = compare_noise.judged_time(m)
        if len(cells) == 1 and m.get("status") == mf.STATUS_OK and wall is not None:
            key = (cells[0].get("cell_id"), cells[0].get("source_sha256"))
            out.setdefault(key, []).append(float(wall))
    return out


@dataclass
class GateResult:
    record: dict[str, Any]
    text: str
    failed: bool  # a cell regressed
    # nothing was compared (and --allow-missing-baseline was not given): the reason
    no_baseline: str = ""


def _label(number: int | None, first_line: str) -> str:
    line = first_line if len(first_line) <= 50 else first_line[:49] + "…"
    return f"[{number}] {line}".rstrip() if number is not None else line


def _functions(c: compare.Comparison) -> list[compare.FunctionDelta]:
    """The functions that made a cell slower: exclusive time grown beyond the noise (or new),
    each carrying at least a tenth of the cell's growth; the largest always."""
    grew = [
        f for f in c.functions if f.effective.delta > 0 and (f.time_changed or f.status == "added")
    ]
    grew.sort(key=lambda f: -f.effective.delta)
    share = SHARE_NAMED * max(c.judged.delta, 0.0)
    return [f for i, f in enumerate(grew) if i == 0 or f.effective.delta >= share][
        :MAX_FUNCTIONS_NAMED
    ]


def _function_words(f: compare.FunctionDelta) -> str:
    words = f"`{f.name}` {compare_verdict.format_seconds(f.effective.delta, True)}"
    if f.status == "added":
        words += " (new)"
    elif f.visits_changed:
        words += f" (visits {round(f.visits.a):,} → {round(f.visits.b):,})"
    return words


def gate(
    data: dict[str, Any],
    summary_dir: Path,
    baseline: Baseline,
    threshold_pct: float | None,
    allow_missing: bool = False,
) -> GateResult:
    """Compare the run ``data`` (a summary, SCHEMA) with ``baseline``. Without a threshold
    the comparison is reported and never fails on a slowdown; a baseline that yields
    nothing to compare fails (``no_baseline``) unless ``allow_missing``."""
    threshold = threshold_pct
    taken: set[int] = set()
    done: set[str] = set()
    cells_out: list[dict[str, Any]] = []
    lines: list[str] = []
    regressed: list[str] = []
    noise_words = ""
    for cell in data["cells"]:
        exp = cell.get("experiment")
        if not exp or exp["path"] in done:
            continue
        done.add(exp["path"])
        label = _label(cell["number"], cell["first_line"])
        base, how = baseline.match(cell, taken)
        out: dict[str, Any] = {
            "number": cell["number"],
            "cell_id": cell.get("cell_id"),
            "matched_by": how,
            "baseline": str(base.experiment) if base else None,
        }
        if base is None:
            out.update(verdict="unmatched", text="no baseline run of this cell")
            lines.append(
                f"  {label}: not compared: the baseline has no run of this cell (no run with "
                "its cell id, its source or its number)"
            )
            cells_out.append(out)
            continue
        try:
            tree_b = load_tree(hs.resolve_ref(exp["path"], summary_dir))
            tree_a = load_tree(base.experiment)
        except (NoCallTree, ex.ExperimentError) as e:
            out.update(verdict="unreadable", text=str(e))
            lines.append(f"  {label}: not compared: {e}")
            cells_out.append(out)
            continue
        noise = compare_noise.noise_from_runs(base.history_s)
        noise_words = noise_words or noise.basis
        c = compare.compare_trees(
            tree_a, tree_b, noise, ref_s=(base.ref_cpu_s, compare_noise.ref_cpu_s(exp))
        )
        v = compare_verdict.verdict(c, baseline="the baseline")
        pct = v.total.pct  # on the verdict's basis, as the panel judges it
        bad = (
            threshold is not None
            and v.slower
            and (pct is None or pct > threshold)  # None: the baseline measured nothing
        )
        named = _functions(c) if v.slower else []
        fmt = compare_verdict.format_seconds
        text = f"{fmt(v.total.a)} → {fmt(v.total.b)}"
        if pct is not None:
            text += f" ({'+' if v.total.delta >= 0 else ''}{pct:.0f} %)"
        if v.basis == compare.BASIS_TIME_LESS_QUEUED:
            text += f" without time queued for a CPU (cells {fmt(c.total.a)} → {fmt(c.total.b)})"
        elif v.basis == compare.BASIS_RUNNING:
            text += f" running, CPU-bound (cells {fmt(c.total.a)} → {fmt(c.total.b)})"
        elif v.basis == compare.BASIS_RUNNING_NORMALISED:
            text += (
                f" running at the baseline's machine speed, CPU-bound ("
                f"{compare_verdict.speed_words(c)}; running {fmt(c.cells_b.cpu_s or 0.0)} as "
                f"measured; cells {fmt(c.total.a)} → {fmt(c.total.b)})"
            )
        if v.within_noise:
            text += " within noise"
        if named:
            text += ": " + ", ".join(_function_words(f) for f in named)
        out.update(
            verdict="regressed" if bad else "ok",
            text=v.sentence,
            delta_pct=pct,
            basis=v.basis,
            a_s=c.total.a,
            b_s=c.total.b,
            judged_a_s=v.total.a,
            judged_b_s=v.total.b,
            speed=c.speed,
            noise=noise.to_json(),
            functions=[f.to_json() for f in named],
        )
        if how is not None and how != "cell_id":
            text += f" [matched by {how.replace('_', ' ')}]"
        word = "REGRESSED" if bad else "ok"
        lines.append(f"  {label}: {word} {text}")
        if bad:
            culprit = f" ({', '.join(f'`{f.name}`' for f in named)})" if named else ""
            regressed.append(f"[{cell['number']}]{culprit}")
        cells_out.append(out)
    unmatched = [
        _label(b.number, b.first_line) for i, b in enumerate(baseline.cells) if i not in taken
    ]
    if unmatched:
        lines.append("  baseline cells with no profiled cell in this run: " + "; ".join(unmatched))
    compared = sum(1 for c in cells_out if c["verdict"] in ("ok", "regressed"))
    failed = bool(regressed)
    no_baseline = ""
    rule = (
        f"fail when a cell is slower by more than {threshold:g} % and the noise"
        if threshold is not None
        else "report only (no --fail-if-slower)"
    )
    head = f"Against the baseline {baseline.where} ({rule}; noise: {noise_words or compare_noise.DEFAULT_NOISE.basis}):"
    if baseline.note:
        head += f"\n  ({baseline.note})"
    if failed:
        tail = (
            f"FAILED: {len(regressed)} of {compared} compared cells regressed beyond "
            f"{threshold:g} %: {'; '.join(regressed)}"
        )
    elif compared == 0:
        why = baseline.missing or _nothing_compared(cells_out, baseline)
        if allow_missing:
            tail = f"Nothing compared ({why}); passed: --allow-missing-baseline."
        else:
            no_baseline = why
            tail = (
                f"FAILED: nothing compared: {why}. A gate that compares nothing cannot "
                "pass; give --allow-missing-baseline for the first run of a notebook."
            )
    else:
        tail = f"{compared} cells compared; none slower beyond the threshold and the noise."
    record = {
        "baseline": str(baseline.where),
        "threshold_pct": threshold if threshold is not None else 0.0,
        "verdict": "fail" if failed else "no_baseline" if no_baseline else "pass",
        "compared": compared,
        "noise": noise_words or compare_noise.DEFAULT_NOISE.basis,
        "cells": cells_out,
        "unmatched_baseline": unmatched,
    }
    if no_baseline:
        record["reason"] = no_baseline
    return GateResult(record, "\n".join([head, *lines, tail]), failed, no_baseline)


def _nothing_compared(cells_out: list[dict[str, Any]], baseline: Baseline) -> str:
    """Why no cell was compared, in words."""
    if not cells_out:
        return "this run has no profiled cell"
    if not baseline.cells:
        return f"the baseline {baseline.where} names no profiled cell"
    unreadable = [c for c in cells_out if c["verdict"] == "unreadable"]
    if unreadable:
        return (
            f"the baseline's experiments cannot be read ({unreadable[0]['text']}); a "
            f"{hs.SUMMARY_NAME} needs its experiment folders beside it"
        )
    return "no profiled cell of this run has a run in the baseline (no cell in common)"
