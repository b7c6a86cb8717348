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
from dataclasses import dataclass, field, fields
from typing import Any, TypeAlias

from scorep_kernel.measure.measure_config import (
    IO_CHOICES,
    SETTING_FIELDS,
    MeasureConfig,
    check_setting,
)
from scorep_kernel.measure.measure_config import flag as read_flag

BACKENDS = ("auto", "scorep", "builtin")
ISOLATIONS = ("subprocess", "inprocess")
DEFAULT_ISOLATION = {"scorep": "subprocess", "builtin": "inprocess"}
# The run kind of a cell with an "mpi" setting (N ranks, each a process of its own).
MPI_ISOLATION = "mpi"


# The spare worker: "on" keeps one ready once the notebook has used subprocess isolation or
# JupyterLab said it holds cells that will (profiled_cells_notice; a notebook that never
# does pays nothing), "always" from the kernel's start, "off" never.
SPARE_CHOICES = ("on", "always", "off")
_SPARE_WORDS = {"1": "on", "true": "on", "yes": "on", "0": "off", "false": "off", "no": "off"}


# Which cells are profiled when the cell's metadata does not say (its "profile" key):
# "none", the toggled and marked ones only; "all", every cell (frontend_metadata).
PROFILE_CHOICES = ("none", "all")


class SettingsError(ValueError):
    """A setting that cannot be used; the message names the cause and the fix."""


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


def flag(key: str, value: Any) -> bool:
    """true | false, as a bool or a word (1/0, yes/no, on/off): measure_config's parser,
    its refusal a SettingsError."""
    try:
        return read_flag(key, value)
    except ValueError as e:
        raise SettingsError(str(e)) from None


@dataclass(frozen=True)
class MpiSettings:
    """The ``mpi`` setting of an MPI cell, checked (``mpi.config.check_mpi``, from the cell
    metadata or ``%%scorep_mpi``): its ranks and launcher."""

    ranks: int
    launcher: str | None = None
    args: tuple[str, ...] = ()
    gather: tuple[str, ...] = ()
    timeout: float | None = None
    fresh: bool = False

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ranks": self.ranks}
        if self.launcher:
            out["launcher"] = self.launcher
        if self.args:
            out["args"] = list(self.args)
        if self.gather:
            out["gather"] = list(self.gather)
        if self.timeout is not None:
            out["timeout"] = self.timeout
        if self.fresh:
            out["fresh"] = True
        return out


# A JSON Schema (or a part of one), as json.dumps writes it.
JsonSchema: TypeAlias = dict[str, object]
# A value as a setting holds it before it is applied (checked: see Setting.kind).
SettingValue: TypeAlias = str | bool | int | float | list[str] | MpiSettings | None

# --- every setting, once -------------------------------------------------------------
#
# How a setting's value is read: ``word`` reads a ``%scorep key=value`` word, ``check``
# a value from the cell metadata or the JupyterLab settings (JSON) or a word read; a
# measurement setting's check is followed by the builtin tracer's rule for it
# (check_measure). ``json_schema``: what the cell metadata may hold (cell_metadata).


@dataclass(frozen=True)
class Kind:
    hint: str  # what %scorep's help shows after key=

    def word(self, key: str, text: str) -> SettingValue:
        return text

    def check(self, key: str, value: Any) -> SettingValue:
        return value

    def json_schema(self) -> JsonSchema:
        return {}


@dataclass(frozen=True)
class Choice(Kind):
    choices: tuple[str, ...] = ()
    # words a cell may write for "not set" (the default decides): isolation's "auto"
    unset: tuple[str, ...] = ()

    def check(self, key: str, value: Any) -> SettingValue:
        if value not in self.choices:
            raise SettingsError(f"{key} must be one of {', '.join(self.choices)}, not {value!r}")
        return str(value)

    def json_schema(self) -> JsonSchema:
        return {"type": "string", "enum": [*self.choices, *self.unset]}


@dataclass(frozen=True)
class Spare(Kind):
    def word(self, key: str, text: str) -> SettingValue:
        return spare_choice(key, text)

    def json_schema(self) -> JsonSchema:
        return {"type": "string", "enum": list(SPARE_CHOICES)}


@dataclass(frozen=True)
class Flag(Kind):
    def word(self, key: str, text: str) -> SettingValue:
        return flag(key, text)

    def check(self, key: str, value: Any) -> SettingValue:
        if not isinstance(value, bool):
            raise SettingsError(f"{key} must be true or false, not {value!r}")
        return value

    def json_schema(self) -> JsonSchema:
        return {"type": "boolean"}


@dataclass(frozen=True)
class Whole(Kind):
    def word(self, key: str, text: str) -> SettingValue:
        try:
            return None if text.lower() in ("", "none") else int(text)
        except ValueError:
            raise SettingsError(f"{key} must be a whole number, not {text!r}") from None

    def check(self, key: str, value: Any) -> SettingValue:
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise SettingsError(f"{key} must be a whole number >= 0, not {value!r}")
        return value

    def json_schema(self) -> JsonSchema:
        return {"type": "integer", "minimum": 0}


@dataclass(frozen=True)
class Seconds(Kind):
    def word(self, key: str, text: str) -> SettingValue:
        try:
            return float(text)
        except ValueError:
            raise SettingsError(f"{key} must be seconds, not {text!r}") from None

    def check(self, key: str, value: Any) -> SettingValue:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise SettingsError(f"{key} must be seconds > 0, not {value!r}")
        return value

    def json_schema(self) -> JsonSchema:
        return {"type": "number", "exclusiveMinimum": 0}


@dataclass(frozen=True)
class Modules(Kind):
    def check(self, key: str, value: Any) -> SettingValue:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SettingsError(f"{key} must be a list of module names, not {value!r}")
        return value

    def json_schema(self) -> JsonSchema:
        return {"type": ["string", "array"], "items": {"type": "string"}}


@dataclass(frozen=True)
class FilePath(Kind):
    def json_schema(self) -> JsonSchema:
        return {"type": "string", "minLength": 1}


@dataclass(frozen=True)
class Mpi(Kind):
    def json_schema(self) -> JsonSchema:
        return {"type": "object"}


CELL = "cell"  # the cell's metadata and the JupyterLab settings (cell_metadata)
MAGIC = "%scorep"  # the line magic


@dataclass(frozen=True)
class Setting:
    """One setting: its name, how its value is read, what it means (the README's table
    says the same), and where it may be set: CELL, MAGIC, and the environment variable
    that sets it (``SCOREP_KERNEL_*``), if any. ``measure``: one of the builtin tracer's
    settings (MeasureConfig)."""

    name: str
    kind: Kind
    doc: str
    where: tuple[str, ...]
    measure: bool = False

    @property
    def default(self) -> object:
        """What holds when nothing sets it: MeasureConfig's field, or KernelSettings'."""
        if self.name == "exclude_defaults":
            return True
        if self.measure:
            return getattr(MeasureConfig(), SETTING_FIELDS[self.name])
        if self.name in {f.name for f in fields(KernelSettings)}:
            return getattr(KernelSettings(), self.name)
        return None

    @property
    def environ(self) -> str | None:
        return next((w for w in self.where if w.startswith("SCOREP_KERNEL_")), None)


_MEASURE = (CELL, MAGIC)
SETTINGS: tuple[Setting, ...] = (
    Setting(
        "profile",
        Choice("none|all", PROFILE_CHOICES),
        "none: the cells toggled in JupyterLab or marked %%execute_with_scorep; all: every "
        'cell (a cell\'s own "profile": false keeps it out)',
        (MAGIC, "SCOREP_KERNEL_PROFILE"),
    ),
    Setting(
        "backend",
        Choice("|".join(BACKENDS), BACKENDS),
        "auto | scorep | builtin: what measures the cell",
        (CELL, MAGIC, "SCOREP_KERNEL_BACKEND"),
    ),
    Setting(
        "isolation",
        Choice("|".join(ISOLATIONS), ISOLATIONS, ("auto",)),
        "subprocess | inprocess (builtin only) | auto: where the cell runs",
        (CELL, MAGIC, "SCOREP_KERNEL_ISOLATION"),
    ),
    Setting(
        "spare_worker",
        Spare("|".join(SPARE_CHOICES)),
        "on: a spare worker once the notebook profiles in a subprocess; always: from the "
        "start; off: never",
        (MAGIC, "SCOREP_KERNEL_SPARE_WORKER"),
    ),
    Setting(
        "spare_template",
        Flag("true|false"),
        "builtin spares forked from a preloaded template (worker.pool) (true/false)",
        (MAGIC, "SCOREP_KERNEL_SPARE_TEMPLATE"),
    ),
    Setting(
        "experiment_dir",
        FilePath("DIR"),
        "parent directory of the run's experiment directory",
        (CELL, MAGIC),
    ),
    Setting(
        "filter_file",
        FilePath("FILE"),
        "a Score-P filter file for the run (SCOREP_FILTERING_FILE; Score-P only)",
        (CELL,),
    ),
    Setting(
        "include", Modules("a,b"), "modules to trace (list, or comma-separated)", _MEASURE, True
    ),
    Setting(
        "exclude",
        Modules("c,d"),
        "modules not to trace (list, or comma-separated)",
        _MEASURE,
        True,
    ),
    Setting(
        "max_depth",
        Whole("N"),
        "deepest call level recorded (whole number, null: no limit)",
        _MEASURE,
        True,
    ),
    Setting(
        "event_cap",
        Whole("N"),
        "stop recording after this many events (0 or null: no cap)",
        _MEASURE,
        True,
    ),
    Setting(
        "metric_interval",
        Seconds("S"),
        "seconds between system metric samples (> 0)",
        _MEASURE,
        True,
    ),
    Setting(
        "c_functions",
        Flag("true|false"),
        "record calls of C functions too (true/false)",
        _MEASURE,
        True,
    ),
    Setting(
        "imports_as_regions",
        Flag("true|false"),
        "each `import x` as one region `import:x` (true/false)",
        _MEASURE,
        True,
    ),
    Setting(
        "exclude_defaults",
        Flag("true|false"),
        "leave IPython, ipykernel and the kernel out (true/false)",
        _MEASURE,
        True,
    ),
    Setting(
        "accelerators",
        Flag("true|false"),
        "record PyTorch operators and GPU activity (torch.profiler; Score-P's CUDA adapter) "
        "(true/false)",
        _MEASURE,
        True,
    ),
    Setting(
        "io",
        Choice("|".join(IO_CHOICES), IO_CHOICES),
        "posix: record file I/O (Score-P's POSIX I/O adapter; Python's open/read/write/close "
        "under the builtin tracer); none: not",
        _MEASURE,
        True,
    ),
    Setting(
        "mpi",
        Mpi("-"),
        'run the cell as MPI ranks: {"ranks": N, "launcher", "args", "gather", "timeout"}',
        (CELL,),
    ),
)
SETTING: dict[str, Setting] = {s.name: s for s in SETTINGS}
# Passed through to measure.MeasureConfig.from_mapping.
MEASURE_KEYS = tuple(s.name for s in SETTINGS if s.measure)
CELL_KEYS = tuple(s.name for s in SETTINGS if CELL in s.where)
MAGIC_KEYS = tuple(s.name for s in SETTINGS if MAGIC in s.where)


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
    return str(value)


def check_measure(values: Mapping[str, Any]) -> dict[str, SettingValue]:
    """The measurement settings, each checked by its kind, then by the tracer's rule for
    it; None values are left out (the default holds)."""
    out: dict[str, SettingValue] = {}
    for key, value in values.items():
        setting = SETTING.get(key)
        if setting is None or not setting.measure:
            raise SettingsError(
                f"unknown measurement setting {key!r}: use {', '.join(MEASURE_KEYS)}"
            )
        if value is not None:
            out[key] = setting.kind.check(key, value)
    # then the tracer's own rules, in the order MeasureConfig.from_mapping meets them
    try:
        for key in sorted(out, key=lambda k: (k != "exclude", MEASURE_KEYS.index(k))):
            check_setting(key, out[key])
    except ValueError as e:
        raise SettingsError(f"measurement settings rejected: {e}") from None
    return out


def measure_config(values: Mapping[str, SettingValue]) -> MeasureConfig:
    """The builtin tracer's settings from checked measurement settings (check_measure)."""
    try:
        return MeasureConfig.from_mapping(values)
    except ValueError as e:  # checked before: a bug, said as the tracer says it
        raise SettingsError(f"measurement settings rejected: {e}") from None


@dataclass
class CellSettings:
    backend: str  # "scorep" | "builtin" (resolved)
    isolation: str
    measure: MeasureConfig  # the builtin tracer's settings, built once (resolve)
    run: str | None = None  # multi-cell run id
    last: bool = False
    experiment_parent: str | None = (
        None  # where run directories go (None: <cwd>/scorep-experiments)
    )
    filter_file: str | None = None  # Score-P filter file for this run (SCOREP_FILTERING_FILE)
    # MPI cells: the run's ranks and launcher; the isolation is then MPI_ISOLATION
    mpi: MpiSettings | None = None
    # how large buffers travel to a worker ("shm", or None: chosen), %%marshalling_settings
    state_transport: str | None = None
    # tools the panel opens the run's files in when they are ready (%%enable_vampir_launch...)
    open_tools: tuple[str, ...] = ()


@dataclass
class KernelSettings:
    backend: str = "auto"
    isolation: str | None = None  # None: the backend's default
    # the measurement settings %scorep set (check_measure), under the cell's own
    measure: dict[str, SettingValue] = field(default_factory=dict)
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
        """The settings the ``SCOREP_KERNEL_*`` variables give (SETTINGS: ``environ``); a
        variable that cannot be used is ignored, and ``%scorep`` says so."""
        environ = os.environ if environ is None else environ
        settings = cls()
        for setting in SETTINGS:
            name = setting.environ
            text = environ.get(name, "").strip() if name is not None else ""
            if name is None or not text:
                continue
            kind = setting.kind
            try:  # a bad variable must not stop the kernel
                if isinstance(kind, Choice):
                    value: SettingValue = _check_choice(name, text.lower(), kind.choices)
                else:
                    value = kind.word(name, text)
            except SettingsError as e:
                settings.environ_problem = f"{e} (the variable is ignored)"
                continue
            setattr(settings, setting.name, value)
            if setting.name == "profile":
                settings.profile_chosen = True
        return settings

    def update_from_line(self, line: str) -> list[str]:
        """Apply ``key=value`` words of ``%scorep``; returns what changed, in words."""
        updates: dict[str, SettingValue] = {}
        for word in shlex.split(line):
            if "=" not in word:
                raise SettingsError(
                    f"%scorep expects key=value words, not {word!r} "
                    f"(e.g. %scorep backend=builtin isolation=subprocess max_depth=20)"
                )
            key, text = word.split("=", 1)
            key = key.strip().replace("-", "_")
            setting = SETTING.get(key)
            if setting is not None and MAGIC in setting.where:
                updates[key] = setting.kind.word(key, text)
            else:
                updates[key] = text  # update names it
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
                raise SettingsError(f"unknown setting {key!r}: use {', '.join(MAGIC_KEYS)}")
        measure = check_measure(measure)
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
        config = measure_config(check_measure(measure))
        if mpi is not None and not isinstance(mpi, MpiSettings):
            raise SettingsError(
                f"mpi must be checked first (cell_metadata, %%scorep_mpi), not {mpi!r}"
            )
        parent = cell.get("experiment_dir") or self.experiment_dir or None
        if parent is not None and not isinstance(parent, str):
            raise SettingsError(f"experiment_dir must be a directory path, not {parent!r}")
        return CellSettings(
            backend=backend,
            isolation=isolation,
            measure=config,
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
            "Set with: %scorep "
            + " ".join(f"{s.name}={s.kind.hint}" for s in SETTINGS if MAGIC in s.where),
        ]
        return "\n".join(lines)
