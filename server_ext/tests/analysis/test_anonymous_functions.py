"""Two list comprehensions of one cell are two functions (issue 21): the real command and
kernel (builtin tracer) run a cell with two, twice; GET summary, GET calltree and GET
compare tell them apart by their place (`__main__:<listcomp> cell [n]:line`) instead of
merging them into one `__main__:<listcomp>` row, and the two runs match each one with
itself although the cell's execution count changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from headless_helpers import notebook, run, summary

pytestmark = pytest.mark.timeout(300)

CELL = """\
def squares(n):
    return [i * i for i in range(n)]

def cubes(n):
    return [i * i * i for i in range(n)]

a = squares({n})
b = cubes(2 * {n})
"""
BUILTIN = {"scorep": {"profile": True, "backend": "builtin"}}


def run_once(root: Path, name: str, cells: list[str]) -> list[dict]:
    notebook(root / "lc.ipynb", [(f"c{i}", src, BUILTIN) for i, src in enumerate(cells)])
    out = run(
        ["run", "lc.ipynb", "--experiment-dir", "scorep-experiments", "--summary",
         f"{name}.json", "-o", f"{name}.ipynb"],
        cwd=root,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout
    return summary(root / f"{name}.json")["cells"]


def listcomp_paths(node, up=()):
    """(caller, shown name) of every `<listcomp>` node in a GET calltree answer."""
    found = []
    if "<listcomp>" in node["name"]:
        found.append((up[-1] if up else None, node["name"], node["line"]))
    for child in node["children"]:
        found += listcomp_paths(child, (*up, node["name"]))
    return found


async def test_two_list_comprehensions_stay_two_functions(api, jp_root_dir):
    root = Path(jp_root_dir)
    # the first run: a cell before it, so the comprehension's cell is [2] there and [1] next
    [_, first] = run_once(root, "first", ["x = 1", CELL.format(n=20_000)])
    [second] = run_once(root, "second", [CELL.format(n=20_000)])
    path_a = str(root / first["experiment"]["path"])
    path_b = str(root / second["experiment"]["path"])

    code, summ = await api("summary", path=path_b)
    assert code == 200, summ
    rows = {f["name"]: f for f in summ["functions"]}
    count = second["execution_count"]
    squares, cubes = (f"__main__:<listcomp> cell [{count}]:{line}" for line in (2, 5))
    assert {squares, cubes} <= rows.keys(), sorted(rows)
    assert "__main__:<listcomp>" not in rows
    assert rows[squares]["region"] == rows[cubes]["region"] == "__main__:<listcomp>"
    assert rows[squares]["visits"] == rows[cubes]["visits"] == 1
    # cubes' comprehension does twice the work: told apart, the larger is the second
    assert rows[cubes]["excl_s"] > rows[squares]["excl_s"]
    named = {r["name"] for r in summ["top_regions"]}
    assert squares in named and cubes in named

    code, tree = await api("calltree", path=path_b)
    assert code == 200
    paths = sorted(listcomp_paths(tree["root"]))
    assert paths == [
        ("__main__:cubes", "__main__:<listcomp>", 5),
        ("__main__:squares", "__main__:<listcomp>", 2),
    ], paths

    # across runs: the same comprehension (by its cell's place and its line), not by name
    code, cmp = await api("compare", a=path_a, b=path_b)
    assert code == 200, cmp
    by_name = {f["name"]: f for f in cmp["functions"]}
    for name in (squares, cubes):
        assert by_name[name]["status"] == "both", by_name[name]
    assert not any(n.startswith("__main__:<listcomp> cell [2]") for n in by_name), sorted(by_name)
