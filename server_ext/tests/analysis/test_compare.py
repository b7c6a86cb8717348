"""compare.py on call trees built by hand (tree_factory): exact Δ of time and visits,
matching across executions, backends and locations, the noise rule and the verdict."""

from __future__ import annotations

import pytest
from tree_factory import tree

from jupyterlab_scorep.analysis import compare as cmp
from jupyterlab_scorep.analysis import compare_json, compare_names, compare_noise, compare_verdict


def approx(x):
    return pytest.approx(x, rel=1e-12, abs=1e-12)


def cell_run(count: int, step_s: float, step_visits: int, work_excl: float = 0.05):
    """The builtin's shape: the cell is the root; cell -> work -> step."""
    work = work_excl + step_s
    return tree(
        (
            f"cell [{count}]",
            0.05 + work,
            1,
            [("__main__:work", work, 1, [("__main__:step", step_s, step_visits)])],
        )
    )


A = cell_run(3, 0.3, 600)
B = cell_run(5, 0.42, 900, work_excl=0.054)


def test_known_difference_exact_deltas():
    c = cmp.compare_trees(A, B)
    assert c.total.a == approx(0.4)
    assert c.total.b == approx(0.524)
    assert c.total.delta == approx(0.124)
    assert c.total.pct == approx(31.0)
    step = c.function("__main__:step")
    assert step is not None and step.status == "both"
    assert (step.excl.a, step.excl.b) == (approx(0.3), approx(0.42))
    assert step.excl.delta == approx(0.12)
    assert step.excl.pct == approx(40.0)
    assert step.incl.delta == approx(0.12)
    assert (step.visits.a, step.visits.b, step.visits.delta) == (600, 900, 300)
    assert step.visits.pct == approx(50.0)
    assert step.visits_changed and step.time_changed
    work = c.function("__main__:work")
    assert work.excl.delta == approx(0.004)
    assert work.incl.delta == approx(0.124)
    assert not work.visits_changed
    # the cells matched although their execution counts differ; B's count is shown
    cell = c.function("cell #1")
    assert cell.name == "cell [5]" and cell.module == "cell"
    assert cell.excl.delta == approx(0.0) and cell.incl.delta == approx(0.124)
    # sorted by |Δ exclusive|
    assert [f.key for f in c.functions] == ["__main__:step", "__main__:work", "cell #1"]


def test_verdict_sentence_names_the_function_and_its_visits():
    v = compare_verdict.verdict(cmp.compare_trees(A, B))
    assert v.slower and not v.faster and not v.within_noise
    assert v.delta_pct == approx(31.0)
    assert v.function.key == "__main__:step"
    assert v.sentence == "31 % slower than the previous run: `step` +120 ms, visits 600 → 900."


def test_faster_is_the_mirror_image():
    v = compare_verdict.verdict(cmp.compare_trees(B, A), baseline="the baseline")
    assert v.faster
    assert v.delta_s == approx(-0.124)
    assert v.sentence == "24 % faster than the baseline: `step` -120 ms, visits 900 → 600."


def test_call_paths_matched_by_name_path_with_deltas():
    c = cmp.compare_trees(A, B)
    p = c.paths
    assert len(p) == 3
    i = p.find("cell #1", "__main__:work", "__main__:step")
    assert i >= 0 and p.status(i) == "both"
    assert (p.incl_a[i], p.incl_b[i]) == (approx(0.3), approx(0.42))
    assert (p.visits_a[i], p.visits_b[i]) == (600, 900)
    root = p.find("cell [5]")  # by the shown name too
    assert p.parent[root] == -1 and p.excl_b[root] == approx(0.05)


def test_added_and_removed_paths_and_functions():
    a = tree(("cell [1]", 1.0, 1, [("m:f", 0.5, 2, [("m:old", 0.25, 1)])]))
    b = tree(("cell [2]", 1.0, 1, [("m:f", 0.5, 2, [("m:new", 0.125, 4)]), ("m:g", 0.25, 1)]))
    c = cmp.compare_trees(a, b)
    status = {f.key: f.status for f in c.functions}
    assert status == {
        "cell #1": "both",
        "m:f": "both",
        "m:old": "removed",
        "m:new": "added",
        "m:g": "added",
    }
    old, new = c.function("m:old"), c.function("m:new")
    assert (old.excl.a, old.excl.b, old.visits.b) == (0.25, 0.0, 0)
    assert (new.excl.a, new.excl.b, new.visits.a, new.visits.b) == (0.0, 0.125, 0, 4)
    assert new.excl.pct is None  # no % of nothing
    p = c.paths
    assert p.status(p.find("cell #1", "m:f", "m:old")) == "removed"
    assert p.status(p.find("cell #1", "m:f", "m:new")) == "added"
    assert p.status(p.find("cell #1", "m:g")) == "added"
    assert p.status(p.find("cell #1", "m:f")) == "both"
    # exclusive time of f: 0.25 in A, 0.375 in B
    f = c.function("m:f")
    assert (f.excl.a, f.excl.b) == (0.25, 0.375)


def test_same_function_on_two_paths_is_one_row():
    a = tree(
        (
            "cell [1]",
            1.0,
            1,
            [("m:f", 0.25, 1, [("m:h", 0.125, 3)]), ("m:g", 0.5, 1, [("m:h", 0.25, 5)])],
        )
    )
    b = tree(
        (
            "cell [2]",
            1.0,
            1,
            [("m:f", 0.25, 1, [("m:h", 0.125, 3)]), ("m:g", 0.5, 1, [("m:h", 0.375, 9)])],
        )
    )
    c = cmp.compare_trees(a, b)
    h = c.function("m:h")
    assert (h.excl.a, h.excl.b, h.visits.a, h.visits.b) == (0.375, 0.5, 8, 12)
    p = c.paths
    assert p.visits_a[p.find("cell #1", "m:f", "m:h")] == 3
    assert p.visits_b[p.find("cell #1", "m:g", "m:h")] == 9


def test_recursion_counts_inclusive_time_once():
    t = tree(("cell [1]", 1.0, 1, [("m:fib", 0.5, 1, [("m:fib", 0.25, 2, [("m:fib", 0.125, 4)])])]))
    c = cmp.compare_trees(t, t)
    fib = c.function("m:fib")
    assert fib.incl.a == 0.5  # outermost call only, not 0.875
    assert fib.excl.a == 0.5  # 0.25 + 0.125 + 0.125
    assert fib.visits.a == 7
    stats, total, outside = cmp.function_summary(t)
    assert [(s.name, s.excl_s, s.incl_s, s.visits) for s in stats] == [
        ("cell [1]", 0.5, 1.0, 1),
        ("m:fib", 0.5, 0.5, 7),
    ]
    assert (total, outside) == (1.0, 0.0)


def test_across_backends_the_program_root_is_left_out():
    """Score-P: python3.11 (interpreter start-up in its own time) -> :cell [4] -> ...;
    the builtin: cell [1] -> ... Functions and paths match; the start-up is apart."""
    builtin = cell_run(1, 0.3, 600)
    scorep = tree(
        (
            "python3.11",
            1.0,
            1,
            [
                (
                    ":cell [4]",
                    0.4,
                    1,
                    [
                        ("__main__:work", 0.35, 1, [("__main__:step", 0.3, 600)]),
                    ],
                )
            ],
        )
    )
    c = cmp.compare_trees(builtin, scorep)
    assert c.outside.a == 0.0 and c.outside.b == approx(0.6)
    assert c.total.a == approx(0.4) and c.total.b == approx(0.4)
    assert {f.key: f.status for f in c.functions} == {
        "cell #1": "both",
        "__main__:work": "both",
        "__main__:step": "both",
    }
    assert all(f.excl.delta == approx(0.0) for f in c.functions)
    assert c.function("cell #1").name == "cell [4]"  # Score-P's ':' is not shown
    p = c.paths
    assert len(p) == 3 and p.find("cell #1", "__main__:work", "__main__:step") >= 0
    assert compare_verdict.verdict(c).within_noise


def test_synthetic_root_of_several_threads_is_left_out_and_locations_summed():
    """The builtin profile's synthetic root (named after the run) over two threads' top
    calls; functions' values summed over locations, the run's total the cell's region on
    the thread that ran it (a second thread's time is not the cell's)."""
    a = tree(
        (
            "run-a",
            (1.0, 0.5),
            (1, 1),
            [
                ("cell [1]", (1.0, 0.0), (1, 0), [("m:f", (0.5, 0.0), (2, 0))]),
                ("m:g", (0.0, 0.5), (0, 1), [("m:f", (0.0, 0.25), (0, 3))]),
            ],
        ),
        locations=2,
    )
    b = tree(
        (
            "run-b",
            (1.0, 0.75),
            (1, 1),
            [
                ("cell [2]", (1.0, 0.0), (1, 0), [("m:f", (0.5, 0.0), (2, 0))]),
                ("m:g", (0.0, 0.75), (0, 1), [("m:f", (0.0, 0.5), (0, 5))]),
            ],
        ),
        locations=2,
    )
    c = cmp.compare_trees(a, b)
    assert c.total.a == 1.0 and c.total.b == 1.0
    f = c.function("m:f")
    assert (f.excl.a, f.excl.b, f.visits.a, f.visits.b) == (0.75, 1.0, 5, 7)
    assert c.function("run-a") is None and c.function("run-b") is None
    assert c.paths.find("m:g", "m:f") >= 0


def test_cells_of_a_multi_cell_run_match_by_their_place():
    a = tree(("cell [3]", 0.5, 1, [("m:a", 0.25, 1)]), ("cell [4]", 0.5, 1, [("m:b", 0.25, 1)]))
    b = tree(("cell [8]", 0.5, 1, [("m:a", 0.25, 1)]), ("cell [9]", 0.75, 1, [("m:b", 0.5, 1)]))
    c = cmp.compare_trees(a, b)
    assert c.paths.find("cell #1", "m:a") >= 0 and c.paths.find("cell #2", "m:b") >= 0
    assert c.function("cell #2").name == "cell [9]"
    assert c.function("m:b").excl.delta == 0.25


def test_noise_threshold_and_floor():
    n = compare_noise.Noise(rel=0.1, floor_s=0.002, function_floor_s=0.001)
    assert n.threshold(1.0, 1.05) == approx(0.105)
    assert not n.exceeds(1.0, 1.1) and n.exceeds(1.0, 1.12)
    # a short run: the floor decides
    assert n.threshold(0.004, 0.005) == 0.002
    assert not n.exceeds(0.004, 0.0055) and n.exceeds(0.004, 0.0061)
    assert n.threshold(0.004, 0.005, function=True) == 0.001


def test_within_noise_still_reports_changed_visits():
    a = cell_run(1, 0.3, 600)
    b = cell_run(2, 0.31, 601)  # +10 ms of 400 ms: 2.5 %, under 10 %
    v = compare_verdict.verdict(cmp.compare_trees(a, b))
    assert v.within_noise and v.function is None
    assert v.sentence == (
        "Within run-to-run noise of the previous run (+2.5 %; a change must exceed "
        "41 ms); `step` visits 600 → 601."
    )
    # a function whose time moved less than its noise is not time_changed
    step = cmp.compare_trees(a, b, compare_noise.Noise(rel=0.05)).function("__main__:step")
    assert not step.time_changed and step.visits_changed


def test_noise_from_runs():
    # fewer than three usable runs: the default
    assert compare_noise.noise_from_runs([1.0, 1.2]) == compare_noise.DEFAULT_NOISE
    assert (
        compare_noise.noise_from_runs([1.0, None, 0.0, float("nan")]) == compare_noise.DEFAULT_NOISE
    )
    # median 1.0, MAD 0.1: sigma = 14.826 %, threshold 2.77 sigma = 41.1 %
    n = compare_noise.noise_from_runs([1.0, 1.1, 0.9, 1.2, 0.8])
    assert n.runs == 5
    assert n.rel == approx(1.96 * 2**0.5 * 0.14826)
    assert "5 runs" in n.basis and "±14.8 %" in n.basis
    # identical runs: not below MIN_REL; wild runs: not above MAX_REL
    assert compare_noise.noise_from_runs([1.0, 1.0, 1.0]).rel == compare_noise.MIN_REL
    assert compare_noise.noise_from_runs([1.0, 5.0, 0.1, 9.0]).rel == compare_noise.MAX_REL
    # the measured noise decides the verdict
    c = cmp.compare_trees(cell_run(1, 0.3, 600), cell_run(2, 0.33, 600))  # +7.5 %
    assert compare_verdict.verdict(
        c, compare_noise.noise_from_runs([1.0, 1.0, 1.01, 0.99, 1.0])
    ).slower
    assert compare_verdict.verdict(c).within_noise


def test_verdict_without_a_baseline_time_and_a_new_culprit():
    a = tree(("cell [1]", 0.0, 1))
    b = tree(("cell [2]", 0.5, 1, [("m:new", 0.5, 3)]))
    v = compare_verdict.verdict(cmp.compare_trees(a, b))
    assert v.slower and v.delta_pct is None
    assert v.sentence == "500 ms slower than the previous run: `new` +500 ms (new)."


def test_empty_trees():
    e = tree()
    c = cmp.compare_trees(e, e)
    assert c.functions == [] and len(c.paths) == 0 and c.total.delta == 0
    assert compare_verdict.verdict(c).within_noise
    assert compare_json.comparison_json(c)["tree"] == []


def test_short_names():
    assert compare_names.short_name("__main__:step") == "step"
    assert compare_names.short_name("pandas.core.frame.DataFrame:sum") == "DataFrame.sum"
    assert compare_names.short_name(":cell [4]") == "cell [4]"
    assert compare_names.short_name("python3.11") == "python3.11"
    assert compare_verdict.format_seconds(0.12, sign=True) == "+120 ms"
    assert compare_verdict.format_seconds(-1.5, sign=True) == "-1.5 s"
    assert compare_verdict.format_seconds(2.5e-6) == "2.5 µs"


def test_json_is_nested_and_truncation_keeps_the_tree_connected():
    c = cmp.compare_trees(A, B)
    j = compare_json.comparison_json(c)
    assert j["total"]["delta_pct"] == approx(31.0)
    assert j["verdict"]["kind"] == "slower" and j["verdict"]["function"] == "__main__:step"
    assert j["functions"][0]["key"] == "__main__:step"
    step = j["functions"][0]
    assert (step["visits_a"], step["visits_b"], step["visits_delta"]) == (600, 900, 300)
    assert step["excl_delta"] == approx(0.12)
    (root,) = j["tree"]
    assert root["name"] == "cell [5]" and root["status"] == "both"
    leaf = root["children"][0]["children"][0]
    assert (leaf["name"], leaf["visits_a"], leaf["visits_b"]) == ("__main__:step", 600, 900)
    assert "truncated" not in j
    # a wide tree cut to 10 paths: every kept path's parent is kept
    wide = tree(
        (
            "cell [1]",
            100.0,
            1,
            [(f"m:f{i}", float(i), 1, [(f"m:g{i}", i / 2, 1)]) for i in range(50)],
        )
    )
    wide2 = tree(
        (
            "cell [2]",
            100.0,
            1,
            [(f"m:f{i}", float(i), 1, [(f"m:g{i}", i / 3, 1)]) for i in range(50)],
        )
    )
    cw = cmp.compare_trees(wide, wide2)
    keep = compare_json._select_paths(cw.paths, 10)
    kept = set(keep.nonzero()[0].tolist())
    assert 10 <= len(kept) < 101
    assert all(cw.paths.parent[i] < 0 or cw.paths.parent[i] in kept for i in kept)
    jw = compare_json.comparison_json(cw, max_paths=10, max_functions=5)
    assert jw["truncated"]["paths_dropped"] == 101 - len(kept)
    assert jw["truncated"]["functions_dropped"] == 101 - 5
    # the most changed path (g49: 24.5 -> 16.33) is among those kept
    assert cw.paths.find("cell #1", "m:f49", "m:g49") in kept


def test_the_readers_frame_is_left_out_too():
    """A reader may mark the measurement's frame (CallTree.frame): Score-P's python3.11
    and its THREADS node that holds the threads it did not see created."""
    import numpy as np

    def scorep(step_s):
        t = tree(
            (
                "python3.11",
                1.0,
                1,
                [
                    ("THREADS", 0.5, 1, [("m:worker", 0.5, 1)]),
                    (":cell [4]", 0.25, 1, [("m:step", step_s, 10)]),
                ],
            )
        )
        t.frame = np.array([True, True, False, False, False])
        return t

    c = cmp.compare_trees(scorep(0.125), scorep(0.25))
    assert {f.key for f in c.functions} == {"m:worker", "cell #1", "m:step"}
    assert c.outside.a == approx(0.25)  # python3.11's own 0.25, THREADS' 0
    assert c.total.a == approx(0.25)  # the cell's region: the worker thread is not the cell
    assert c.paths.find("m:worker") >= 0 and c.paths.find("THREADS") == -1
    stats, total, outside = cmp.function_summary(scorep(0.125))
    assert "THREADS" not in [s.name for s in stats] and outside == approx(0.25)


def test_regions_numbered_by_the_reader_give_the_same_comparison():
    """calltree.from_index numbers the nodes' regions (CallTree.region) and shares one
    node dict per region; compare.py then looks names up per region. Same answer."""
    import numpy as np

    def numbered(t):
        names = [n["name"] for n in t.nodes]
        ids = {name: i for i, name in enumerate(dict.fromkeys(names))}
        shared = {name: {"name": name, "group": "", "file": "", "line": 0} for name in ids}
        t.region = np.array([ids[n] for n in names])
        t.nodes = [shared[n] for n in names]
        return t

    def rows(c):
        return [(f.key, f.name, f.status, f.excl, f.incl, f.visits) for f in c.functions]

    plain = cmp.compare_trees(A, B)
    a, b = cell_run(3, 0.3, 600), cell_run(5, 0.42, 900, work_excl=0.054)
    fast = cmp.compare_trees(numbered(a), numbered(b))
    assert rows(fast) == rows(plain)
    assert len(fast.paths) == len(plain.paths)
    assert fast.paths.find("cell #1", "__main__:work", "__main__:step") >= 0
