"""A cell's runs over time through the server: GET experiments?notebook=&cell=, GET
compare?a=&b= on recordings built by hand with known differences (exact Δ values), and
DELETE experiment with its refusals."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest
from experiment_factory import EPOCH_BASE, thread_from_calls, write_experiment

from jupyterlab_scorep.analysis import history
from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf
from scorep_kernel.formats.recording import ROLE_CELL, ROLE_FUNCTION, Region

pytestmark = pytest.mark.timeout(120)

NOTEBOOK = "work/analysis.ipynb"
SOURCE_A = "work(3)"
SOURCE_B = "work(5)"


def regions(cell_name: str, root: str | None = None) -> list[Region]:
    out = [
        Region(cell_name, "cell", "<cell>", 1, ROLE_CELL),
        Region("__main__:work", "__main__", "<cell>", 2, ROLE_FUNCTION),
        Region("__main__:step", "__main__", "<cell>", 5, ROLE_FUNCTION),
    ]
    if root:
        out.append(Region(root, "", "", 0, "artificial"))
    return out


CELL, WORK, STEP, ROOT = 0, 1, 2, 3


def builtin_run(steps: int, step_ms: int = 100) -> list:
    """The builtin's shape: cell (0 .. 100 + steps * step_ms + 100 ms) -> work -> step xN."""
    calls = [(STEP, 100 + k * step_ms, 100 + (k + 1) * step_ms) for k in range(steps)]
    end = 100 + steps * step_ms
    return [
        thread_from_calls("Master thread", 0, [(CELL, 0, end + 100, [(WORK, 50, end + 50, calls)])])
    ]


def scorep_run(steps: int, step_ms: int = 100, startup_ms: int = 600) -> list:
    """Score-P's shape: the program region (interpreter start-up first) around the cell."""
    s = startup_ms
    calls = [(STEP, s + 100 + k * step_ms, s + 100 + (k + 1) * step_ms) for k in range(steps)]
    end = s + 100 + steps * step_ms
    return [
        thread_from_calls(
            "Master thread",
            0,
            [(ROOT, 0, end + 200, [(CELL, s, end + 100, [(WORK, s + 50, end + 50, calls)])])],
        )
    ]


def make_run(
    root: Path,
    name: str,
    *,
    count: int,
    source: str,
    threads,
    cell_name: str | None = None,
    root_region: str | None = None,
    start_s: int = 0,
    notebook: str | None = NOTEBOOK,
    cell_id: str = "c1",
    parent: str = "work/scorep-experiments",
    backend: str = "builtin",
    wall_s: float | None = None,
    **kw,
) -> Path:
    exp = write_experiment(
        root / parent / name,
        threads=threads,
        regions=regions(cell_name or f"cell [{count}]", root_region),
        metrics=None,
        **kw,
    )
    manifest = mf.read_manifest(exp)
    manifest.update(
        notebook=notebook,
        cells=[mf.cell_record(cell_id, count, source)],
        start_ns=EPOCH_BASE + start_s * 10**9,
        backend=backend,
        isolation="subprocess" if backend == "scorep" else "inprocess",
    )
    if wall_s is not None:
        manifest["wall_s"] = wall_s
    mf.write_manifest(exp, manifest)
    return exp


async def test_runs_of_a_cell_newest_first_with_disk_use(api, jp_root_dir):
    root = Path(jp_root_dir)
    r1 = make_run(root, "r1", count=1, source=SOURCE_A, threads=builtin_run(3), start_s=1)
    r2 = make_run(root, "r2", count=2, source=SOURCE_A, threads=builtin_run(3), start_s=2)
    r3 = make_run(root, "r3", count=3, source=SOURCE_B, threads=builtin_run(5), start_s=3)
    other_cell = make_run(
        root, "o1", count=4, source="x", threads=builtin_run(1), start_s=4, cell_id="c2"
    )
    make_run(root, "n1", count=1, source=SOURCE_A, threads=builtin_run(3), notebook="other.ipynb")
    code, body = await api("experiments", notebook=NOTEBOOK, cell="c1")
    assert code == 200
    assert [e["path"] for e in body["experiments"]] == [str(r3), str(r2), str(r1)]
    first = body["experiments"][2]
    assert first["manifest"]["cells"][0]["source_sha256"] == mf.source_hash(SOURCE_A)
    # what du counts (allocated blocks, the directory itself included)
    du = await asyncio.to_thread(
        subprocess.run, ["du", "-sB1", str(r1)], capture_output=True, text=True, check=True
    )
    assert first["disk_bytes"] == int(du.stdout.split()[0]) > 0
    notebook_bytes = sum(history.disk_bytes(p) for p in (r1, r2, r3, other_cell))
    assert body["disk"] == {"notebook_bytes": notebook_bytes, "notebook_runs": 4}
    # the whole notebook without a cell; a cell alone
    code, body = await api("experiments", notebook=NOTEBOOK)
    assert [e["manifest"]["id"] for e in body["experiments"]] == ["o1", "r3", "r2", "r1"]
    code, body = await api("experiments", cell="c2", dir="work")
    assert [e["manifest"]["id"] for e in body["experiments"]] == ["o1"]
    # without notebook and cell the answer is as before
    code, body = await api("experiments", dir="work")
    assert "disk" not in body and len(body["experiments"]) == 5


async def test_runs_found_in_the_given_folder_and_kernel_without_notebook(api, jp_root_dir):
    root = Path(jp_root_dir)
    elsewhere = make_run(
        root,
        "x1",
        count=1,
        source=SOURCE_A,
        threads=builtin_run(1),
        parent="results/mine",
        notebook=None,
    )
    code, body = await api("experiments", notebook=NOTEBOOK, cell="c1")
    assert body["experiments"] == []  # not where the notebook's runs are looked for
    code, body = await api("experiments", notebook=NOTEBOOK, cell="c1", dir="results/mine")
    assert [e["path"] for e in body["experiments"]] == [str(elsewhere)]
    assert body["disk"]["notebook_runs"] == 0  # its manifest names no notebook
    code, body = await api("experiments", notebook=NOTEBOOK, cell="c1", dir="../etc")
    assert code == 403


async def test_compare_known_difference_exact(api, jp_root_dir):
    """A: step x3 of 100 ms; B: step x5 of 100 ms. Exactly +200 ms of step, visits 3 -> 5,
    and the cell's 500 -> 700 ms total: 40 % slower."""
    root = Path(jp_root_dir)
    a = make_run(root, "a", count=1, source=SOURCE_A, threads=builtin_run(3), start_s=1)
    b = make_run(root, "b", count=2, source=SOURCE_B, threads=builtin_run(5), start_s=2)
    code, body = await api("compare", a=str(a), b=str(b))
    assert code == 200, body
    assert body["a"]["path"] == str(a) and body["b"]["id"] == "b"
    assert body["a"]["source"] == body["b"]["source"] == "trace"
    assert body["same_source"] is False
    assert body["total"]["a_s"] == pytest.approx(0.5, abs=1e-9)
    assert body["total"]["b_s"] == pytest.approx(0.7, abs=1e-9)
    assert body["total"]["delta_pct"] == pytest.approx(40.0)
    rows = {f["name"]: f for f in body["functions"]}
    step = rows["__main__:step"]
    assert (step["visits_a"], step["visits_b"], step["visits_delta"]) == (3, 5, 2)
    assert step["excl_a"] == pytest.approx(0.3, abs=1e-9)
    assert step["excl_b"] == pytest.approx(0.5, abs=1e-9)
    assert step["excl_delta"] == pytest.approx(0.2, abs=1e-9)
    assert step["excl_pct"] == pytest.approx(200 / 3)
    assert body["functions"][0]["name"] == "__main__:step"  # the largest |Δ| first
    work = rows["__main__:work"]
    assert work["excl_delta"] == pytest.approx(0.0, abs=1e-9)
    assert work["incl_delta"] == pytest.approx(0.2, abs=1e-9)
    assert rows["cell [2]"]["key"] == "cell #1"
    v = body["verdict"]
    assert v["kind"] == "slower"
    assert v["sentence"] == "40 % slower than the previous run: `step` +200 ms, visits 3 → 5."
    assert v["noise"]["runs"] == 0  # no repeated runs of A's source: the default
    (cell,) = body["tree"]
    assert cell["name"] == "cell [2]" and cell["status"] == "both"
    (work_node,) = cell["children"]
    (step_node,) = work_node["children"]
    assert (step_node["visits_a"], step_node["visits_b"]) == (3, 5)
    assert step_node["incl_b"] - step_node["incl_a"] == pytest.approx(0.2, abs=1e-9)
    # the cells start at 0 in both traces
    assert body["a"]["cell_span"] == [0, 500_000_000]
    assert body["b"]["cell_span"] == [0, 700_000_000]
    # the mirror image
    code, back = await api("compare", a=str(b), b=str(a))
    assert back["verdict"]["kind"] == "faster"
    assert back["verdict"]["sentence"] == (
        "29 % faster than the previous run: `step` -200 ms, visits 5 → 3."
    )


async def test_compare_across_backends_aligns_the_cells(api, jp_root_dir):
    """The same cell under the builtin tracer and under Score-P (program region with
    600 ms of start-up first, the cell named ':cell [n]'): the functions match, nothing
    changed but the start-up, which is reported apart; the cells start 600 ms apart."""
    root = Path(jp_root_dir)
    a = make_run(root, "a", count=1, source=SOURCE_A, threads=builtin_run(3), start_s=1)
    b = make_run(
        root,
        "b",
        count=2,
        source=SOURCE_A,
        threads=scorep_run(3),
        cell_name=":cell [2]",
        root_region="python3.11",
        start_s=2,
        backend="scorep",
    )
    code, body = await api("compare", a=str(a), b=str(b))
    assert code == 200, body
    assert body["same_source"] is True
    assert body["b"]["backend"] == "scorep" and body["b"]["isolation"] == "subprocess"
    assert {f["name"]: f["status"] for f in body["functions"]} == {
        "cell [2]": "both",
        "__main__:work": "both",
        "__main__:step": "both",
    }
    assert all(f["excl_delta"] == pytest.approx(0.0, abs=1e-9) for f in body["functions"])
    assert body["total"]["delta_s"] == pytest.approx(0.0, abs=1e-9)
    assert body["outside"]["a_s"] == 0.0
    assert body["outside"]["b_s"] == pytest.approx(0.7, abs=1e-9)  # 600 before, 100 after
    assert body["verdict"]["kind"] == "within_noise"
    assert body["a"]["cell_span"] == [0, 500_000_000]
    assert body["b"]["cell_span"] == [600_000_000, 1_100_000_000]


async def test_compare_from_profiles_when_one_run_has_no_trace(api, jp_root_dir):
    root = Path(jp_root_dir)
    a = make_run(root, "a", count=1, source=SOURCE_A, threads=builtin_run(3), otf2=False)
    b = make_run(root, "b", count=2, source=SOURCE_B, threads=builtin_run(4))
    code, body = await api("compare", a=str(a), b=str(b))
    assert code == 200, body
    assert body["a"]["source"] == body["b"]["source"] == "cubex"
    assert body["a"]["cell_span"] is None and body["a"]["range"] is None
    assert body["b"]["cell_span"] == [0, 600_000_000]
    step = next(f for f in body["functions"] if f["name"] == "__main__:step")
    assert (step["visits_a"], step["visits_b"]) == (3, 4)
    assert step["excl_delta"] == pytest.approx(0.1, abs=1e-9)


async def test_compare_noise_measured_from_repeated_runs(api, jp_root_dir):
    """Five earlier runs of A's source with walls 1.0 +- 0.01 s: sigma 1.5 %, so the
    threshold is 2.77 sigma = 4.1 %."""
    root = Path(jp_root_dir)
    for k, wall in enumerate([1.0, 1.01, 0.99, 1.0, 1.02]):
        make_run(root, f"r{k}", count=k + 1, source=SOURCE_A, threads=builtin_run(3), wall_s=wall)
    make_run(root, "s", count=9, source=SOURCE_A, threads=builtin_run(3), status="error")
    a = root / "work/scorep-experiments/r4"
    b = make_run(root, "b", count=7, source=SOURCE_B, threads=builtin_run(5), start_s=9)
    code, body = await api("compare", a=str(a), b=str(b))
    noise = body["verdict"]["noise"]
    assert noise["runs"] == 5  # the run that ended in an error is not counted
    assert noise["rel"] == pytest.approx(1.96 * 2**0.5 * 1.4826 * 0.01)
    assert "5 runs" in noise["basis"]


async def test_compare_refusals(api, jp_root_dir, tmp_path):
    root = Path(jp_root_dir)
    a = make_run(root, "a", count=1, source=SOURCE_A, threads=builtin_run(1))
    pending = make_run(
        root, "p", count=2, source=SOURCE_A, threads=builtin_run(1), files_status="pending"
    )
    code, body = await api("compare", a=str(a))
    assert code == 400 and "a=" in body["message"]
    code, body = await api("compare", a=str(a), b=str(pending))
    assert code == 409
    outside = write_experiment(tmp_path / "outside" / "x")
    code, body = await api("compare", a=str(a), b=str(outside))
    assert code == 403
    code, body = await api("compare", a=str(a), b="work/scorep-experiments/../../x")
    assert code == 403
    code, body = await api("compare", a=str(a), b="work/scorep-experiments/nothing")
    assert code == 404


async def test_delete_an_experiment_when_asked_by_path_and_id(api, jp_root_dir):
    root = Path(jp_root_dir)
    keep = make_run(root, "keep", count=1, source=SOURCE_A, threads=builtin_run(1))
    gone = make_run(root, "gone", count=2, source=SOURCE_A, threads=builtin_run(1))
    # its index exists (built by a request): deleted with it
    assert (await api("experiment", path=str(gone)))[0] == 200
    assert (gone / ex.INDEX_DIR).is_dir()
    size = history.disk_bytes(gone)
    code, body = await api("experiment", method="DELETE", path=str(gone), id="gone")
    assert code == 200, body
    assert body == {"deleted": str(gone), "id": "gone", "freed_bytes": size}
    assert not gone.exists() and keep.exists()
    code, body = await api("experiments", notebook=NOTEBOOK, cell="c1")
    assert [e["manifest"]["id"] for e in body["experiments"]] == ["keep"]
    code, _ = await api("experiment", method="DELETE", path=str(gone), id="gone")
    assert code == 404


async def test_delete_refusals_leave_everything_in_place(api, jp_root_dir, tmp_path):
    root = Path(jp_root_dir)
    exp = make_run(root, "e", count=1, source=SOURCE_A, threads=builtin_run(1))
    running = make_run(
        root, "run", count=2, source=SOURCE_A, threads=builtin_run(1), status="running"
    )
    code, body = await api("experiment", method="DELETE", path=str(exp))
    assert code == 400 and "id" in body["message"]
    code, body = await api("experiment", method="DELETE", path=str(exp), id="other")
    assert code == 409 and "'e'" in body["message"]
    code, body = await api("experiment", method="DELETE", path=str(running), id="run")
    assert code == 409
    # a folder with the user's own files beside a manifest (SCOREP_EXPERIMENT_DIRECTORY
    # pointed at a project) is never deleted
    (exp / "analysis.py").write_text("print(1)\n")
    code, body = await api("experiment", method="DELETE", path=str(exp), id="e")
    assert code == 409 and "analysis.py" in body["message"]
    (exp / "analysis.py").unlink()
    # not an experiment, outside the roots, climbing out, the root itself
    plain = root / "work" / "plain"
    plain.mkdir(parents=True)
    code, _ = await api("experiment", method="DELETE", path=str(plain), id="plain")
    assert code == 404
    outside = write_experiment(tmp_path / "outside" / "x")
    code, _ = await api("experiment", method="DELETE", path=str(outside), id="x")
    assert code == 403
    code, _ = await api(
        "experiment", method="DELETE", path="work/../work/scorep-experiments/e", id="e"
    )
    assert code == 403
    mf.write_manifest(root, {**mf.read_manifest(exp), "id": "rootexp"})
    code, body = await api("experiment", method="DELETE", path=".", id="rootexp")
    assert code == 403
    os.unlink(root / ex.MANIFEST)
    # a symlink to an experiment outside the roots
    link = root / "work" / "link"
    link.symlink_to(outside)
    code, _ = await api("experiment", method="DELETE", path=str(link), id="x")
    assert code == 403
    assert exp.is_dir() and running.is_dir() and outside.is_dir() and plain.is_dir()
    assert (exp / ex.MANIFEST).is_file() and (outside / ex.MANIFEST).is_file()


async def test_summary_lists_every_function_and_the_time_outside_the_cell(api, jp_root_dir):
    root = Path(jp_root_dir)
    a = make_run(root, "a", count=1, source=SOURCE_A, threads=builtin_run(3))
    code, body = await api("summary", path=str(a))
    assert code == 200
    got = [
        (f["name"], f["module"], f["excl_s"], f["incl_s"], f["visits"]) for f in body["functions"]
    ]
    assert got == [
        ("__main__:step", "__main__", pytest.approx(0.3), pytest.approx(0.3), 3),
        ("__main__:work", "__main__", pytest.approx(0.1), pytest.approx(0.4), 1),
        ("cell [1]", "cell", pytest.approx(0.1), pytest.approx(0.5), 1),
    ]
    assert body["functions_total"] == 3 and body["outside_s"] == 0.0
    b = make_run(
        root,
        "b",
        count=2,
        source=SOURCE_A,
        threads=scorep_run(3),
        cell_name=":cell [2]",
        root_region="python3.11",
        backend="scorep",
    )
    code, body = await api("summary", path=str(b))
    assert [f["name"] for f in body["functions"]] == ["__main__:step", "__main__:work", "cell [2]"]
    assert body["outside_s"] == pytest.approx(0.7)
