"""The verdict on two runs in words: slower, faster or within noise, and the function
whose change explains the cells' change.

One rule for the panel and the CI gate (headless/gate.py): the cells' time on
``Comparison.basis`` (less what they were queued for a CPU, where both runs carry the
split) against the noise; the function named is the one whose ``effective`` time (what the
user can speed up: running on any thread, waiting on the cell's thread) moved most in that
direction, never a thread that only waited longer because the cell ran longer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .compare import (
    BASIS_RUNNING,
    BASIS_RUNNING_NORMALISED,
    BASIS_TIME_LESS_QUEUED,
    Comparison,
    Delta,
    FunctionDelta,
)
from .compare_names import short_name, visit_count
from .compare_noise import Noise

SLOWER, FASTER, WITHIN_NOISE = "slower", "faster", "within_noise"


@dataclass(frozen=True)
class Verdict:
    kind: str  # SLOWER | FASTER | WITHIN_NOISE
    total: Delta
    threshold_s: float
    noise: Noise
    function: FunctionDelta | None  # the function whose change explains the cells' change
    sentence: str
    basis: str = "time"  # Comparison.basis: what ``total`` is
    cells: Delta | None = None  # the cells' time (as shown), when ``total`` is another basis
    speed: float | None = None  # Comparison.speed where the basis is running_normalised

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
            "basis": self.basis,
            "cells_a_s": (self.cells or self.total).a,
            "cells_b_s": (self.cells or self.total).b,
            "speed": self.speed,
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
    return f"visits {visit_count(d.a):,} → {visit_count(d.b):,}"


def verdict(
    comparison: Comparison, noise: Noise | None = None, baseline: str = "the previous run"
) -> Verdict:
    """Slower, faster or within noise: run B's total against run A's (``noise`` defaults
    to the one ``compare_trees`` was given). The sentence names the function whose
    exclusive time moved most in that direction, e.g. "31 % slower than the previous run:
    `step` +120 ms, visits 600 → 900"."""
    noise = comparison.noise if noise is None else noise
    total = comparison.judged
    basis = comparison.basis
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
        moved = [f for f in comparison.functions if f.effective.delta * sign > 0]
        culprit = max(moved, key=lambda f: abs(f.effective.delta), default=None)
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
        if basis == BASIS_TIME_LESS_QUEUED:
            sentence += " (not counting time queued for a CPU)"
        elif basis == BASIS_RUNNING:
            sentence += " (running time: the cell is CPU-bound)"
        elif basis == BASIS_RUNNING_NORMALISED:
            sentence += (
                f" (running time, the machine's speed taken out: "
                f"{speed_words(comparison, baseline)})"
            )
        if culprit is not None:
            sentence += (
                f": `{short_name(culprit.name)}` {format_seconds(culprit.effective.delta, True)}"
                f"{_how(culprit)}"
            )
            if culprit.status != "both":
                sentence += " (new)" if culprit.status == "added" else " (gone)"
            elif culprit.visits_changed:
                sentence += f", {_visits(culprit.visits)}"
        sentence += "."
    cells = comparison.total if basis != "time" else None
    speed = comparison.speed if basis == BASIS_RUNNING_NORMALISED else None
    return Verdict(kind, total, threshold, noise, culprit, sentence, basis, cells, speed)


def speed_words(comparison: Comparison, baseline: str = "the baseline") -> str:
    """``machine ×0.71 of the baseline's speed`` (Comparison.speed), "" without it."""  # noqa: RUF002
    s = comparison.speed
    return f"machine ×{s:.2f} of {baseline}'s speed" if s is not None else ""  # noqa: RUF001


def _how(f: FunctionDelta) -> str:
    """ " running" / " waiting" where the split says which part of its change it was."""
    if f.cpu is None or f.wait is None:
        return ""
    ran, waited = f.cpu.delta, f.effective.delta - f.cpu.delta
    if abs(waited) > 2 * abs(ran):
        return " waiting"
    if abs(ran) > 2 * abs(waited):
        return " running"
    return ""
