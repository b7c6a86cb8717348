"""Filters, depth limit, imports as one region, and the event cap."""

from __future__ import annotations

import sys
import textwrap

import pytest
from test_tracer_util import calls, names, run_cell

from scorep_kernel.formats.recording import ROLE_IMPORT
from scorep_kernel.measure.measure_config import DEFAULT_EXCLUDE, MeasureConfig
from scorep_kernel.measure.session import Measurement

JSON_CELL = "import json\ndef use():\n    return json.dumps({'a': [1, 2]}, indent=1)\nuse()\n"


def measure(tmp_path, source, config=None):
    m = Measurement(tmp_path, config or MeasureConfig())
    m.start()
    try:
        run_cell(m, "cell [1]", source)
    finally:
        rec = m.stop()
    return rec


def test_library_calls_are_shown_by_default(tmp_path):
    got = calls(measure(tmp_path, JSON_CELL))
    dumps = [c for c in got if c.name == "json:dumps"]
    assert len(dumps) == 1 and dumps[0].parent == "__main__:use"
    assert any(c.name.startswith("json.encoder.") and c.depth > dumps[0].depth for c in got)


def test_exclude_drops_the_module_and_what_it_calls(tmp_path):
    rec = measure(tmp_path, JSON_CELL, MeasureConfig.from_mapping({"exclude": ["json"]}))
    got = names(rec)
    assert "__main__:use" in got
    assert not any(n.startswith("json") for n in got)
    assert rec.notes["dropped"]["excluded"] > 0
    assert "json" in rec.notes["filters"]["exclude"]
    # the defaults stay: the machinery is still excluded
    assert set(DEFAULT_EXCLUDE) <= set(rec.notes["filters"]["exclude"])


def test_only_regions_entered_are_defined(tmp_path):
    """As Score-P defines a region when it is first entered: functions dropped by a filter
    (an excluded module, calls outside the cell) are no region of the recording, and are
    not named (naming a method may scan the heap for its self's class)."""
    source = "import json\ndef use():\n    return json.dumps({'a': [1, 2]}, indent=1)\n"
    m = Measurement(tmp_path, MeasureConfig.from_mapping({"exclude": ["json"]}))
    m.start()
    try:
        json_outside = __import__("json").dumps([1])  # before the cell: outside it
        run_cell(m, "cell [1]", source + "use()\n")
    finally:
        rec = m.stop()
    assert json_outside == "[1]"
    defined = {r.name for r in rec.regions}
    assert "__main__:use" in defined
    assert not any(n.startswith("json") for n in defined), sorted(defined)
    assert defined == set(names(rec)) | {"cell [1]"}


def test_include_wins_over_exclude(tmp_path):
    config = MeasureConfig.from_mapping({"exclude": "json", "include": "json.encoder"})
    got = calls(measure(tmp_path, JSON_CELL, config))
    assert "json:dumps" not in {c.name for c in got}
    encoder = [c for c in got if c.name.startswith("json.encoder.")]
    assert encoder and all(not c.parent.startswith("json:") for c in encoder if c.depth == 2)


def test_max_depth_keeps_the_top_levels(tmp_path):
    source = "def c():\n    return 1\ndef b():\n    return c()\ndef a():\n    return b()\na()\n"
    got = calls(measure(tmp_path, source, MeasureConfig(max_depth=2)))
    assert [(c.name, c.depth) for c in got] == [
        ("cell [1]", 0),
        ("__main__:a", 1),
        ("__main__:b", 2),
    ]
    rec = measure(tmp_path, source, MeasureConfig(max_depth=0))
    assert [c.name for c in calls(rec)] == ["cell [1]"]
    assert rec.notes["dropped"]["too_deep"] == 3


@pytest.fixture
def fresh_package(tmp_path, monkeypatch):
    """A package that is not imported yet and does work at import time."""
    name = f"scorep_probe_pkg_{tmp_path.name.replace('-', '_')}"
    pkg = tmp_path / "src" / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        textwrap.dedent("""
        import json, decimal
        from . import helpers
        def busy():
            return sum(helpers.square(i) for i in range(200))
        TABLE = busy()
    """)
    )
    (pkg / "helpers.py").write_text("def square(x):\n    return x * x\n")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    yield name
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


def test_an_import_is_one_region(tmp_path, fresh_package):
    source = f"import {fresh_package}\ndef after():\n    return {fresh_package}.busy()\nafter()\n"
    rec = measure(tmp_path, source)
    got = calls(rec)
    imports = [c for c in got if c.role == ROLE_IMPORT]
    assert [(c.name, c.parent) for c in imports] == [(f"import:{fresh_package}", "cell [1]")]
    # nothing from the import machinery or the module body below it
    assert not [c for c in got if c.start > imports[0].start and c.end < imports[0].end]
    assert not any("importlib" in c.name for c in got)
    # the package's functions called after the import are recorded as usual
    busy = [c for c in got if c.name == f"{fresh_package}:busy"]
    assert len(busy) == 1 and busy[0].parent == "__main__:after"
    # an import of something already loaded is not a region
    rec = measure(tmp_path, f"import {fresh_package}\n")
    assert not [c for c in calls(rec) if c.role == ROLE_IMPORT]


def test_importlib_import_module_is_cut_at_the_machinery(tmp_path, fresh_package):
    rec = measure(tmp_path, f"import importlib\nimportlib.import_module('{fresh_package}')\n")
    got = calls(rec)
    top = [c for c in got if c.name == "importlib:import_module"]
    assert len(top) == 1
    assert not [c for c in got if c.depth > top[0].depth]


def test_the_event_cap_stops_recording_and_says_so(tmp_path):
    source = textwrap.dedent("""
        import time
        def tiny():
            return 1
        def loop():
            t = time.perf_counter()
            while time.perf_counter() - t < 0.4:
                tiny()
        loop()
    """)
    cap = 2000
    rec = measure(tmp_path, source, MeasureConfig(event_cap=cap, metric_interval_s=0.05))
    got = calls(rec)  # still balanced
    tiny = [c for c in got if c.name == "__main__:tiny"]
    loop = [c for c in got if c.name == "__main__:loop"]
    assert rec.notes["cap_reached"] is True
    assert any("event cap of 2,000 events reached" in m for m in rec.notes["messages"])
    assert rec.notes["recorded_calls"] <= cap // 2
    assert 0 < len(tiny) < cap // 2
    # loop() was open when the cap was reached: it is still there, closed, around the calls
    assert len(loop) == 1 and loop[0].seconds >= 0.39
    assert rec.notes["cap_reached_at_ns"] < loop[0].end
    assert max(c.end for c in tiny) <= rec.notes["cap_reached_at_ns"] + 1_000_000


def test_config_from_mapping_accepts_lists_and_comma_strings():
    c = MeasureConfig.from_mapping(
        {
            "include": "numpy, pandas",
            "exclude": ["json"],
            "max_depth": "3",
            "event_cap": 1000,
            "metric_interval": 0.5,
        }
    )
    assert c.include == ("numpy", "pandas")
    assert c.exclude[-1] == "json" and c.exclude[: len(DEFAULT_EXCLUDE)] == DEFAULT_EXCLUDE
    assert (c.max_depth, c.event_cap, c.metric_interval_s) == (3, 1000, 0.5)
    assert MeasureConfig.from_mapping({"exclude_defaults": False, "exclude": "a"}).exclude == ("a",)
    assert MeasureConfig.from_mapping({}) == MeasureConfig()


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"max_depth": -1}, "max_depth must be a whole number >= 0"),
        ({"max_depth": "deep"}, "max_depth must be a whole number"),
        ({"event_cap": 0}, "event_cap must be a whole number >= 2"),
        ({"event_cap": True}, "event_cap"),
        ({"metric_interval": 0}, "metric_interval must be seconds > 0"),
        ({"metric_interval": "fast"}, "metric_interval must be seconds"),
        ({"include": 5}, "include must be a list of module prefixes"),
        (
            {"exclude": ["numpy", "not a module"]},
            "exclude entry 'not a module' is not a module name",
        ),
        ({"colour": "red"}, "unknown measurement setting 'colour': accepted keys are"),
    ],
)
def test_config_rejects_bad_values_naming_the_key(settings, message):
    with pytest.raises(ValueError, match=message):
        MeasureConfig.from_mapping(settings)


@pytest.mark.parametrize("c_functions", [False, True])
def test_recording_goes_on_after_imports(tmp_path, fresh_package, c_functions):
    # The import hook switches the profiler off during the import and back on after it.
    source = (
        "def before():\n    return 1\n"
        "def after():\n    return 2\n"
        "before()\n"
        f"import {fresh_package}\n"
        "after()\n"
        "import importlib\n"
        f"importlib.import_module('{fresh_package}.helpers')\n"
        "after()\n"
    )
    rec = measure(tmp_path, source, MeasureConfig(c_functions=c_functions))
    got = [
        (c.name, c.parent) for c in calls(rec) if c.depth == 1 and not c.name.startswith("builtins")
    ]
    assert got == [
        ("__main__:before", "cell [1]"),
        (f"import:{fresh_package}", "cell [1]"),
        ("__main__:after", "cell [1]"),
        ("importlib:import_module", "cell [1]"),
        ("__main__:after", "cell [1]"),
    ]
