"""Score-P's own tools on a run through the server: scorep-score's estimate of the run
(GET score), the filter it suggests written beside the experiments (POST filter), and a
cell run with that filter no longer recording its regions. Skipped, with the kernel's
reason, where Score-P is not installed (CI has it)."""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path

import pytest
from scorep_cells import (
    HEURISTICS,
    SCOREP,
    TINY,
    TINY2,
    run_cell,
    scorep_tool,
    visits_by_path,
)

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(not SCOREP["available"], reason=SCOREP["message"]),
]


async def test_scorep_score_estimates_the_run_and_suggests_a_filter(api, runs):
    """scorep-score on the run that flushed: Score-P's estimate says it needed more than
    the 2M it had, and its filter takes out the tiny function called 60,000 times."""
    _, exps = runs
    code, body = await api("score", path=str(exps["flush"]))
    assert code == 200, body
    assert body["tool"] and body["tool"].endswith("scorep-score")
    assert body["configured"]["SCOREP_TOTAL_MEMORY"] == "2M"
    estimate = body["estimate"]
    assert estimate["total_memory_bytes"] > 2 * 2**20
    assert estimate["trace_bytes"] > 0 and "SCOREP_TOTAL_MEMORY=" in estimate["hint"]
    assert [t["type"] for t in body["types"]][:2] == ["ALL", "USR"]
    rows = {r["name"]: r for r in body["regions"]}
    assert rows["__main__:h"]["visits"] == 60000 and rows["__main__:h"]["type"] == "USR"
    suggestion = body["filter"]
    assert "__main__:h" in [r["name"] for r in suggestion["regions"]]
    assert "MANGLED __main__:h" in suggestion["text"]
    assert suggestion["estimate"]["trace_bytes"] < estimate["trace_bytes"]
    assert body["heuristics"] == suggestion["heuristics"] == HEURISTICS
    assert body["applied"] is None
    code, version = await api("version")
    assert version["scorep"]["scorep_score"] == body["tool"]


async def test_the_applied_filter_leaves_its_regions_out_of_the_next_run(api, kernel, runs):
    """POST filter writes Score-P's suggestion beside the experiments; a cell run with it
    as its filter_file (what the panel's button writes) no longer records those regions.
    Applied again on that run, the new file keeps the old rules and adds the new ones."""
    root, _ = runs
    first = run_cell(kernel, TINY)
    code, applied = await api("filter", method="POST", path=str(first))
    assert code == 200, applied
    written = Path(applied["path"])
    assert written.parent == root / "scorep-filters"  # survives deleting the experiment
    assert written.name == f"{mf.read_manifest(first)['id']}.filter"
    assert "__main__:tiny" in applied["regions"] and applied["merged"] is None
    assert "MANGLED __main__:tiny" in await asyncio.to_thread(written.read_text)
    code, score = await api("score", path=str(first))
    assert score["applied"] == str(written)

    second = run_cell(kernel, TINY, {"scorep": {"profile": True, "filter_file": str(written)}})
    config = mf.read_manifest(second)["measurement"]["scorep_config"]
    assert config["SCOREP_FILTERING_FILE"] == str(written)
    code, tree = await api("calltree", path=str(second))
    names = {path[-1] for path in visits_by_path(tree["root"])}
    assert "__main__:slow" in names and "__main__:tiny" not in names

    third = run_cell(kernel, TINY2, {"scorep": {"profile": True, "filter_file": str(written)}})
    code, again = await api("filter", method="POST", path=str(third))
    assert code == 200, again
    assert again["merged"] == str(written) and "__main__:tiny2" in again["regions"]
    text = await asyncio.to_thread(Path(again["path"]).read_text)
    assert "MANGLED __main__:tiny\n" in text and "MANGLED __main__:tiny2" in text
    # Score-P reads it: both are filtered in its view of the third run
    shown = await asyncio.to_thread(
        subprocess.run,
        [scorep_tool("scorep-score"), "-r", "-f", again["path"], str(third / ex.CUBEX)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    shown = shown.stdout
    assert re.search(r"^\s*\+\s+USR.*__main__:tiny2$", shown, re.M)


async def test_nothing_to_filter_is_said_so(api, runs):
    _, exps = runs
    code, body = await api("score", path=str(exps["builtin"]))
    assert code == 200  # the builtin's profile.cubex reads in scorep-score too
    # a few calls of a function that sums 20,000 numbers: each worth measuring
    code, body = await api("score", path=str(exps["rusage"]))
    assert code == 200 and body["filter"] is None
    code, body = await api("filter", method="POST", path=str(exps["rusage"]))
    assert code == 404 and "nothing to filter" in body["message"]
    assert "under 20 us per visit" in body["message"]
