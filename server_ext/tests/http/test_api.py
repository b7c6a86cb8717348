"""Every endpoint against a real jupyter_server with the extension, on experiments written
by the kernel's writers."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest
from experiment_factory import EPOCH_BASE, MS, many_calls_thread
from pycubexr import CubexParser

pytestmark = pytest.mark.timeout(120)


async def test_version_reports_scorep_and_tools(api, monkeypatch, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "cube").write_text("#!/bin/sh\nexit 0\n")
    (fake / "cube").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    code, body = await api("version")
    assert code == 200
    from jupyterlab_scorep import __version__

    assert body["version"] == __version__
    # what this machine has (Score-P is absent here, present on some users' machines)
    import importlib.util
    import shutil

    config = shutil.which("scorep-config")
    bindings = importlib.util.find_spec("scorep") is not None
    assert body["scorep"]["scorep_config"] == config
    assert body["scorep"]["available"] is bool(config and bindings)
    if not config:
        assert "scorep-config is not on PATH" in body["scorep"]["message"]
    assert body["tools"] == {"vampir": None, "cube": str(fake / "cube")}


async def test_experiments_lists_newest_first(api, experiments):
    older = experiments("a-older")
    newer = experiments("b-newer")
    from scorep_kernel import manifest as mf

    mf.update_manifest(newer, start_ns=EPOCH_BASE + 10**12)
    code, body = await api("experiments")
    assert code == 200
    assert [e["path"] for e in body["experiments"]] == [str(newer), str(older)]
    assert body["experiments"][0]["manifest"]["id"] == "b-newer"
    code, body = await api("experiments", dir=".")
    assert [Path(e["path"]).name for e in body["experiments"]] == ["b-newer", "a-older"]


async def test_experiment_describes_trace(api, experiments):
    exp = experiments()
    code, body = await api("experiment", path=str(exp))
    assert code == 200
    assert body["path"] == str(exp)
    assert body["available"] == {"otf2": True, "cubex": True, "metrics": True}
    trace = body["trace"]
    assert trace["range"] == [0, 1000 * MS]
    assert int(trace["origin_epoch_ns"]) == EPOCH_BASE
    assert trace["events"] == 2 * (6 + 4)  # cell, g, 3 f, h on master; g, 3 f on worker
    assert [(l["name"], l["kind"], l["max_depth"]) for l in trace["locations"]] == [
        ("Master thread", "thread", 3),
        ("Thread 1 (worker)", "thread", 1),
        ("System metrics", "metric", -1),
    ]
    # relative path works too
    code, body2 = await api("experiment", path="scorep-experiments/run1")
    assert code == 200 and body2["path"] == str(exp)


async def test_experiment_pending_has_no_trace_and_timeline_409(api, experiments):
    exp = experiments(otf2=False, cubex=False, files_status="pending", status="running")
    code, body = await api("experiment", path=str(exp))
    assert code == 200 and body["trace"] is None
    code, body = await api("timeline", path=str(exp))
    assert code == 409
    assert "still being written" in body["message"]


async def test_timeline_full_view_is_exact_when_calls_are_wide(api, experiments):
    exp = experiments()
    code, body = await api("timeline", path=str(exp), t0=0, t1=1000 * MS, width=1000)
    assert code == 200
    assert body["window"] == [0, 1000 * MS] and body["width"] == 1000
    master = body["locations"][0]
    assert master["name"] == "Master thread"
    rows = {r["depth"]: r for r in master["rows"]}
    # 1 ms per pixel: every call is wider than a pixel, so nothing merges.
    assert rows[2]["start"] == [100 * MS, 300 * MS, 500 * MS]
    assert rows[2]["end"] == [300 * MS, 500 * MS, 700 * MS]
    assert rows[2]["count"] == [1, 1, 1]
    assert rows[3]["start"] == [150 * MS] and rows[3]["end"] == [200 * MS]
    names = {body["regions"][str(r)]["name"] for r in rows[2]["region"]}
    assert names == {"__main__:f"}
    f = body["regions"][str(rows[2]["region"][0])]
    assert f == {
        "name": "__main__:f",
        "group": "__main__",
        "file": "<cell 1>",
        "line": 1,
        "role": "function",
    }
    cell = body["regions"][str(rows[0]["region"][0])]
    assert cell["role"] == "cell"


async def test_timeline_merges_sub_pixel_calls(api, experiments):
    n = 20_000
    exp = experiments("many", threads=[many_calls_thread(n)], metrics=None)
    code, body = await api("timeline", path=str(exp), width=200)
    assert code == 200
    rows = {r["depth"]: r for r in body["locations"][0]["rows"]}
    assert sum(rows[1]["count"]) == n  # every call accounted for, once
    assert len(rows[1]["start"]) <= 2 * 200
    # zoom to 10 calls: each call is 1 µs, the window 20 µs over 100 px -> no merging
    t0 = 1000 + 5000 * 2000
    code, body = await api("timeline", path=str(exp), t0=t0, t1=t0 + 20_000, width=100)
    rows = {r["depth"]: r for r in body["locations"][0]["rows"]}
    assert rows[1]["count"] == [1] * 10
    assert rows[1]["start"] == [t0 + 2000 * i for i in range(10)]


async def test_timeline_rejects_bad_parameters(api, experiments):
    exp = experiments()
    for params, needle in (
        ({"t0": "x"}, "not a number"),
        ({"t0": 5, "t1": 5}, "empty"),
        ({"width": 0}, "out of range"),
    ):
        code, body = await api("timeline", path=str(exp), **params)
        assert code == 400, params
        assert needle in body["message"]


async def test_calltree_from_cubex_and_per_location(api, experiments):
    exp = experiments()
    code, body = await api("calltree", path=str(exp))
    assert code == 200
    assert body["source"] == "cubex"
    with CubexParser(exp / "profile.cubex") as cube:
        assert [l["name"] for l in body["locations"]] == [l.name for l in cube.get_locations()]
    root = body["root"]
    # two top-level paths (the cell on master, g on the worker): a synthetic root
    assert root["name"] == "run1"

    def find(node, name, path=()):
        if node["name"] == name:
            yield path + (name,), node
        for child in node["children"]:
            yield from find(child, name, path + (node["name"],))

    fs = {p: n for p, n in find(root, "__main__:f")}
    master_f = fs[("run1", "__main__:<cell 1>", "__main__:g", "__main__:f")]
    assert master_f["visits"] == 3
    assert master_f["incl_s"] == pytest.approx(0.6)
    assert master_f["excl_s"] == pytest.approx(0.55)
    assert master_f["min_s"] == pytest.approx(0.2) and master_f["max_s"] == pytest.approx(0.2)
    code, body = await api("calltree", path=str(exp), location=1)
    assert body["location"] == 1
    # the worker never ran the cell: under the run's root it has g, nothing else
    assert body["root"]["name"] == "run1"
    assert [c["name"] for c in body["root"]["children"]] == ["__main__:g"]
    assert body["root"]["children"][0]["incl_s"] == pytest.approx(0.7)
    code, _ = await api("calltree", path=str(exp), location=7)
    assert code == 400


async def test_calltree_from_trace_matches_cubex(api, experiments):
    with_profile = experiments("p")
    without = experiments("t", cubex=False)
    _, from_cubex = await api("calltree", path=str(with_profile))
    code, from_trace = await api("calltree", path=str(without))
    assert code == 200 and from_trace["source"] == "trace"

    def flatten(node, path=()):
        path = path + (node["name"],)
        out = {
            path[1:]: (
                node["visits"],
                round(node["incl_s"], 6),
                round(node["excl_s"], 6),
                round(node["min_s"], 6),
                round(node["max_s"], 6),
            )
        }
        for c in node["children"]:
            out.update(flatten(c, path))
        return out

    a, b = flatten(from_cubex["root"]), flatten(from_trace["root"])
    a.pop((), None), b.pop((), None)  # the synthetic roots are named differently
    assert a == b


async def test_metrics_downsampled_relative_to_run_start(api, experiments):
    exp = experiments()
    code, body = await api("metrics", path=str(exp), width=5)
    assert code == 200
    by_key = {s["key"]: s for s in body["series"]}
    assert set(by_key) == {"cpu.total", "cpu.core0", "cpu.core1", "mem.rss"}
    cpu = by_key["cpu.total"]
    assert len(cpu["t"]) <= 5
    assert cpu["t"][0] >= 0 and cpu["t"][-1] <= 1000 * MS
    assert min(cpu["min"]) == pytest.approx(40.0) and max(cpu["max"]) == pytest.approx(60.0)
    assert all(lo <= m <= hi for lo, m, hi in zip(cpu["min"], cpu["mean"], cpu["max"]))
    code, body = await api("metrics", path=str(exp), t0=0, t1=200 * MS, width=100)
    assert by_key["cpu.core0"]["unit"] == "%"
    assert [t for t in body["series"][0]["t"]] == [0, 100 * MS, 200 * MS]


async def test_metrics_missing_is_404(api, experiments):
    exp = experiments(metrics=None)
    code, body = await api("metrics", path=str(exp))
    assert code == 404 and "no metric samples" in body["message"]


async def test_metrics_from_the_trace_when_there_are_no_metric_files(api, experiments):
    exp = experiments()
    _, from_files = await api("metrics", path=str(exp), width=100)
    (exp / "metrics.json").unlink()
    (exp / "metrics.npz").unlink()
    code, from_trace = await api("metrics", path=str(exp), width=100)
    assert code == 200
    assert "OTF2 trace" in from_trace["notes"][0]
    a = {s["key"]: s for s in from_files["series"]}
    b = {s["key"]: s for s in from_trace["series"]}
    assert set(a) == set(b)
    for key in a:  # the writer put the same samples into both places
        assert b[key]["t"] == a[key]["t"] and b[key]["mean"] == pytest.approx(a[key]["mean"])


async def test_summary_words_and_numbers(api, experiments):
    exp = experiments()
    code, body = await api("summary", path=str(exp))
    assert code == 200
    assert body["status"] == "ok" and body["events"] == 20
    assert body["wall_s"] == pytest.approx(1.0)
    top = body["top_regions"][0]
    # exclusive: master f 3*200-50 = 550 ms, worker f 600 ms -> 1.15 s
    assert top["name"] == "__main__:f" and top["excl_s"] == pytest.approx(1.15)
    kinds = {v["kind"]: v for v in body["verdicts"]}
    assert kinds["cpu"]["numbers"] == {
        "core0_pct": 98.0,
        "core1_pct": 4.0,
        "single_core_samples_pct": 100.0,
    }
    assert "One core saturated" in kinds["cpu"]["text"]
    assert kinds["memory"]["numbers"]["growth_bytes"] == pytest.approx(2 * 2**30)
    assert "2.00 GiB" in kinds["memory"]["text"]


async def test_download_otf2_zip_streams_the_archive(api, experiments):
    exp = experiments()
    code, response = await api("download", path=str(exp), what="otf2", raw=True)
    assert code == 200
    assert response.headers["Content-Type"] == "application/zip"
    assert 'filename="run1-otf2.zip"' in response.headers["Content-Disposition"]
    with zipfile.ZipFile(io.BytesIO(response.body)) as zf:
        names = sorted(zf.namelist())
        assert "run1/traces.otf2" in names and "run1/traces.def" in names
        for name in names:
            assert zf.read(name) == (exp / name.split("/", 1)[1]).read_bytes()


async def test_download_cubex_and_perfetto(api, experiments):
    exp = experiments()
    code, response = await api("download", path=str(exp), what="cubex", raw=True)
    assert code == 200 and response.body == (exp / "profile.cubex").read_bytes()
    code, response = await api("download", path=str(exp), what="perfetto", raw=True)
    assert code == 200
    trace = json.loads(response.body)
    calls = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(calls) == 10
    h = next(e for e in calls if e["name"] == "numpy:h")
    assert (h["ts"], h["dur"], h["tid"]) == (150_000.0, 50_000.0, 0)
    threads = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"Master thread", "Thread 1 (worker)"} <= threads
    code, body = await api("download", path=str(exp), what="pdf")
    assert code == 400


async def test_open_without_tool_is_404_with_advice(api, experiments, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    exp = experiments()
    code, body = await api("open", method="POST", path=str(exp), tool="cube")
    assert code == 404
    assert "cube" in body["message"] and "PATH" in body["message"]


async def test_open_starts_the_tool_without_a_shell(api, experiments, monkeypatch, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    marker = tmp_path / "args.txt"
    (fake / "vampir").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {marker}\n')
    (fake / "vampir").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    exp = experiments()
    code, body = await api("open", method="POST", path=str(exp), tool="vampir")
    assert code == 200 and body["pid"] > 0
    import asyncio

    for _ in range(100):
        if marker.exists() and marker.read_text():
            break
        await asyncio.sleep(0.05)
    assert marker.read_text().splitlines() == [str(exp / "traces.otf2")]


async def test_open_once_starts_the_tool_for_an_experiment_only_once(
    api, experiments, monkeypatch, tmp_path
):
    """The bundle's "open" (%%enable_vampir_launch_on_scorep_instrumented): the panel asks
    with once=1 when the files are ready, and again whenever the notebook is reopened."""
    fake = tmp_path / "bin"
    fake.mkdir()
    starts = tmp_path / "starts.txt"
    (fake / "vampir").write_text(f"#!/bin/sh\necho started >> {starts}\n")
    (fake / "vampir").chmod(0o755)
    exp = experiments()
    monkeypatch.setenv("PATH", "/nonexistent")
    code, body = await api("open", method="POST", path=str(exp), tool="vampir", once="1")
    assert code == 404  # not found: no marker left, a later try may start it
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    code, body = await api("open", method="POST", path=str(exp), tool="vampir", once="1")
    assert code == 200 and body["pid"] > 0 and body["already"] is False
    code, body = await api("open", method="POST", path=str(exp), tool="vampir", once="1")
    assert code == 200 and body == {"pid": None, "already": True}
    code, body = await api("open", method="POST", path=str(exp), tool="vampir")
    assert code == 200 and body["pid"] > 0  # the button itself always starts it
    import asyncio

    for _ in range(100):
        if starts.exists() and len(starts.read_text().splitlines()) == 2:
            break
        await asyncio.sleep(0.05)
    assert starts.read_text().splitlines() == ["started", "started"]
