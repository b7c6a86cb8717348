"""Frontends that send no cell metadata (VS Code, nbclient, jupyter_client): the kernel says
so once, in the first cell's output, ``%scorep`` says it too, and ``%scorep profile=all``
profiles the cells that follow. The kernel is the real one, sent requests as each frontend
sends them (test_kernel_harness.request_metadata)."""

from __future__ import annotations

import pytest
from test_kernel_harness import KernelHandle

from scorep_kernel.frontend_metadata import (
    NOTE,
    SENDS_METADATA,
    SENDS_NONE,
    UNKNOWN,
    FrontendWatch,
    profiles_by_default,
    sends_cell_metadata,
)
from scorep_kernel.settings import KernelSettings, SettingsError

pytestmark = pytest.mark.timeout(180)

BUILTIN = {"SCOREP_KERNEL_BACKEND": "builtin", "SCOREP_KERNEL_ISOLATION": "inprocess"}
FIRST_LINE = NOTE.splitlines()[0]


@pytest.fixture
def start(tmp_path):
    """Start Score-P kernels (builtin backend, in the kernel) that get ``frontend``'s
    requests; all are shut down after the test."""
    started: list[KernelHandle] = []

    def start(frontend: str, **env: str) -> KernelHandle:
        k = KernelHandle(tmp_path, env={**BUILTIN, **env}, frontend=frontend)
        started.append(k)
        return k

    yield start
    for k in started:
        k.shutdown()


def ran_ok(result) -> None:
    assert result.status == "ok", result.reply


def test_a_client_without_metadata_is_told_once_and_can_profile_every_cell(start):
    k = start("bare")
    first = k.run("print('first cell')")
    ran_ok(first)
    out = first.stdout()
    assert out.startswith(FIRST_LINE), out  # at the top of the cell, before its output
    assert out.endswith("first cell\n")
    for way in ("%%execute_with_scorep", "%scorep profile=all", "jupyter scorep run",
                "papermill --engine scorep", "--Exporter.preprocessors="):  # fmt: skip
        assert way in out, way
    assert not first.bundles(), "nothing asked for profiling"

    second = k.run("x = sum(range(10))\nprint('second cell')")
    ran_ok(second)
    assert second.stdout() == "second cell\n", "said once"
    assert not second.bundles()

    described = k.run("%scorep")
    ran_ok(described)
    text = described.stdout()
    assert "sends no cell metadata" in text and "%scorep profile=all" in text
    assert "profile        none" in text

    setting = k.run("%scorep profile=all")
    ran_ok(setting)
    assert "profile='all'" in setting.stdout()
    assert not setting.bundles(), "the cell that sets it is not profiled"

    profiled = k.run("y = [i * i for i in range(100)]\nprint(len(y))")
    ran_ok(profiled)
    assert profiled.stdout() == "100\n"
    bundle = profiled.bundle()
    assert bundle["backend"] == "builtin" and bundle["status"] == "ok"
    assert k.value("len(y) + x") == 145, "the profiled cell's names are the notebook's"
    assert "profile        all" in k.run("%scorep").stdout()

    empty = k.run("")
    ran_ok(empty)
    assert not empty.bundles(), "an empty request (user_expressions) is no cell"

    ran_ok(k.run("%scorep profile=none"))
    after = k.run("z = 1")
    ran_ok(after)
    assert not after.bundles()
    marked = k.run("%%execute_with_scorep\nz = 2")
    ran_ok(marked)
    assert len(marked.bundles()) == 1, "the magic marks a cell in any frontend"


def test_vscode_sends_the_cells_id_only_and_is_told(start):
    k = start("vscode")
    first = k.run("1 + 1")
    ran_ok(first)
    assert first.stdout().startswith(FIRST_LINE)
    assert first.of("execute_result")[0]["data"]["text/plain"] == "2"


def test_jupyterlab_is_not_told_and_a_cells_own_choice_wins_over_profile_all(start):
    k = start("jupyterlab")
    first = k.run("print('hello')")
    ran_ok(first)
    assert first.stdout() == "hello\n"
    assert "sends cell metadata" in k.run("%scorep").stdout()
    ran_ok(k.run("%scorep profile=all"))
    untoggled = k.run("a = 1")
    ran_ok(untoggled)
    assert len(untoggled.bundles()) == 1, "profile=all: a cell that does not say"
    kept_out = k.run("b = 2", {"scorep": {"profile": False}})
    ran_ok(kept_out)
    assert not kept_out.bundles(), "the cell's own choice comes first (precedence)"
    assert k.value("a + b") == 3


def test_a_choice_in_the_environment_profiles_from_the_first_cell_without_the_note(start):
    k = start("bare", SCOREP_KERNEL_PROFILE="all")
    first = k.run("q = 3\nprint(q)")
    ran_ok(first)
    assert first.stdout() == "3\n"
    assert len(first.bundles()) == 1


def test_a_first_cell_that_sets_profile_is_not_given_the_note(start):
    k = start("bare")
    setting = k.run("%scorep profile=none")
    ran_ok(setting)
    assert FIRST_LINE not in setting.stdout()
    nxt = k.run("print('next')")
    assert nxt.stdout() == "next\n", "the user chose: no note"


def test_the_note_is_not_repeated_by_scorep_in_the_same_cell(start):
    """The quickstart's first cell imports and ends with %scorep."""
    k = start("bare")
    first = k.run("import os\n%scorep")
    ran_ok(first)
    out = first.stdout()
    assert out.count("%scorep profile=all      profile every cell") == 1, out
    assert "see the note at the top of this cell" in out
    again = k.run("%scorep").stdout()
    assert "%scorep profile=all      profile every cell" in again  # said on request


# --- the rule, without a kernel ----------------------------------------------------------


def test_which_requests_carry_cell_metadata():
    assert not sends_cell_metadata(None)
    assert not sends_cell_metadata({})
    assert not sends_cell_metadata({"cellId": "vscode-notebook-cell:/a.ipynb#W1"})
    assert sends_cell_metadata({"cellId": "c1", "deletedCells": [], "recordTiming": False})
    assert sends_cell_metadata({"scorep": {"profile": True}})
    assert sends_cell_metadata({"tags": []})


def test_the_watch_decides_on_the_users_cells_and_metadata_is_sticky():
    w = FrontendWatch()
    w.observe({}, silent=True, store_history=False)  # a frontend's own request
    w.observe({}, silent=False, store_history=False)
    assert w.state == UNKNOWN
    w.observe({}, silent=False, store_history=True)
    assert w.state == SENDS_NONE
    assert w.note("%scorep", profile_chosen=False) is None, "waits for the next cell"
    w.observe({}, silent=True, store_history=False)
    assert w.note("x = 1", profile_chosen=False) is None, "never in a frontend's own request"
    w.observe({}, silent=False, store_history=True)
    assert w.note("x = 1", profile_chosen=True) is None, "the user chose"
    assert w.note("x = 1", profile_chosen=False) == NOTE
    assert w.note("x = 1", profile_chosen=False) is None, "once"
    w.observe({"recordTiming": False}, silent=False, store_history=True)
    assert w.state == SENDS_METADATA
    w.observe({}, silent=False, store_history=True)  # a console on the same kernel
    assert w.state == SENDS_METADATA


def test_what_profile_all_takes():
    assert profiles_by_default("x = 1", silent=False, store_history=True)
    assert not profiles_by_default("x = 1", silent=True, store_history=True)
    assert not profiles_by_default("x = 1", silent=False, store_history=False)
    assert not profiles_by_default("  \n", silent=False, store_history=True)
    assert not profiles_by_default("\n%scorep profile=none", silent=False, store_history=True)
    assert profiles_by_default("%timeit sum(range(9))", silent=False, store_history=True)


def test_profile_setting_choices_and_the_environment():
    s = KernelSettings.from_environ({})
    assert (s.profile, s.profile_chosen) == ("none", False)
    assert s.update_from_line("profile=ALL") == ["profile='ALL'"]
    assert (s.profile, s.profile_chosen) == ("all", True)
    with pytest.raises(SettingsError, match="is not a choice: use one of none, all"):
        s.update_from_line("profile=some")
    assert s.profile == "all", "a rejected line changes nothing"
    env = KernelSettings.from_environ({"SCOREP_KERNEL_PROFILE": "all"})
    assert (env.profile, env.profile_chosen) == ("all", True)
    bad = KernelSettings.from_environ({"SCOREP_KERNEL_PROFILE": "yes"})
    assert bad.profile == "none" and "SCOREP_KERNEL_PROFILE" in (bad.environ_problem or "")
