"""The ``scorep`` cell metadata: the contract between the frontend (and ``jupyter scorep
run``) and the kernel on a cell. Every key has one meaning, checked here; anything else is
a ``SettingsError`` that names the key and the fix, before the cell runs.

    {"scorep": {"profile": true,                 # profile this cell
                "backend": "builtin", ...,       # the cell's own settings (set by hand)
                "run": "r1", "last": true,       # one multi-cell run (Alt+Shift+P)
                "lab_settings": {...}}}          # written by JupyterLab before each run

Precedence, one rule (README, "Settings precedence"): the cell's own keys >
``lab_settings`` (what the user chose in JupyterLab's settings; the frontend writes nothing else) > ``%scorep`` >
``SCOREP_KERNEL_*`` environment variables > defaults. ``KEYS`` documents each key; the
README's table is checked against it by a test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scorep_kernel.mpi.config import check_mpi
from scorep_kernel.settings import (
    CELL,
    CELL_KEYS,
    MEASURE_KEYS,
    SETTING,
    Choice,
    FilePath,
    JsonSchema,
    Mpi,
    SettingsError,
    SettingValue,
    check_measure,
)

# key -> what it means (the README's table says the same): the settings a cell may set
SETTING_KEYS: dict[str, str] = {name: SETTING[name].doc for name in CELL_KEYS}
KEYS: dict[str, str] = {
    "profile": "true: profile this cell (the toolbar toggle sets it); false: not even under "
    "%scorep profile=all",
    "run": "a name shared by the cells of one multi-cell run",
    "last": "true: this cell ends its multi-cell run",
    "lab_settings": "the JupyterLab settings the user chose, written before each run",
    **SETTING_KEYS,
}


@dataclass(frozen=True)
class CellMetadata:
    # True/False: the cell's own choice; None: the cell does not say (%scorep profile decides)
    profile: bool | None = None
    run: str | None = None
    last: bool = False
    # the settings for this cell, lab_settings under the cell's own keys, checked
    settings: dict[str, SettingValue] = field(default_factory=dict)


def _fix(where: str) -> str:
    return (
        f"Fix the cell's metadata ({where}) in JupyterLab's property inspector, or turn "
        "profiling off and on again with the toolbar toggle."
    )


def _check_settings(values: Any, where: str) -> dict[str, SettingValue]:
    if not isinstance(values, Mapping):
        raise SettingsError(f"{where} must be an object of settings, not {values!r}. {_fix(where)}")
    out: dict[str, SettingValue] = {}
    for key, value in values.items():
        setting = SETTING.get(key)
        if setting is None or CELL not in setting.where:
            raise SettingsError(
                f"{where} has the unknown key {key!r}; the settings are "
                f"{', '.join(SETTING_KEYS)}. {_fix(where)}"
            )
        kind = setting.kind
        if setting.measure:
            out[key] = value  # checked together below
        elif isinstance(kind, Choice):
            if value in kind.unset:
                continue  # the default decides, as when it is not set
            if value not in kind.choices:
                unset = "".join(f" or {word}" for word in kind.unset)
                raise SettingsError(
                    f"{where}.{key}={value!r} is not a choice: use one of "
                    f"{', '.join(kind.choices)}{unset}."
                )
            out[key] = value
        elif isinstance(kind, FilePath):
            if not isinstance(value, str) or not value.strip():
                raise SettingsError(f"{where}.{key} must be a path, not {value!r}. {_fix(where)}")
            out[key] = value.strip()
        elif isinstance(kind, Mpi) and value is not None:  # MPI cells (mpi.config)
            out[key] = check_mpi(value, f"{where}.{key}")  # null: not an MPI cell
    try:
        checked = check_measure({k: v for k, v in out.items() if k in MEASURE_KEYS})
    except SettingsError as e:
        raise SettingsError(f"{where}: {e}") from None
    # null stays: it holds over %scorep's value (the default)
    return {k: checked.get(k) if k in MEASURE_KEYS else v for k, v in out.items()}


def parse_cell_metadata(cell_meta: Mapping[str, Any] | None) -> CellMetadata:
    """The cell's ``scorep`` metadata, checked; the default (not profiled) when absent."""
    meta = (cell_meta or {}).get("scorep")
    if meta is None:
        return CellMetadata()
    where = '"scorep"'
    if not isinstance(meta, Mapping):
        raise SettingsError(f"the cell metadata {where} must be an object, not {meta!r}")
    unknown = [k for k in meta if k not in KEYS]
    if unknown:
        raise SettingsError(
            f"the cell metadata {where} has the unknown key {unknown[0]!r}; its keys are "
            f"{', '.join(KEYS)}. {_fix(where)}"
        )
    profile = meta.get("profile")
    if profile is not None and not isinstance(profile, bool):
        raise SettingsError(
            f"{where}.profile must be true or false, not {profile!r}. {_fix(where)}"
        )
    run = meta.get("run")
    if run is not None and (not isinstance(run, str) or not run.strip()):
        raise SettingsError(
            f"{where}.run must be the name of a multi-cell run (a string), not {run!r}. "
            + _fix(where)
        )
    last = meta.get("last", False)
    if not isinstance(last, bool):
        raise SettingsError(f"{where}.last must be true or false, not {last!r}. {_fix(where)}")
    if last and run is None:
        raise SettingsError(
            f"{where}.last is true but the cell belongs to no multi-cell run (no 'run'). "
            + _fix(where)
        )
    lab_settings = meta.get("lab_settings")
    lab = {} if lab_settings is None else _check_settings(lab_settings, f"{where}.lab_settings")
    own = _check_settings(
        {k: v for k, v in meta.items() if k in SETTING_KEYS}, where
    )  # fmt: skip
    return CellMetadata(profile=profile, run=run, last=last, settings={**lab, **own})


def json_schema() -> JsonSchema:
    """The ``scorep`` cell metadata as a JSON Schema (draft 2020-12), from the settings'
    table: what the frontend may write (src/notebook/cellSettings.ts, ``IScorepMetadata``; checked
    by test_cell_metadata). What it cannot say (``last`` needs ``run``, the tracer's rules
    for module names and ranges) parse_cell_metadata says."""
    properties = {name: _setting_schema(name) for name in CELL_KEYS}
    settings: JsonSchema = {"type": "object", "properties": properties}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "The scorep cell metadata",
        "type": "object",
        "properties": {
            "profile": {"type": ["boolean", "null"], "description": KEYS["profile"]},
            "run": {"type": ["string", "null"], "minLength": 1, "description": KEYS["run"]},
            "last": {"type": "boolean", "description": KEYS["last"]},
            "lab_settings": {
                "anyOf": [{**settings, "additionalProperties": False}, {"type": "null"}],
                "description": KEYS["lab_settings"],
            },
            **properties,
        },
        "additionalProperties": False,
    }


def _setting_schema(name: str) -> JsonSchema:
    setting = SETTING[name]
    schema = setting.kind.json_schema()
    if setting.measure or isinstance(setting.kind, Mpi):  # null: the default holds
        schema = {"anyOf": [schema, {"type": "null"}]}
    return {**schema, "description": setting.doc}
