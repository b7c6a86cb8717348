"""The ``scorep`` cell metadata: the contract between the frontend (and ``jupyter scorep
run``) and the kernel on a cell. Every key has one meaning, checked here; anything else is
a ``SettingsError`` that names the key and the fix, before the cell runs.

    {"scorep": {"profile": true,                 # profile this cell
                "backend": "builtin", ...,       # the cell's own settings (set by hand)
                "run": "r1", "last": true,       # one multi-cell run (Alt+Shift+P)
                "lab_settings": {...}}}          # written by JupyterLab before each run

Precedence, one rule (DESIGN.md): the cell's own keys > ``lab_settings`` (what the user
chose in JupyterLab's settings; the frontend writes nothing else) > ``%scorep`` >
``SCOREP_KERNEL_*`` environment variables > defaults. ``KEYS`` documents each key; the
README's table is checked against it by a test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scorep_kernel.mpi.config import check_mpi
from scorep_kernel.settings import BACKENDS, ISOLATIONS, MEASURE_KEYS, SettingsError, check_measure

# key -> what it means (the README's table says the same)
SETTING_KEYS: dict[str, str] = {
    "backend": "auto | scorep | builtin: what measures the cell",
    "isolation": "subprocess | inprocess (builtin only) | auto: where the cell runs",
    "experiment_dir": "parent directory of the run's experiment directory",
    "filter_file": "a Score-P filter file for the run (SCOREP_FILTERING_FILE; Score-P only)",
    "include": "modules to trace (list, or comma-separated)",
    "exclude": "modules not to trace (list, or comma-separated)",
    "max_depth": "deepest call level recorded (whole number, null: no limit)",
    "event_cap": "stop recording after this many events (0 or null: no cap)",
    "metric_interval": "seconds between system metric samples (> 0)",
    "c_functions": "record calls of C functions too (true/false)",
    "imports_as_regions": "each `import x` as one region `import:x` (true/false)",
    "exclude_defaults": "leave IPython, ipykernel and the kernel out (true/false)",
    "accelerators": "record PyTorch operators and GPU activity (torch.profiler; Score-P's CUDA adapter) (true/false)",
    "io": "posix: record file I/O (Score-P's POSIX I/O adapter; Python's open/read/write/close under the builtin tracer); none: not",
    "mpi": 'run the cell as MPI ranks: {"ranks": N, "launcher", "args", "gather", "timeout"}',
}
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
    # the settings for this cell, lab_settings under the cell's own keys
    settings: dict[str, Any] = field(default_factory=dict)


def _fix(where: str) -> str:
    return (
        f"Fix the cell's metadata ({where}) in JupyterLab's property inspector, or turn "
        "profiling off and on again with the toolbar toggle."
    )


def _check_settings(values: Any, where: str) -> dict[str, Any]:
    if not isinstance(values, Mapping):
        raise SettingsError(f"{where} must be an object of settings, not {values!r}. {_fix(where)}")
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key not in SETTING_KEYS:
            raise SettingsError(
                f"{where} has the unknown key {key!r}; the settings are "
                f"{', '.join(SETTING_KEYS)}. {_fix(where)}"
            )
        if key == "backend" and value not in BACKENDS:
            raise SettingsError(
                f"{where}.backend={value!r} is not a choice: use one of {', '.join(BACKENDS)}."
            )
        if key == "isolation":
            if value == "auto":
                continue  # the backend's default, as when it is not set
            if value not in ISOLATIONS:
                raise SettingsError(
                    f"{where}.isolation={value!r} is not a choice: use one of "
                    f"{', '.join(ISOLATIONS)} or auto."
                )
        if key in ("experiment_dir", "filter_file") and (
            not isinstance(value, str) or not value.strip()
        ):
            raise SettingsError(f"{where}.{key} must be a path, not {value!r}. {_fix(where)}")
        if key == "mpi":  # MPI cells (scorep_kernel.mpi.config); null: not an MPI cell
            if value is not None:
                out[key] = check_mpi(value, f"{where}.mpi")
            continue
        out[key] = value.strip() if key in ("experiment_dir", "filter_file") else value
    measure = {k: v for k, v in out.items() if k in MEASURE_KEYS and v is not None}
    try:
        check_measure(measure)
    except SettingsError as e:
        raise SettingsError(f"{where}: {e}") from None
    return out


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
