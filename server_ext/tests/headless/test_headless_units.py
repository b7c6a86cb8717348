"""The headless pieces that need no kernel: which cells are profiled and the metadata sent
for each, the request the client builds, the command's usage errors, and the summary's
schema against its documentation."""

from __future__ import annotations

import re

import nbformat
import pytest
from headless_helpers import REPO, notebook
from jupyter_client.session import Session

from jupyterlab_scorep.headless import app
from jupyterlab_scorep.headless import cells as cs
from jupyterlab_scorep.headless import run_summary as hs
from jupyterlab_scorep.headless.notebook_client import _execute_with_metadata
from scorep_kernel.cell_metadata import parse_cell_metadata
from scorep_kernel.frontend_metadata import sends_cell_metadata


@pytest.fixture
def nb(tmp_path):
    path = notebook(
        tmp_path / "n.ipynb",
        [
            ("a", "1", None),
            ("md", "text", None),
            ("b", "2", {"scorep": {"profile": True, "backend": "builtin"}, "tags": ["t"]}),
            ("c", "3", {"scorep": {"profile": True, "lab_settings": {"isolation": "inprocess"}}}),
            ("d", "4", None),
        ],
    )
    return nbformat.read(path, as_version=4)


def test_code_cells_are_numbered_without_markdown(nb):
    code = cs.code_cells(nb)
    assert [(c.number, c.index, c.cell.id) for c in code] == [
        (1, 0, "a"),
        (2, 2, "b"),
        (3, 3, "c"),
        (4, 4, "d"),
    ]


def test_selection_numbers_ranges_and_ids(nb):
    code = cs.code_cells(nb)
    assert cs.parse_selection("1,3-4", code) == {1, 3, 4}
    assert cs.parse_selection(" b , 4 ", code) == {2, 4}
    for bad, words in [
        ("5", "has 4 code cells"),
        ("0", "has 4 code cells"),
        ("3-1", "runs backwards"),
        ("md", "neither a code-cell number"),
        (",", "names no cell"),
    ]:
        with pytest.raises(cs.SelectionError, match=words):
            cs.parse_selection(bad, code)


def sent(nb, profiling):
    return {c.cell.id: cs.request_metadata(c, profiling) for c in cs.code_cells(nb)}


def test_toggled_cells_send_their_metadata_and_cell_id(nb):
    meta = sent(nb, cs.Profiling())
    # JupyterLab's own keys come too: the kernel sees metadata came, also for a cell with none
    assert meta["a"] == {"deletedCells": [], "recordTiming": False, "cellId": "a"}
    assert sends_cell_metadata(meta["a"])
    assert meta["b"] == {
        "deletedCells": [],
        "recordTiming": False,
        "scorep": {"profile": True, "backend": "builtin"},
        "tags": ["t"],
        "cellId": "b",
    }
    # the saved lab_settings apply when the command line sets none
    assert meta["c"]["scorep"]["lab_settings"] == {"isolation": "inprocess"}
    assert [k for k, m in meta.items() if parse_cell_metadata(m).profile] == ["b", "c"]


def test_all_and_cells_choose_for_this_run_only(nb):
    before = nbformat.writes(nb)
    every = sent(nb, cs.Profiling("all", frozenset({1, 2, 3, 4})))
    assert all(parse_cell_metadata(m).profile for m in every.values())
    chosen = sent(nb, cs.Profiling("cells", frozenset({1, 3})))
    assert {k: parse_cell_metadata(m).profile for k, m in chosen.items()} == {
        "a": True,
        "b": False,  # toggled, not chosen
        "c": True,
        "d": False,  # exactly the chosen ones, whatever %scorep profile says
    }
    assert nbformat.writes(nb) == before  # the notebook itself is not changed


def test_options_act_as_jupyterlab_settings_under_the_cells_own_keys(nb, tmp_path):
    lab = cs.lab_settings_from_options("scorep", "subprocess", str(tmp_path))
    assert lab == {"backend": "scorep", "isolation": "subprocess", "experiment_dir": str(tmp_path)}
    assert cs.lab_settings_from_options("auto", "auto", None) is None  # "auto" is no choice
    meta = sent(nb, cs.Profiling(lab_settings=lab))
    b = parse_cell_metadata(meta["b"]).settings
    assert b["backend"] == "builtin"  # the cell's own key wins
    assert b["isolation"] == "subprocess" and b["experiment_dir"] == str(tmp_path)
    c = parse_cell_metadata(meta["c"]).settings
    assert c["backend"] == "scorep" and c["isolation"] == "subprocess"  # replaced the saved


def test_malformed_metadata_goes_to_the_kernel_unchanged(nb):
    nb.cells[0].metadata["scorep"] = "yes"
    code = cs.code_cells(nb)[0]
    assert cs.request_metadata(code, cs.Profiling("all", frozenset({1}))) == {
        "deletedCells": [],
        "recordTiming": False,
        "scorep": "yes",
        "cellId": "a",
    }


class FakeChannel:
    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)


class FakeClient:
    allow_stdin = False

    def __init__(self):
        self.session = Session()
        self.shell_channel = FakeChannel()


def test_the_execute_request_carries_the_metadata():
    kc = FakeClient()
    meta = {"scorep": {"profile": True}, "cellId": "x1"}
    msg_id = _execute_with_metadata(kc, lambda: meta, "a = 1", stop_on_error=False)
    [msg] = kc.shell_channel.sent
    assert msg["header"]["msg_id"] == msg_id
    assert msg["header"]["msg_type"] == "execute_request"
    assert msg["metadata"] == meta
    assert msg["content"]["code"] == "a = 1" and msg["content"]["stop_on_error"] is False


def test_usage_errors_exit_2_and_name_the_fix(tmp_path, capsys):
    def run(*argv):
        code = app.main(["run", *argv])
        return code, capsys.readouterr().err

    code, err = run(str(tmp_path / "missing.ipynb"))
    assert code == 2 and "no such notebook" in err
    path = notebook(tmp_path / "n.ipynb", [("a", "1", None)])
    code, err = run(str(path), "--cells", "7")
    assert code == 2 and "has 1 code cells" in err
    code, err = run(str(path), "--fail-if-slower", "20%")
    assert code == 2 and "--fail-if-slower needs --baseline" in err
    code, err = run(str(path), "--allow-missing-baseline")
    assert code == 2 and "--allow-missing-baseline needs --baseline" in err
    (tmp_path / "not-summary.json").write_text("{}")
    code, err = run(str(path), "--baseline", str(tmp_path / "not-summary.json"))
    assert code == 2 and "is not a scorep-summary.json" in err
    with pytest.raises(SystemExit) as e:
        app.main(["run", str(path), "--fail-if-slower", "much"])
    assert e.value.code == 2 and "is not a percentage" in capsys.readouterr().err


def _properties(schema, out):
    for name, sub in (schema.get("properties") or {}).items():
        out.add(name)
        _properties(sub, out)
    for key in ("items",):
        if isinstance(schema.get(key), dict):
            _properties(schema[key], out)
    for sub in schema.get("oneOf", []):
        _properties(sub, out)
    return out


def test_every_summary_field_and_status_is_documented():
    doc = (REPO / "docs" / "HEADLESS.md").read_text()
    documented = set(re.findall(r"`([a-z_0-9]+)`", doc))
    fields = _properties(hs.SCHEMA, set())
    assert fields - documented == set()
    assert set(hs.CELL_STATUSES) - documented == set()
    assert set(hs.RUN_STATUSES) - documented == set()
    exits = {hs.EXIT_USAGE, hs.EXIT_REGRESSION, hs.EXIT_NO_BASELINE}
    for code in set(hs.EXIT_CODES.values()) | exits:
        assert f"| {code} " in doc, code


def test_the_table_lists_a_multi_cell_run_once():
    exp = {
        "id": "x",
        "path": "x",
        "backend": "builtin",
        "isolation": "inprocess",
        "status": "error",
        "files_status": "ready",
        "wall_s": 0.5,
        "run": "r1",
        "top_regions": [
            {"name": "__main__:f", "excl_s": 0.25, "incl_s": 0.3, "visits": 3, "pct": 50.0}
        ],
    }
    # the client saw 0.6 s; the cell's region took 0.5 s (the experiment's wall_s)
    cell = {"number": 1, "status": "ok", "wall_s": 0.6, "experiment": exp, "error": None}
    error = {"ename": "E", "evalue": "", "traceback": "", "expected": True}
    data = {
        "cells": [
            cell,
            {**cell, "number": 2, "status": "error", "error": error},
            {**cell, "number": 3, "experiment": None},
        ]
    }
    lines = hs.render_table(data).splitlines()
    assert lines[0].split() == [
        "cell",
        "status",
        "time",
        "measuring",
        "profiled",
        "top",
        "regions",
        "(exclusive",
        "time)",
    ]
    assert lines[1].split() == [
        "[1]",
        "ok",
        "500",
        "ms",
        "+100",
        "ms",
        "builtin/inprocess",
        "(error)",
        "run",
        "r1",
        "__main__:f",
        "250",
        "ms",
        "(50%)",
    ]
    assert "(the run above)" in lines[2] and "error (expected)" in lines[2]
    assert lines[3].split() == ["[3]", "ok", "600", "ms"]
    assert hs.render_markdown_table(data).splitlines()[1] == "|---|---|---|---|---|---|"
