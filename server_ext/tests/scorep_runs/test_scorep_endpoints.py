"""The server on experiments measured by real Score-P: cells run by the kernel under
``python -m scorep`` (as a user's profiled cell runs), then read through every endpoint.
Skipped, with the kernel's reason, where Score-P is not installed (CI has it).

What is checked is what Score-P's files hold and the builtin tracer's do not: the CPU's
ticks per second (not 1e9), a clock that starts when the worker process started, the
program region and its THREADS node on top of the profile, the cell's region "cell [n]" in
the region group "cell" (begun through Score-P's user API), "Orphan thread" locations, the flush and recording-off records, rusage metrics in scaled
units, and Score-P's own tools on the run (scorep-score)."""

from __future__ import annotations

import collections
import io
import json
import re
import shutil
import zipfile

import pytest
from scorep_cells import (
    SCOREP,
    nodes,
    otf2_print_header,
    tree_paths,
    visits_by_path,
)

from jupyterlab_scorep.trace import calltree, index_store
from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf
from scorep_kernel import region_words as rw

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(not SCOREP["available"], reason=SCOREP["message"]),
]


async def test_a_scorep_run_through_every_endpoint(api, runs):
    _, exps = runs
    exp = exps["threads"]
    path = str(exp)
    manifest = mf.read_manifest(exp)
    count = manifest["cells"][0]["execution_count"]

    code, version = await api("version")
    assert code == 200 and version["scorep"]["available"] is True

    code, listed = await api("experiments")
    assert code == 200 and path in [e["path"] for e in listed["experiments"]]

    code, body = await api("experiment", path=path)
    assert code == 200, body
    assert body["available"] == {"otf2": True, "cubex": True, "metrics": True}
    assert re.fullmatch(r"Score-P \d+\.\d+.*", body["manifest"]["measurement"]["tool"])
    trace = body["trace"]
    locations = [(loc["name"], loc["kind"]) for loc in trace["locations"]]
    # Score-P's "Orphan thread 1", shown as the builtin tracer names the Python thread
    # (Python's default name "Thread-N (work)" counts by its own counter: its target's name)
    shown = manifest["thread_names"]["Orphan thread 1"]
    assert shown == "Thread 1 (work)"
    assert locations == [("Master thread", "thread"), (shown, "thread")]
    # Score-P's clock starts with the worker process; the run starts with the cell
    assert trace["range"][0] == 0
    assert trace["origin_epoch_ns"] is None  # Score-P 8.4 writes no realtime timestamp

    code, tl = await api("timeline", path=path, width=4000)
    assert code == 200
    regions = tl["regions"]
    by_name = {r["name"]: (int(k), r) for k, r in regions.items()}
    master = tl["locations"][0]
    top = next(row for row in master["rows"] if row["depth"] == 0)
    cell_ref, cell = by_name[f"cell [{count}]"]
    assert cell["role"] == rw.ROLE_CELL and cell["group"] == "cell"
    assert top["region"] == [cell_ref] and top["start"] == [0]
    assert top["end"] == [tl["range"][1]]  # the range ends with the cell
    assert by_name["user:setup"][1]["role"] == rw.ROLE_USER
    assert by_name["import:xml.dom.minidom"][1]["role"] == rw.ROLE_IMPORT
    assert by_name["import:xml.dom.minidom"][1]["group"] == "xml"
    assert by_name["__main__:work"][1]["group"] == "__main__"
    assert not {":cell [1]", "python3.11", "THREADS"} & set(by_name)
    helper = tl["locations"][1]
    helper_regions = {regions[str(r)]["name"] for row in helper["rows"] for r in row["region"]}
    assert "__main__:work" in helper_regions and "__main__:leaf" in helper_regions

    code, tree = await api("calltree", path=path)
    assert code == 200 and tree["source"] == "cubex"
    got = visits_by_path(tree["root"])
    assert got[("cell",)] == 1
    assert got[("cell", "user:setup")] == 1
    assert (
        got[("cell", "__main__:work")] == 1 and got[("cell", "__main__:work", "__main__:leaf")] == 2
    )
    assert got[("threading.Thread:run", "__main__:work", "__main__:leaf")] == 3
    names = {path[-1] for path in got}
    assert not {"python3.11", "THREADS", f":cell [{count}]"} & names
    code, helper_tree = await api("calltree", path=path, location=1)
    assert code == 200
    helper_paths = visits_by_path(helper_tree["root"])
    assert helper_paths[("threading.Thread:run", "__main__:work")] == 1
    assert ("cell",) not in helper_paths

    code, metrics = await api("metrics", path=path)
    assert code == 200 and any(s["key"] == "cpu.total" for s in metrics["series"])

    code, summary = await api("summary", path=path)
    assert code == 200
    assert summary["status"] == "ok" and summary["events"] == trace["events"]
    tops = [r["name"] for r in summary["top_regions"]]
    assert tops and "python3.11" not in tops and "THREADS" not in tops
    assert summary["wall_s"] == manifest["wall_s"]

    code, response = await api("download", path=path, what="otf2", raw=True)
    assert code == 200
    with zipfile.ZipFile(io.BytesIO(response.body)) as z:
        # one folder named after the experiment holds the archive
        names = {name.split("/", 1)[1] for name in z.namelist()}
    expected = {"traces.otf2", "traces.def"} | {
        f"traces/{p.name}" for p in (exp / "traces").iterdir()
    }
    assert names == expected and "traces/4294967296.evt" in names  # the orphan's location
    code, response = await api("download", path=path, what="cubex", raw=True)
    assert code == 200 and response.body == (exp / "profile.cubex").read_bytes()
    code, response = await api("download", path=path, what="perfetto", raw=True)
    assert code == 200
    events = json.loads(response.body)["traceEvents"]
    calls = [e for e in events if e["ph"] == "X"]
    assert sum(1 for e in calls if e["name"] == "__main__:leaf") == 5
    assert [e["name"] for e in calls if e["name"].startswith("cell")] == [f"cell [{count}]"]
    threads = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert threads == {"Master thread", shown}

    code, opened = await api("open", method="POST", path=path, tool="vampir")
    if shutil.which("vampir") is None:
        assert code == 404 and "vampir" in opened["message"]


async def test_ticks_are_the_cpu_clocks_not_nanoseconds(api, runs):
    """The cell's length in the timeline (ticks turned into ns) is the cell's time in
    Score-P's own profile: both come from one measurement, so they agree closely."""
    _, exps = runs
    exp = exps["scorep"]
    header = otf2_print_header(exp)
    ticks = int(re.search(r"Ticks per Seconds: (\d+)", header).group(1))
    assert ticks != 10**9
    index = index_store.LoadedIndex(index_store.ensure_index(str(exp)))
    assert index.meta["timer_resolution"] == ticks
    code, tl = await api("timeline", path=str(exp), width=100)
    top = next(row for row in tl["locations"][0]["rows"] if row["depth"] == 0)
    cell_ns = top["end"][0] - top["start"][0]
    code, tree = await api("calltree", path=str(exp))
    cell_s = next(n for p, n in nodes(tree["root"]) if rw.cell_region_count(n["name"]))["incl_s"]
    assert cell_ns == pytest.approx(cell_s * 1e9, rel=1e-3)


async def test_the_same_cell_under_both_backends_has_the_same_functions_and_visits(api, runs):
    _, exps = runs
    trees = {}
    for backend in ("scorep", "builtin"):
        code, tree = await api("calltree", path=str(exps[backend]))
        assert code == 200 and tree["source"] == "cubex"
        trees[backend] = visits_by_path(tree["root"])
    assert trees["scorep"] == trees["builtin"]
    # the cell's own code, called as it was written: a check that the trees hold it
    assert trees["scorep"][("cell", "__main__:work")] == 1
    assert trees["scorep"][("cell", "__main__:work", "__main__.Acc:add")] == 7

    def calls(n: int) -> int:  # fib(n) calls itself this often, itself included
        return 1 if n < 2 else 1 + calls(n - 1) + calls(n - 2)

    fib_calls = sum(v for p, v in trees["scorep"].items() if p[-1] == "__main__:fib")
    assert fib_calls == sum(calls(n) for n in range(7))


@pytest.mark.parametrize("name", ["threads", "off", "flush"])
def test_the_trace_reads_as_scorep_profiles_it(runs, name):
    """The call tree derived from the trace (the reader's work: flushes, recording off,
    orphan threads) equals the one Score-P wrote into profile.cubex, path by path."""
    _, exps = runs
    exp = exps[name]
    index = index_store.LoadedIndex(index_store.ensure_index(str(exp)))
    from_trace = tree_paths(calltree.from_index(index))
    from_profile = tree_paths(calltree.from_cubex(exp / ex.CUBEX))
    assert from_trace == from_profile
    if name == "off":
        assert from_trace[("cell", "MEASUREMENT OFF")] == 1
        assert from_trace[("cell", "__main__:f")] == 2  # f(2) ran while recording was off
    if name == "flush":
        flushes = from_trace[("cell", "TRACE BUFFER FLUSH")]
        assert flushes >= 1
        regions = {r["name"]: r for r in index.regions.values()}
        assert regions["TRACE BUFFER FLUSH"]["role"] == rw.ROLE_ARTIFICIAL


async def test_a_flush_is_drawn_and_explained(api, runs):
    _, exps = runs
    path = str(exps["flush"])
    code, tl = await api("timeline", path=path, width=20000)
    assert code == 200
    flush = [int(k) for k, r in tl["regions"].items() if r["name"] == "TRACE BUFFER FLUSH"]
    assert flush
    row = next(r for r in tl["locations"][0]["rows"] if r["depth"] == 1)
    spans = [(s, e) for s, e, r in zip(row["start"], row["end"], row["region"]) if r in flush]
    assert spans
    # nothing at the flush's depth overlaps it: later calls start once it ended
    starts, ends = row["start"], row["end"]
    assert all(e <= s2 for e, s2 in zip(ends, starts[1:]))
    code, summary = await api("summary", path=path)
    words = [v["text"] for v in summary["verdicts"] if v["kind"] == "scorep"]
    assert words and "SCOREP_TOTAL_MEMORY=2M" in words[0]


async def test_scorep_rusage_metrics_come_scaled_beside_the_kernels_samples(api, runs):
    _, exps = runs
    code, body = await api("metrics", path=str(exps["rusage"]), width=50)
    assert code == 200
    series = {s["key"]: s for s in body["series"]}
    assert "cpu.total" in series  # sampled by the kernel (metrics.json)
    rss, utime = series["ru_maxrss"], series["ru_utime"]
    assert rss["unit"] == "Bytes" and utime["unit"] == "s"
    peak = max(v for v in rss["max"] if v is not None)
    assert 10 * 2**20 < peak < 2**40  # KiB as recorded, bytes once scaled (2**10)
    used = max(v for v in utime["max"] if v is not None)
    assert 0 < used < 3600  # µs as recorded, seconds once scaled (10**-6)


def test_scorep_files_are_what_this_test_assumes(runs):
    """The facts above, read with Score-P's own tools: a failure here means Score-P
    changed, not the server."""
    _, exps = runs
    header = otf2_print_header(exps["threads"])
    assert 'Name: "Orphan thread 1"' in header and 'Name: "Master thread"' in header
    assert "Date: UNDEFINED" in header
    counts = collections.Counter(re.findall(r'REGION\s+\d+\s+Name: "([^"]+)"', header))
    assert counts["MEASUREMENT OFF"] == 1 and counts["TRACE BUFFER FLUSH"] == 1
    cells = [name for name in counts if re.fullmatch(r"cell \[\d+\]", name)]
    assert len(cells) == 1 and not [name for name in counts if name.startswith(":")]
    assert re.search(
        rf'^GROUP .*Name: "cell" .*Type: REGIONS, .*"{re.escape(cells[0])}"', header, re.M
    )
