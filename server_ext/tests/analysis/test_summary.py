"""Verdicts and metric bucketing as pure functions over hand-built inputs."""

from __future__ import annotations

import numpy as np

from jupyterlab_scorep.analysis import metric_series, summary
from jupyterlab_scorep.trace.calltree import CallTree

GiB = 2**30


def samples(**cols):
    n = len(next(iter(cols.values())))
    keys = list(cols)
    schema = {
        "interval_s": 0.5,
        "series": [{"key": k.replace("_", "."), "label": k, "unit": "", "group": ""} for k in keys],
    }
    t = 1_000_000_000 + np.arange(n, dtype=np.int64) * 500_000_000
    return schema, t, np.column_stack([np.asarray(cols[k], float) for k in keys])


def kinds(verdicts):
    return {v["kind"]: v for v in verdicts}


def test_quiet_run_has_no_resource_verdicts():
    m = samples(
        cpu_total=[50] * 8,
        cpu_core0=[50] * 8,
        cpu_core1=[50] * 8,
        mem_rss=[GiB] * 8,
        disk_read=[0] * 8,
        disk_write=[0] * 8,
    )
    assert summary.resource_verdicts({"wall_s": 4.0}, m) == []


def test_saturated_core_and_memory_growth():
    m = samples(
        cpu_core0=[99, 97, 98, 98],
        cpu_core1=[3, 5, 4, 4],
        mem_rss=[GiB, 1.5 * GiB, 2.5 * GiB, 3.5 * GiB],
    )
    v = kinds(summary.resource_verdicts({"wall_s": 2.0}, m))
    assert v["cpu"]["numbers"] == {
        "core0_pct": 98.0,
        "core1_pct": 4.0,
        "single_core_samples_pct": 100.0,
    }
    assert "core 0 at 98%" in v["cpu"]["text"] and "core 1 at 4%" in v["cpu"]["text"]
    assert v["memory"]["numbers"]["growth_bytes"] == 2.5 * GiB
    assert v["memory"]["level"] == "warning" and "2.50 GiB" in v["memory"]["text"]


def test_a_thread_moving_between_cores_still_counts_as_one_core():
    # the busy thread hops between four cores: no core averages above 50%
    hop = np.full((8, 4), 2.0)
    hop[np.arange(8), np.arange(8) % 4] = 97.0
    m = samples(**{f"cpu_core{i}": hop[:, i] for i in range(4)}, cpu_total=hop.mean(axis=1))
    v = kinds(summary.resource_verdicts({"wall_s": 4.0}, m))
    assert v["cpu"]["numbers"]["single_core_samples_pct"] == 100.0
    assert "One core saturated" in v["cpu"]["text"]


def test_waiting_gpu_idle_and_heavy_io():
    n = 10
    m = samples(
        cpu_total=[5] * n,
        cpu_core0=[6] * n,
        cpu_core1=[4] * n,
        gpu0_util=[0] * 7 + [90] * 3,
        disk_read=[300 * 2**20] * n,
        disk_write=[0] * n,
        net_recv=[0] * n,
        net_sent=[0] * n,
    )
    v = kinds(summary.resource_verdicts({"wall_s": 5.0}, m))
    assert "Mostly waiting" in v["cpu"]["text"] and v["cpu"]["numbers"]["cpu_total_pct"] == 5.0
    assert v["cpu"]["numbers"]["busy_cores"] == 0.1
    assert v["gpu"]["numbers"]["idle_pct"] == 70.0 and "GPU 0 idle 70%" in v["gpu"]["text"]
    assert v["io"]["numbers"]["disk_read_bytes"] == 10 * 300 * 2**20 * 0.5
    assert "network" not in v


def test_event_cap_and_status():
    # the keys the builtin tracer writes into the manifest's "measurement"
    v = summary.trace_verdicts(
        {
            "status": "interrupted",
            "measurement": {
                "cap_reached": True,
                "event_cap": 1000,
                "events": 1000,
                "dropped": {"outside_cells": 90, "excluded": 0, "too_deep": 12, "paused": 0},
            },
        }
    )
    assert v[0]["numbers"] == {"event_cap": 1000, "events": 1000}
    assert "event cap of 1,000 events was reached" in v[0]["text"]
    assert v[1]["numbers"] == {"too_deep": 12} and "12 deeper than max_depth" in v[1]["text"]
    assert "interrupted" in v[2]["text"]
    quiet = summary.trace_verdicts(
        {"status": "ok", "measurement": {"cap_reached": False, "dropped": {"outside_cells": 500}}}
    )
    assert quiet == []


def tree():
    # main(10 s) -> a(6 s) -> a(2 s) (recursion), main -> b(3 s); functions are named
    # "module:function" (a root named otherwise is the run's own root, as compare_names
    # keys it, and is no function of the run)
    parent = np.array([-1, 0, 1, 0])
    names = ("__main__:main", "__main__:a", "__main__:a", "__main__:b")
    nodes = [{"name": n, "group": "", "file": "", "line": 0} for n in names]
    incl = np.array([[10.0], [6.0], [2.0], [3.0]])
    excl = np.array([[1.0], [4.0], [2.0], [3.0]])
    visits = np.array([[1.0], [2.0], [5.0], [1.0]])
    return CallTree(
        "trace", [{"id": 0, "name": "t"}], parent, nodes, visits, incl, excl, incl, incl
    )


def test_top_regions_do_not_double_count_recursion():
    top = summary.top_regions(tree())
    assert top[0] == {
        "name": "__main__:a",
        "excl_s": 6.0,
        "incl_s": 6.0,
        "visits": 7,
        "pct": 60.0,
    }
    assert [t["name"] for t in top] == ["__main__:a", "__main__:b", "__main__:main"]


def test_top_shares_of_many_ranks_stay_within_the_whole():
    # two ranks, each: cell [1] (4 s) -> __main__:work (3 s): the cells' time on the
    # thread that ran it is 4 s, the functions' time over both ranks 8 s
    parent = np.array([-1, 0])
    nodes = [
        {"name": "cell [1]", "group": "cell", "file": "", "line": 0, "role": "cell"},
        {"name": "__main__:work", "group": "__main__", "file": "", "line": 0},
    ]
    incl = np.array([[4.0, 4.0], [3.0, 3.0]])
    excl = np.array([[1.0, 1.0], [3.0, 3.0]])
    visits = np.ones((2, 2))
    ranks = CallTree(
        "trace", [{"id": 0, "name": "rank 0"}, {"id": 1, "name": "rank 1"}],
        parent, nodes, visits, incl, excl, incl, incl,
    )  # fmt: skip
    top = summary.top_regions(ranks)
    assert {t["name"]: t["pct"] for t in top}["__main__:work"] == 75.0
    assert sum(t["pct"] for t in top) <= 100.0


def test_summarize_combines_everything():
    out = summary.summarize(
        {"status": "ok", "wall_s": 10.0, "measurement": {"events": 42}}, tree(), None
    )
    assert out["wall_s"] == 10.0 and out["events"] == 42 and out["verdicts"] == []


def test_downsample_buckets_mean_min_max():
    schema, t, v = samples(cpu_total=[0, 10, 20, 30, 40, 50, 60, np.nan])
    out = metric_series.downsample(
        schema, t, v, origin_epoch_ns=1_000_000_000, t0=None, t1=None, width=4
    )
    s = out["series"][0]
    # the last bucket holds the samples at 3.0 s and 3.5 s (the NaN one is skipped)
    assert s["t"] == [250_000_000, 1_250_000_000, 2_250_000_000, 3_250_000_000]
    assert s["mean"] == [5.0, 25.0, 45.0, 60.0]
    assert s["min"] == [0.0, 20.0, 40.0, 60.0] and s["max"] == [10.0, 30.0, 50.0, 60.0]
    assert out["window"] == [0, 3_500_000_000]
    only_nan = metric_series.downsample(*samples(x=[np.nan, np.nan]), 0, None, None, 3)
    assert only_nan["series"][0]["mean"] == [None, None]
