"""Settings, magics, bundle and fault wording, without a kernel."""

from __future__ import annotations

import signal

import pytest

from scorep_kernel.magics import parse_binding_arguments, parse_cell_magic, parse_scorep_env
from scorep_kernel.measure.measure_config import MeasureConfig
from scorep_kernel.runs.display import MIME_TYPE, experiment_bundle
from scorep_kernel.runs.faults import describe_exit
from scorep_kernel.settings import Availability, KernelSettings, SettingsError
from scorep_kernel.worker.client import WORKER_FILE, WorkerKey

NO_SCOREP = Availability(False, "Score-P not found: scorep-config is not on PATH", True, "builtin")
WITH_SCOREP = Availability(True, "Score-P found", True, "builtin")


def test_cell_magic_parsing():
    magic = parse_cell_magic("\n%%execute_with_scorep\nx = 1\ny = 2")
    assert magic.name == "execute_with_scorep" and magic.body == "x = 1\ny = 2"
    assert parse_cell_magic("%%timeit\nx = 1") is None  # IPython's own magics pass through
    assert parse_cell_magic("x = 1\n%%execute_with_scorep") is None
    assert parse_cell_magic("%%finalize_multicellmode").body == ""


def test_scorep_env_lines():
    env = parse_scorep_env(
        "SCOREP_ENABLE_TRACING=true\n# comment\n\nexport SCOREP_TOTAL_MEMORY='3g'"
    )
    assert env == {"SCOREP_ENABLE_TRACING": "true", "SCOREP_TOTAL_MEMORY": "3g"}
    with pytest.raises(SettingsError, match=r"line 1.*not a Score-P variable"):
        parse_scorep_env("PATH=/bin")
    with pytest.raises(SettingsError, match="not KEY=VALUE"):
        parse_scorep_env("SCOREP_ENABLE_TRACING")


def test_binding_arguments():
    assert parse_binding_arguments("--instrumenter-type=cTrace  --noinstrumenter") == [
        "--instrumenter-type=cTrace", "--noinstrumenter",
    ]  # fmt: skip
    with pytest.raises(SettingsError, match="not an option"):
        parse_binding_arguments("script.py")


def test_defaults_follow_the_backend():
    s = KernelSettings()
    assert (s.resolve({}, NO_SCOREP).backend, s.resolve({}, NO_SCOREP).isolation) == (
        "builtin",
        "inprocess",
    )
    assert (s.resolve({}, WITH_SCOREP).backend, s.resolve({}, WITH_SCOREP).isolation) == (
        "scorep",
        "subprocess",
    )
    cell = s.resolve({"isolation": "subprocess", "max_depth": 3}, NO_SCOREP, run="r", last=True)
    assert cell.isolation == "subprocess" and cell.measure == MeasureConfig(max_depth=3)
    assert cell.run == "r" and cell.last


def test_environment_defaults():
    s = KernelSettings.from_environ(
        {"SCOREP_KERNEL_BACKEND": "builtin", "SCOREP_KERNEL_ISOLATION": "subprocess"}
    )
    assert (s.backend, s.isolation) == ("builtin", "subprocess")
    bad = KernelSettings.from_environ({"SCOREP_KERNEL_BACKEND": "nonsense"})
    assert bad.backend == "auto" and s.environ_problem is None
    # ignored, but %scorep says so and why
    assert "SCOREP_KERNEL_BACKEND" in bad.environ_problem and "ignored" in bad.environ_problem
    from scorep_kernel.settings import Availability

    shown = bad.describe(Availability(False, "no Score-P", True, "builtin tracer installed"))
    assert bad.environ_problem in shown
    assert KernelSettings.from_environ({}).spare_worker == "on"
    assert KernelSettings.from_environ({"SCOREP_KERNEL_SPARE_WORKER": "0"}).spare_worker == "off"
    always = KernelSettings.from_environ({"SCOREP_KERNEL_SPARE_WORKER": "always"})
    assert always.spare_worker == "always"


def test_bad_settings_say_what_to_do():
    s = KernelSettings()
    with pytest.raises(SettingsError, match=r"backend 'scorep' was asked for.*scorep-config"):
        s.resolve({"backend": "scorep"}, NO_SCOREP)
    with pytest.raises(SettingsError, match="one of auto, scorep, builtin"):
        s.resolve({"backend": "fast"}, NO_SCOREP)
    with pytest.raises(SettingsError, match=r"inprocess.*builtin"):
        s.resolve({"backend": "scorep", "isolation": "inprocess"}, WITH_SCOREP)
    with pytest.raises(SettingsError, match="max_depth"):
        s.resolve({"max_depth": -1}, NO_SCOREP)
    with pytest.raises(SettingsError, match="include"):
        s.resolve({"include": 5}, NO_SCOREP)


def test_scorep_line_magic_settings():
    s = KernelSettings()
    s.update_from_line("backend=builtin isolation=subprocess max_depth=7 include=numpy,pandas")
    assert (s.backend, s.isolation) == ("builtin", "subprocess")
    assert s.measure == {"max_depth": 7, "include": ["numpy", "pandas"]}
    with pytest.raises(SettingsError, match="key=value"):
        s.update_from_line("builtin")
    with pytest.raises(SettingsError, match="unknown setting"):
        s.update_from_line("colour=red")
    with pytest.raises(SettingsError):
        s.update_from_line("backend=scorep isolation=inprocess")
    assert s.backend == "builtin", "a rejected line changes nothing"
    text = s.describe(NO_SCOREP)
    assert "scorep-config is not on PATH" in text and "builtin" in text


def test_bundle_matches_api():
    bundle = experiment_bundle(
        exp_id="20261129T080102_123456Z-a1b2c3", path="/abs/x", backend="builtin",
        isolation="subprocess", status="ok", wall_s=1.23, events=48211,
    )  # fmt: skip
    payload = bundle[MIME_TYPE]
    assert payload["summary"]["message"] == (
        "Profiled with the builtin tracer in a subprocess: 1.23 s, 48,211 events."
    )
    assert payload["run"] is None and payload["cell_index_in_run"] == 0
    assert set(bundle) == {MIME_TYPE, "text/plain", "text/html"}
    assert "48,211" in bundle["text/plain"] and "/abs/x" in bundle["text/html"]


def test_exit_descriptions():
    assert "signal 9 (SIGKILL)" in describe_exit(-signal.SIGKILL)
    assert "out of memory" in describe_exit(-signal.SIGKILL)
    assert "SIGSEGV" in describe_exit(-signal.SIGSEGV)
    assert "exited with status 3" in describe_exit(3)
    assert describe_exit(-signal.SIGKILL).endswith("The notebook's variables are unchanged.")


def test_worker_commands():
    builtin = WorkerKey("builtin", (), ()).command(7)
    assert builtin[1:] == ["-m", "scorep_kernel.worker", "--fd", "7"]
    # Score-P: the instrumenter starts off (the worker turns it on around the cell's
    # statements), thread support is on, the user's options follow
    scorep = WorkerKey("scorep", (), ("--instrumenter-type=cTrace",)).command(7)
    assert scorep[1:6] == [
        "-m", "scorep", "--noinstrumenter", "--thread=pthread", "--instrumenter-type=cTrace",
    ]  # fmt: skip
    assert scorep[6] == WORKER_FILE and scorep[-2:] == ["--backend", "scorep"]
    # the user's own thread model and --noinstrumenter are kept (and the worker told)
    own = WorkerKey("scorep", (), ("--thread=none", "--noinstrumenter")).command(7)
    assert own[3:5] == ["--noinstrumenter", "--thread=none"]
    assert own[-1] == "--no-python-instrumenter"


def test_every_setting_of_the_table_is_taken_where_it_says():
    from scorep_kernel.cell_metadata import parse_cell_metadata
    from scorep_kernel.settings import CELL, MAGIC, SETTINGS

    words = {"Flag": "false", "Whole": "3", "Seconds": "0.5", "Modules": "numpy",
             "FilePath": "/tmp/x", "Spare": "off"}  # fmt: skip
    values = {"Flag": False, "Whole": 3, "Seconds": 0.5, "Modules": ["numpy"],
              "FilePath": "/tmp/x", "Mpi": {"ranks": 2}}  # fmt: skip
    kinds = {s.name: type(s.kind).__name__ for s in SETTINGS}
    help_line = KernelSettings().describe(NO_SCOREP).splitlines()[-1]
    for s in SETTINGS:
        kind = kinds[s.name]
        choice = getattr(s.kind, "choices", ())
        if MAGIC in s.where:
            KernelSettings().update_from_line(f"{s.name}={choice[-1] if choice else words[kind]}")
            assert f" {s.name}=" in help_line
        if CELL in s.where:
            parse_cell_metadata({"scorep": {s.name: choice[-1] if choice else values[kind]}})
        if s.environ is not None:
            env = KernelSettings.from_environ({s.environ: choice[-1] if choice else words[kind]})
            assert env.environ_problem is None and getattr(env, s.name) != s.default
        if s.name in {"backend", "isolation", "profile", "spare_worker", "spare_template"}:
            assert getattr(KernelSettings(), s.name) == s.default
