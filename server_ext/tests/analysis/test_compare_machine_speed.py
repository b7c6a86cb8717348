"""The machine's speed taken out of a CPU-bound comparison (compare.py, "Machine speed"):
the basis chosen, the arithmetic of the normalisation, the words of the verdict, and the
judged time that picks the best of repeated runs. Comparisons from hand-built trees with
the cells' split set by hand."""

from __future__ import annotations

import dataclasses

import pytest
from tree_factory import tree

from jupyterlab_scorep.analysis import compare as cmp
from jupyterlab_scorep.analysis import compare_noise, compare_verdict


def approx(x):
    return pytest.approx(x, rel=1e-9, abs=1e-12)


def _cell(step_s: float):
    return tree(("cell [1]", 0.01 + step_s, 1, [("__main__:step", step_s, 1)]))


def comparison(cpu_b: float, ref_s, *, wait_b: float = 0.0) -> cmp.Comparison:
    """A's cell ran 140 ms (10 ms queued); B's ran ``cpu_b`` and waited ``wait_b``."""
    c = cmp.compare_trees(_cell(0.14), _cell(cpu_b + wait_b))
    return dataclasses.replace(
        c,
        cells_a=cmp.CellTime(0.15, cpu_s=0.14, queue_s=0.01),
        cells_b=cmp.CellTime(cpu_b + wait_b + 0.02, cpu_s=cpu_b, queue_s=0.02),
        ref_s=ref_s,
    )


def test_a_slower_machine_is_taken_out_of_the_running_time():
    # B's machine ran the reference in 4.2 ms against A's 3.0 ms: 0.714 of A's speed, so
    # B's 200 ms of running are A's 142.9 ms: within noise, where running alone is +43 %
    c = comparison(0.20, (0.003, 0.0042))
    assert c.speed == approx(0.003 / 0.0042)
    assert c.basis == cmp.BASIS_RUNNING_NORMALISED
    assert (c.judged.a, c.judged.b) == (approx(0.14), approx(0.20 * 0.003 / 0.0042))
    v = compare_verdict.verdict(c)
    assert v.within_noise and v.basis == cmp.BASIS_RUNNING_NORMALISED
    assert v.speed == approx(0.003 / 0.0042)
    assert v.to_json()["speed"] == approx(0.003 / 0.0042)
    assert v.sentence.startswith("Within run-to-run noise of the previous run (+2.0 %;")


def test_a_real_slowdown_on_a_slower_machine_is_still_slower():
    c = comparison(0.30, (0.003, 0.0042))  # 1.5x the work at 0.71 of the speed
    v = compare_verdict.verdict(c, baseline="the baseline")
    assert v.slower and v.delta_pct == approx(100 * (0.30 * 0.003 / 0.0042 / 0.14 - 1))
    assert v.sentence.startswith(
        "53 % slower than the baseline (running time, the machine's speed taken out: "
        "machine ×0.71 of the baseline's speed)"  # noqa: RUF001
    )


def test_a_faster_machine_does_not_hide_a_slowdown():
    # B's machine was 1.4x as fast: its 180 ms of running are A's 252 ms (+80 %)
    c = comparison(0.18, (0.0042, 0.003))
    assert c.speed == approx(1.4)
    v = compare_verdict.verdict(c)
    assert v.slower and v.total.b == approx(0.252)


def test_without_both_references_the_running_time_is_compared_as_measured():
    for refs in ((None, 0.003), (0.003, None), (None, None), (0.0, 0.003)):
        c = comparison(0.20, refs)
        assert c.speed is None and c.basis == cmp.BASIS_RUNNING
        assert (c.judged.a, c.judged.b) == (approx(0.14), approx(0.20))
        v = compare_verdict.verdict(c)
        assert v.slower and v.speed is None
        assert "(running time: the cell is CPU-bound)" in v.sentence


def test_a_cell_that_mostly_waits_is_not_normalised():
    # waiting 400 ms against running 100 ms: not CPU-bound, the machine's speed does not
    # scale a sleep, so the basis stays the time less what was queued
    c = comparison(0.10, (0.003, 0.0042), wait_b=0.40)
    assert c.basis == cmp.BASIS_TIME_LESS_QUEUED
    v = compare_verdict.verdict(c)
    assert v.speed is None and "machine" not in v.sentence


def test_judged_time_of_a_manifest_is_in_reference_units_where_measured():
    ct = {"time_s": 0.2, "cpu_s": 0.14, "queue_s": 0.01, "wait_s": 0.05}
    assert compare_noise.judged_time({"cell_time": ct}) == approx(0.14)
    m = {"cell_time": {**ct, "ref_cpu_s": 0.002}}
    assert compare_noise.ref_cpu_s(m) == approx(0.002)
    assert compare_noise.judged_time(m) == approx(70.0)  # 0.14 s / 2 ms
    # not CPU-bound: the time less queued, the reference not applied
    waits = {"cell_time": {"time_s": 0.5, "cpu_s": 0.1, "queue_s": 0.0, "ref_cpu_s": 0.002}}
    assert compare_noise.judged_time(waits) == approx(0.5)
    for bad in (None, 0, -1.0, "x"):
        assert compare_noise.ref_cpu_s({"cell_time": {**ct, "ref_cpu_s": bad}}) is None
    assert compare_noise.ref_cpu_s({"wall_s": 1.0}) is None
