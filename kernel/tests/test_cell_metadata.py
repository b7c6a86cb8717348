"""The ``scorep`` cell metadata: every key checked, one precedence rule, bad input as a
clear error (never a crash, never a silently unprofiled cell)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scorep_kernel.cell_metadata import (
    KEYS,
    SETTING_KEYS,
    CellMetadata,
    json_schema,
    parse_cell_metadata,
)
from scorep_kernel.settings import Availability, KernelSettings, SettingsError

NO_SCOREP = Availability(False, "Score-P not found.", True, "builtin")
README = Path(__file__).resolve().parents[2] / "README.md"


def meta(**scorep):
    return {"scorep": scorep}


def test_absent_metadata_is_an_unprofiled_cell():
    assert parse_cell_metadata(None) == CellMetadata()
    assert parse_cell_metadata({"tags": ["x"]}) == CellMetadata()
    # a cell that does not say leaves it to %scorep profile (default none); one that says, says
    assert CellMetadata().profile is None
    assert parse_cell_metadata(meta(profile=False)).profile is False
    assert parse_cell_metadata(meta(backend="builtin")).profile is None


def test_the_cells_own_keys_win_over_the_jupyterlab_settings():
    parsed = parse_cell_metadata(
        meta(
            profile=True,
            backend="builtin",
            lab_settings={"backend": "scorep", "metric_interval": 0.5, "isolation": "auto"},
        )
    )
    assert parsed.profile is True
    assert parsed.settings == {"backend": "builtin", "metric_interval": 0.5}


def test_jupyterlab_settings_win_over_percent_scorep_and_the_environment():
    kernel = KernelSettings.from_environ({"SCOREP_KERNEL_ISOLATION": "subprocess"})
    kernel.update_from_line("metric_interval=2 max_depth=5")
    # environment: subprocess; %scorep: interval 2, depth 5; JupyterLab: interval 0.25
    parsed = parse_cell_metadata(meta(profile=True, lab_settings={"metric_interval": 0.25}))
    cell = kernel.resolve(parsed.settings, NO_SCOREP)
    assert cell.isolation == "subprocess"
    assert (cell.measure.metric_interval_s, cell.measure.max_depth) == (0.25, 5)
    # and nothing from JupyterLab: %scorep's value holds
    cell = kernel.resolve(parse_cell_metadata(meta(profile=True)).settings, NO_SCOREP)
    assert cell.measure.metric_interval_s == 2.0


@pytest.mark.parametrize(
    ("scorep", "named"),
    [
        ({"profile": "maybe"}, "profile"),  # was: silently unprofiled
        ({"profile": True, "run": 12, "last": "x"}, "run"),  # was: a multi-cell run
        ({"profile": True, "run": "r", "last": "x"}, "last"),
        ({"profile": True, "last": True}, "last"),
        ({"profile": True, "backend": "fast"}, "backend"),
        ({"profile": True, "isolation": "thread"}, "isolation"),
        ({"profile": True, "experiment_dir": 5}, "experiment_dir"),
        ({"profile": True, "experiment_dir": "  "}, "experiment_dir"),
        ({"profile": True, "max_depth": -1}, "max_depth"),
        ({"profile": True, "metric_interval": "fast"}, "metric_interval"),
        ({"profile": True, "include": 5}, "include"),
        ({"profile": True, "profiel": True}, "profiel"),
        ({"profile": True, "lab_settings": []}, "lab_settings"),
        ({"profile": True, "lab_settings": {"colour": "red"}}, "colour"),
        ({"profile": True, "lab_settings": {"event_cap": 1.5}}, "event_cap"),
    ],
)
def test_bad_metadata_names_the_key(scorep, named):
    with pytest.raises(SettingsError) as error:
        parse_cell_metadata({"scorep": scorep})
    assert named in str(error.value)


def test_not_an_object():
    with pytest.raises(SettingsError, match="must be an object"):
        parse_cell_metadata({"scorep": True})


def test_every_key_is_documented_in_the_readme():
    text = README.read_text()
    missing = [k for k in KEYS if not re.search(rf"`{k}`", text)]
    assert not missing, f"README.md does not document the cell metadata keys {missing}"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**7) | st.floats(-1, 100) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
KEY = st.sampled_from(sorted(KEYS)) | st.text(max_size=10)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        KEY, JSON | st.sampled_from(["builtin", "subprocess", "auto", "r1"]), max_size=5
    )
)
def test_any_metadata_is_accepted_with_its_meaning_or_refused_in_words(scorep):
    try:
        parsed = parse_cell_metadata({"scorep": scorep})
    except SettingsError as e:
        text = str(e)
        # the message names a key of the input, or the object itself
        assert any(repr(k) in text or f".{k}" in text or f" {k} " in text for k in scorep) or (
            '"scorep"' in text
        ), text
        return
    # profile: the cell's own choice, or None where it says nothing (%scorep profile decides)
    assert parsed.profile in (True, False, None) and isinstance(parsed.last, bool)
    assert parsed.profile is None or parsed.profile == scorep["profile"]
    assert parsed.run is None or isinstance(parsed.run, str)
    assert set(parsed.settings) <= set(SETTING_KEYS)
    # and the kernel either honours the settings or says why not
    try:
        KernelSettings().resolve(parsed.settings, NO_SCOREP, run=parsed.run, last=parsed.last)
    except SettingsError:
        pass


# --- the frontend's side of the contract: src/notebook/cellSettings.ts ------------------------------

CELL_SETTINGS_TS = Path(__file__).resolve().parents[2] / "src" / "notebook" / "cellSettings.ts"


def _ts_declarations(text: str) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The file's interfaces (name -> property -> type) and type aliases (name -> type)."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    interfaces = {}
    for name, body in re.findall(r"export interface (\w+) \{(.*?)\n\}", text, flags=re.S):
        props = re.findall(r"^\s*(\w+)\??:\s*([^;]+);", body, flags=re.M)
        interfaces[name] = {prop: " ".join(kind.split()) for prop, kind in props}
    aliases = dict(re.findall(r"export type (\w+) = ([^;]+);", text))
    return interfaces, aliases


def _types(schema: dict) -> set[str]:
    found = {schema["type"]} if isinstance(schema.get("type"), str) else set(schema.get("type", []))
    for part in schema.get("anyOf", []):
        found |= _types(part)
    return found


def _enum(schema: dict) -> set[str] | None:
    if "enum" in schema:
        return set(schema["enum"])
    parts = [_enum(part) for part in schema.get("anyOf", [])]
    return next((p for p in parts if p is not None), None)


def _properties(schema: dict) -> dict:
    if "properties" in schema:
        return schema["properties"]
    return next((_properties(p) for p in schema.get("anyOf", []) if _properties(p)), {})


def _disagreements(where: str, ts: str, schema: dict, interfaces: dict, aliases: dict) -> list:
    ts = aliases.get(ts, ts)
    if ts in interfaces:
        if "object" not in _types(schema):
            return [f"{where}: {ts} is an object, the kernel's is {_types(schema)}"]
        kernel = _properties(schema)
        out = []
        for prop, kind in interfaces[ts].items():
            if prop not in kernel:
                out.append(f"{where}.{prop}: not a key of the kernel's cell metadata")
            else:
                out += _disagreements(f"{where}.{prop}", kind, kernel[prop], interfaces, aliases)
        return out
    literals = re.findall(r"'([^']*)'", ts)
    if literals:
        allowed = _enum(schema) or set()
        extra = set(literals) - allowed
        return [f"{where}: the kernel refuses {sorted(extra)}"] if extra else []
    wanted = {"boolean": {"boolean"}, "string": {"string"}, "number": {"number", "integer"}}
    if ts not in wanted:
        return [f"{where}: the contract test does not know the type {ts!r}"]
    if not wanted[ts] & _types(schema):
        return [f"{where}: {ts} on the frontend, {sorted(_types(schema))} in the kernel"]
    return []


def test_the_frontends_metadata_type_matches_the_kernels():
    """Every key IScorepMetadata (and the lab_settings in it) declares is one the kernel
    reads, with a type it accepts; the keys the frontend writes are declared."""
    interfaces, aliases = _ts_declarations(CELL_SETTINGS_TS.read_text())
    declared = interfaces["IScorepMetadata"]
    assert {"profile", "run", "last", "lab_settings"} <= set(declared)
    problems = _disagreements("scorep", "IScorepMetadata", json_schema(), interfaces, aliases)
    assert not problems, (
        "src/notebook/cellSettings.ts and cell_metadata.py disagree:\n" + "\n".join(problems)
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(KEY, JSON | st.sampled_from(["builtin", "auto", "r1", "numpy"]), max_size=5))
def test_what_the_kernel_accepts_its_schema_allows(scorep):
    jsonschema = pytest.importorskip("jsonschema")
    try:
        parse_cell_metadata({"scorep": scorep})
    except SettingsError:
        return
    jsonschema.validate(scorep, json_schema())
