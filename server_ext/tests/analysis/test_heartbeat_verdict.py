"""The heartbeat cell of issue 21 through the REST API: a cell whose two `heartbeat`
threads only sleep (`while not stop: time.sleep(0.01)`) while `score()` works (so the
heartbeat's own time, summed over its threads, grows twice as much as the cell), run twice by the
real command and kernel (builtin tracer), `score` given three times the work the second
time. The verdict names `score`, never the thread that only waited longer; the Summary
ranks `score` above `heartbeat` and says that `heartbeat` waited; and the cell's time is
one number wherever it is shown: the manifest (the header, Runs), GET summary, GET
compare, the display bundle (the header), `jupyter scorep run`'s summary, and the cell's
region in the call tree."""

from __future__ import annotations

import json

import nbformat
import pytest
from headless_helpers import notebook, run, summary

pytestmark = pytest.mark.timeout(300)

CELL = """\
import threading, time

def score(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def heartbeat(stop):
    while not stop.is_set():
        time.sleep(0.01)

stop = threading.Event()
beats = [threading.Thread(target=heartbeat, args=(stop,), name=f"heartbeat {{i}}")
         for i in range(2)]
for b in beats:
    b.start()
score({n})
stop.set()
for b in beats:
    b.join()
"""
N = 300_000
BUILTIN = {"scorep": {"profile": True, "backend": "builtin"}}


def run_version(root, name, n):
    notebook(root / "hb.ipynb", [("beat", CELL.format(n=n), BUILTIN)])
    out = run(
        ["run", "hb.ipynb", "--experiment-dir", "scorep-experiments", "--summary",
         f"{name}.json", "-o", f"{name}.ipynb"],
        cwd=root,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout
    data = summary(root / f"{name}.json")
    [cell] = data["cells"]
    return cell, nbformat.read(root / f"{name}.ipynb", as_version=4)


def bundle_of(nb):
    for out in nb.cells[0].outputs:
        data = out.get("data") or {}
        if "application/vnd.scorep.experiment+json" in data:
            return data["application/vnd.scorep.experiment+json"]
    raise AssertionError("no experiment bundle in the executed notebook")


def cell_region_incl(node):
    if node["name"].startswith("cell ["):
        return node["incl_s"]
    for child in node["children"]:
        found = cell_region_incl(child)
        if found is not None:
            return found
    return None


async def test_heartbeat_cell_verdict_names_score_and_the_times_agree(api, jp_root_dir):
    from pathlib import Path

    root = Path(jp_root_dir)
    cell_a, _nb_a = run_version(root, "first", N)
    cell_b, nb_b = run_version(root, "second", 3 * N)
    path_a = str(root / cell_a["experiment"]["path"])
    path_b = str(root / cell_b["experiment"]["path"])

    code, cmp = await api("compare", a=path_a, b=path_b)
    assert code == 200, cmp
    v = cmp["verdict"]
    assert v["kind"] == "slower", v
    assert v["function"] == "__main__:score", v
    assert "`score`" in v["sentence"] and "heartbeat" not in v["sentence"]
    # score is CPU-bound, and both runs measured the machine's speed (cell_time.ref_cpu_s)
    assert v["basis"] == "running_normalised", v
    assert v["speed"] is not None and v["speed"] > 0, v
    rows = {f["name"]: f for f in cmp["functions"]}
    beat, score = rows["__main__:heartbeat"], rows["__main__:score"]
    # heartbeat's own time grew with the cell, but it waited: it ran a small part of it
    assert beat["excl_delta"] > 0 and beat["wait_b"] > beat["cpu_b"]
    assert score["effective_delta"] > beat["effective_delta"]

    code, summ = await api("summary", path=path_b)
    assert code == 200
    names = [f["name"] for f in summ["functions"]]
    assert names.index("__main__:score") < names.index("__main__:heartbeat")
    hb = summ["functions"][names.index("__main__:heartbeat")]
    assert hb["wait_s"] > hb["cpu_s"]
    assert summ["top_regions"][0]["name"] != "__main__:heartbeat"

    # one time of the cell, wherever it is shown
    code, exp = await api("experiment", path=path_b)
    assert code == 200
    manifest = exp["manifest"]
    code, tree = await api("calltree", path=path_b)
    assert code == 200
    region = cell_region_incl(tree["root"])
    times = {
        "manifest (header, Runs)": manifest["wall_s"],
        "GET summary": summ["wall_s"],
        "GET compare": cmp["total"]["b_s"],
        "GET compare's run facts": cmp["b"]["wall_s"],
        "the display bundle (header)": bundle_of(nb_b)["summary"]["wall_s"],
        "jupyter scorep run": cell_b["experiment"]["wall_s"],
        "the cell's region": region,
    }
    assert all(t is not None for t in times.values()), times
    spread = max(times.values()) - min(times.values())
    assert spread < 2e-6, json.dumps(times, indent=1)
    # the measurement's own cost is stated beside it, never mixed in
    assert manifest["run_s"] >= manifest["wall_s"]
    ct = manifest["cell_time"]
    assert abs(ct["cpu_s"] + ct["queue_s"] + ct["wait_s"] - ct["time_s"]) < 1e-6
    assert ct["time_s"] == manifest["wall_s"]
