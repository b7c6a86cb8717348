"""Profiling settings: kernel-wide defaults (environment, ``%scorep``) and per-cell metadata.

Kernel-wide: ``SCOREP_KERNEL_BACKEND`` (auto | scorep | builtin), ``SCOREP_KERNEL_ISOLATION``
(subprocess | inprocess), ``SCOREP_KERNEL_SPARE_WORKER`` (see ``spare_choice``),
``SCOREP_KERNEL_SPARE_TEMPLATE`` (true | false: builtin spares forked from a preloaded
template, worker.pool), ``SCOREP_KERNEL_PROFILE`` (none | all: which cells are profiled
when the cell does not say, frontend_metadata), changed with ``%scorep key=value ...`` (which wins over the environment). Per
cell, the ``scorep`` metadata (checked by ``cell_metadata``) overrides them for that cell.
Default isolation: scorep -> subprocess, builtin -> inprocess.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BACKENDS = ("auto", "scorep", "builtin")
ISOLATIONS = ("subprocess", "inprocess")
DEFAULT_ISOLATION = {"scorep": "subprocess", "builtin": "inprocess"}
# The run kind of a cell with an "mpi" setting (N ranks, each a process of its own).
MPI_ISOLATION = "mpi"
# Passed through to measure.MeasureConfig.from_mapping.
MEASURE_KEYS = (
    "include", "exclude", "max_depth", "event_cap", "metric_interval",
    "c_functions", "imports_as_regions", "exclude_defaults", "accelerators", "io",
)  # fmt: skip
IO_CHOICES = ("posix", "none")
_FLAG_KEYS = ("c_functions", "imports_as_regions", "exclude_defaults", "accelerators")
_INT_KEYS = ("max_depth", "event_cap")
_LIST_KEYS = ("include", "exclude")


# The spare worker: "on" keeps one ready once the notebook has used subprocess isolation or
# JupyterLab said it holds cells that will (profiled_cells_notice; a notebook that never
# does pays nothing), "always" from the kernel's start, "off" never.
SPARE_CHOICES = ("on", "always", "off")
_SPARE_WORDS = {"1": "on", "true": "on", "yes": "on", "0": "off", "false": "off", "no": "off"}


# Which cells are profiled when the cell's metadata does not say (its "profile" key):
# "none", the toggled and marked ones only; "all", every cell (frontend_metadata).
PROFILE_CHOICES = ("none", "all")


def spare_choice(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    word = str(value).strip().lower()
    word = _SPARE_WORDS.get(word, word)
    if word not in SPARE_CHOICES:
        raise SettingsError(
            f"{key}={value!r} is not a choice: use one of {', '.join(SPARE_CHOICES)}"
        )
    return word


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def flag(key: str, value: Any) -> bool:
    """true | false, as a bool or a word (1/0, yes/no, on/off)."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word not in _TRUE + _FALSE:
        raise SettingsError(f"{key} must be true or false, not {value!r}")
    return word in _TRUE


class SettingsError(ValueError):
    """A setting that cannot be used; the message names the cause and the fix."""


@dataclass
class Availability:
    scorep: bool
    scorep_message: str
    builtin: bool
    builtin_message: str


def detect() -> Availability:
    from scorep_kernel.measure.detect import detect_scorep

    found = detect_scorep()
    return Availability(
        bool(found["available"]), str(found["message"]), True, "builtin tracer installed"
    )


def _check_choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise SettingsError(f"{key}={value!r} is not a choice: use one of {', '.join(choices)}")
    return value


def check_measure(values: Mapping[str, Any]) -> dict[str, Any]:
    """The measurement settings, type-checked (and checked by the tracer when present)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key in _INT_KEYS:
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise SettingsError(f"{key} must be a whole number >= 0, not {value!r}")
        elif key == "metric_interval":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise SettingsError(f"metric_interval must be seconds > 0, not {value!r}")
        elif key in _FLAG_KEYS:
            if not isinstance(value, bool):
                raise SettingsError(f"{key} must be true or false, not {value!r}")
        elif key == "io":
            if value not in IO_CHOICES:
                raise SettingsError(f"io must be one of {', '.join(IO_CHOICES)}, not {value!r}")
        elif key in _LIST_KEYS:
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise SettingsError(f"{key} must be a list of module names, not {value!r}")
        else:
            raise SettingsError(
                f"unknown measurement setting {key!r}: use {', '.join(MEASURE_KEYS)}"
            )
        out[key] = value
    from scorep_kernel.measure.measure_config import MeasureConfig  # the tracer's own checks

    try:
        MeasureConfig.from_mapping(dict(out))
    except Exception as e:
        raise SettingsError(f"measurement settings rejected: {e}") from None
    return out


@dataclass
class CellSettings:
    backend: str  # "scorep" | "builtin" (resolved)
    isolation: str
    measure: dict[str, Any]
    run: str | None = None  # multi-cell run id
    last: bool = False
    experiment_parent: str | None = (
        None  # where run directories go (None: <cwd>/scorep-experiments)
    )
    filter_file: str | None = None  # Score-P filter file for this run (SCOREP_FILTERING_FILE)
    # MPI cells: the run's ranks and launcher (scorep_kernel.mpi.config.MpiSettings); the
    # isolation is then MPI_ISOLATION
    mpi: Any = None
    # how large buffers travel to a worker ("shm", or None: chosen), %%marshalling_settings
    state_transport: str | None = None
    # tools the panel opens the run's files in when they are ready (%%enable_vampir_launch...)
    open_tools: tuple[str, ...] = ()


@dataclass
class KernelSettings:
    backend: str = "auto"
    isolation: str | None = None  # None: the backend's default
    measure: dict[str, Any] = field(default_factory=dict)
    scorep_env: dict[str, str] = field(default_factory=dict)  # from %%scorep_env
    binding_args: list[str] = field(default_factory=list)  # %%scorep_python_binding_arguments
    experiment_dir: str | None = None  # %scorep experiment_dir=...: parent of run directories
    spare_worker: str = "on"  # SPARE_CHOICES
    spare_template: bool = True  # builtin spares forked from a template (worker.pool)
    profile: str = "none"  # PROFILE_CHOICES
    # profile chosen in the environment or with %scorep (the no-metadata note is left out)
    profile_chosen: bool = False
    # A SCOREP_KERNEL_* variable that could not be used (it is ignored); %scorep shows it.
    environ_problem: str | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> KernelSettings:
        environ = os.environ if environ is None else environ
        settings = cls()
        backend = environ.get("SCOREP_KERNEL_BACKEND", "").strip().lower()
        isolation = environ.get("SCOREP_KERNEL_ISOLATION", "").strip().lower()
        try:
            if backend:
                settings.backend = _check_choice("SCOREP_KERNEL_BACKEND", backend, BACKENDS)
            if isolation:
                settings.isolation = _check_choice("SCOREP_KERNEL_ISOLATION", isolation, ISOLATIONS)
        except SettingsError as e:  # a bad variable must not stop the kernel
            settings.environ_problem = f"{e} (the variable is ignored)"
        spare = environ.get("SCOREP_KERNEL_SPARE_WORKER", "").strip()
        if spare:
            try:
                settings.spare_worker = spare_choice("SCOREP_KERNEL_SPARE_WORKER", spare)
            except SettingsError as e:
                settings.environ_problem = f"{e} (the variable is ignored)"
        profile = environ.get("SCOREP_KERNEL_PROFILE", "").strip().lower()
        if profile:
            try:
                settings.profile = _check_choice("SCOREP_KERNEL_PROFILE", profile, PROFILE_CHOICES)
                settings.profile_chosen = True
            except SettingsError as e:
                settings.environ_problem = f"{e} (the variable is ignored)"
        template = environ.get("SCOREP_KERNEL_SPARE_TEMPLATE", "").strip()
        if template:
            try:
                settings.spare_template = flag("SCOREP_KERNEL_SPARE_TEMPLATE", template)
            except SettingsError as e:
                settings.environ_problem = f"{e} (the variable is ignored)"
        return settings

    def update_from_line(self, line: str) -> list[str]:
        """Apply ``key=value`` words of ``%scorep``; returns what changed, in words."""
        updates: dict[str, Any] = {}
        for word in shlex.split(line):
            if "=" not in word:
                raise SettingsError(
                    f"%scorep expects key=value words, not {word!r} "
                    f"(e.g. %scorep backend=builtin isolation=subprocess max_depth=20)"
                )
            key, text = word.split("=", 1)
            key = key.strip().replace("-", "_")
            value: Any = text
            if key in _INT_KEYS:
                try:
                    value = None if text.lower() in ("", "none") else int(text)
                except ValueError:
                    raise SettingsError(f"{key} must be a whole number, not {text!r}") from None
            elif key == "metric_interval":
                try:
                    value = float(text)
                except ValueError:
                    raise SettingsError(f"metric_interval must be seconds, not {text!r}") from None
            elif key == "spare_worker":
                value = spare_choice(key, text)
            elif key in _FLAG_KEYS or key == "spare_template":
                value = flag(key, text)
            updates[key] = value
        return self.update(updates)

    def update(self, updates: Mapping[str, Any]) -> list[str]:
        new_backend = self.backend
        new_isolation = self.isolation
        measure = dict(self.measure)
        spare = self.spare_worker
        template = self.spare_template
        experiment_dir = self.experiment_dir
        profile = self.profile
        for key, value in updates.items():
            if key == "backend":
                new_backend = _check_choice("backend", value, BACKENDS)
            elif key == "isolation":
                new_isolation = (
                    None
                    if value in ("", "default", None)
                    else _check_choice("isolation", value, ISOLATIONS)
                )
            elif key == "spare_worker":
                spare = spare_choice(key, value)
            elif key == "spare_template":
                template = flag(key, value)
            elif key == "profile":
                profile = _check_choice("profile", str(value).strip().lower(), PROFILE_CHOICES)
            elif key == "experiment_dir":
                experiment_dir = (str(value).strip() or None) if value is not None else None
            elif key in MEASURE_KEYS:
                measure[key] = value
            else:
                raise SettingsError(
                    f"unknown setting {key!r}: use profile, backend, isolation, spare_worker, "
                    "spare_template, experiment_dir, " + ", ".join(MEASURE_KEYS)
                )
        measure = check_measure({k: v for k, v in measure.items() if v is not None})
        if new_backend == "scorep" and new_isolation == "inprocess":
            raise SettingsError(
                "isolation=inprocess works only with backend=builtin: Score-P needs a process "
                "of its own. Use isolation=subprocess, or backend=builtin."
            )
        self.experiment_dir = experiment_dir
        self.spare_template = template
        if "profile" in updates:
            self.profile, self.profile_chosen = profile, True
        self.backend, self.isolation, self.measure, self.spare_worker = (
            new_backend, new_isolation, measure, spare
        )  # fmt: skip
        return [f"{k}={v!r}" for k, v in updates.items()]

    def resolve(
        self,
        cell: Mapping[str, Any] | None,
        available: Availability,
        run: str | None = None,
        last: bool = False,
    ) -> CellSettings:
        """The settings for one profiled cell: ``cell`` holds the cell's settings (see
        cell_metadata: its own keys over the JupyterLab settings), over this kernel's.
        SettingsError when they cannot be honoured."""
        cell = {k: v for k, v in (cell or {}).items() if not (k == "isolation" and v == "auto")}
        backend = cell.get("backend", self.backend) or "auto"
        _check_choice("backend", backend, BACKENDS)
        if backend == "auto":
            backend = "scorep" if available.scorep else "builtin"
        elif backend == "scorep" and not available.scorep:
            raise SettingsError(
                f"backend 'scorep' was asked for, but {available.scorep_message} "
                "Or measure with the builtin tracer: backend 'auto' or 'builtin' (cell metadata, "
                "or `%scorep backend=auto`)."
            )
        isolation = cell.get("isolation") or self.isolation or DEFAULT_ISOLATION[backend]
        if "isolation" not in cell and backend == "scorep":
            isolation = "subprocess"  # a kernel-wide inprocess default is for builtin
        _check_choice("isolation", isolation, ISOLATIONS)
        mpi = cell.get("mpi")
        if mpi is not None:  # MPI cells: each rank is a process of its own
            if cell.get("isolation") == "inprocess":
                raise SettingsError(
                    "isolation 'inprocess' cannot run a cell as MPI ranks: each rank is a "
                    "process of its own. Remove 'isolation' or the cell's 'mpi' setting."
                )
            isolation = MPI_ISOLATION
        if backend == "scorep" and isolation == "inprocess":
            raise SettingsError(
                "isolation 'inprocess' works only with the builtin backend: Score-P needs a "
                "process of its own. Use isolation 'subprocess'."
            )
        measure = dict(self.measure)
        measure.update({k: cell[k] for k in MEASURE_KEYS if k in cell})
        measure = check_measure({k: v for k, v in measure.items() if v is not None})
        parent = cell.get("experiment_dir") or self.experiment_dir or None
        if parent is not None and not isinstance(parent, str):
            raise SettingsError(f"experiment_dir must be a directory path, not {parent!r}")
        return CellSettings(
            backend=backend,
            isolation=isolation,
            measure=measure,
            run=run,
            last=last,
            experiment_parent=parent,
            filter_file=cell.get("filter_file") or None,
            mpi=mpi,
        )

    def describe(self, available: Availability) -> str:
        """What ``%scorep`` prints."""
        isolation = self.isolation or "default (scorep: subprocess, builtin: inprocess)"
        profile = {
            "none": "none (the cells toggled in JupyterLab or marked %%execute_with_scorep)",
            "all": 'all (every cell; a cell\'s own "profile": false keeps it out)',
        }[self.profile]
        lines = [
            "Score-P kernel settings",
            f"  profile        {profile}",
            f"  backend        {self.backend}",
            f"  isolation      {isolation}",
            f"  measurement    {self.measure or '(defaults)'}",
            f"  spare worker   {self.spare_worker}",
            f"  spare template {'on' if self.spare_template else 'off'}",
            f"  experiments in {self.experiment_dir or '(default: scorep-experiments/)'}",
            f"  SCOREP_* env   {self.scorep_env or '(none)'}",
            f"  binding args   {' '.join(self.binding_args) or '(none)'}",
            *([f"  environment    {self.environ_problem}"] if self.environ_problem else []),
            "Backends",
            f"  scorep         {'available' if available.scorep else 'unavailable'}: "
            f"{available.scorep_message}",
            f"  builtin        {'available' if available.builtin else 'unavailable'}: "
            f"{available.builtin_message}",
            "Set with: %scorep profile=all|none backend=auto|scorep|builtin "
            "isolation=subprocess|inprocess max_depth=N event_cap=N metric_interval=S "
            "include=a,b exclude=c",
        ]
        return "\n".join(lines)
