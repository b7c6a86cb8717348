"""What the builtin tracer records: filters, depth, event cap, metric interval."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, overload

# Jupyter's and the kernel's own machinery. A region from these modules is dropped together
# with everything it calls (print() inside a cell would otherwise show ipykernel's stream
# and zmq internals under the user's function).
DEFAULT_EXCLUDE: tuple[str, ...] = (
    "scorep_kernel",
    "IPython",
    "ipykernel",
    "ipython_genutils",
    "traitlets",
    "jupyter_client",
    "jupyter_core",
    "comm",
    "zmq",
    "tornado",
    "debugpy",
    "_pydevd_bundle",
    "pydevd",
    "viztracer",
    "matplotlib_inline",
)

DEFAULT_EVENT_CAP = 5_000_000
DEFAULT_METRIC_INTERVAL_S = 0.1

IO_CHOICES = ("posix", "none")


def _modules(key: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ValueError(
            f"{key} must be a list of module prefixes or a comma-separated string, not {value!r}"
        )
    out = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"{key} entries must be module names (strings), not {item!r}")
        item = item.strip()
        if not item:
            continue
        if not all(part.isidentifier() for part in item.split(".")):
            raise ValueError(
                f"{key} entry {item!r} is not a module name: use dotted Python names "
                "such as 'numpy' or 'sklearn.linear_model'"
            )
        out.append(item)
    return tuple(out)


@overload
def _whole(key: str, value: Any, minimum: int, allow_none: Literal[False]) -> int: ...
@overload
def _whole(key: str, value: Any, minimum: int, allow_none: bool) -> int | None: ...
def _whole(key: str, value: Any, minimum: int, allow_none: bool) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        if allow_none:
            return None
        raise ValueError(f"{key} must be a whole number >= {minimum}, not {value!r}")
    if isinstance(value, bool):
        raise ValueError(f"{key} must be a whole number >= {minimum}, not {value!r}")
    if isinstance(value, str):
        try:
            value = int(value.strip().replace("_", ""))
        except ValueError:
            raise ValueError(f"{key} must be a whole number >= {minimum}, not {value!r}") from None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or value < minimum:
        raise ValueError(f"{key} must be a whole number >= {minimum}, not {value!r}")
    return value


def _seconds(key: str, value: Any) -> float:
    try:
        if isinstance(value, bool):
            raise TypeError
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be seconds > 0 (e.g. 0.1), not {value!r}") from None
    if not seconds > 0 or seconds > 3600:
        raise ValueError(f"{key} must be seconds > 0 and <= 3600 (e.g. 0.1), not {value!r}")
    return seconds


TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def flag(key: str, value: Any) -> bool:
    """true | false: a bool, 0 or 1, or a word (1/0, true/false, yes/no, on/off). The one
    flag parser: the kernel's settings read theirs with it too (settings.flag)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    word = value.strip().lower() if isinstance(value, str) else None
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"{key} must be true or false, not {value!r}")


def _io(key: str, value: Any) -> str:
    if value not in IO_CHOICES:
        raise ValueError(f"{key} must be posix or none, not {value!r}")
    return str(value)


# Each field's rule, in the order they are checked; errors name the setting
# (``metric_interval``), not the field. ``instrumenter_file`` is a path, taken as it is.
_RULES: dict[str, tuple[str, Callable[[str, Any], Any]]] = {
    "include": ("include", _modules),
    "exclude": ("exclude", _modules),
    "max_depth": ("max_depth", lambda k, v: _whole(k, v, 0, allow_none=True)),
    "event_cap": ("event_cap", lambda k, v: _whole(k, v, 2, allow_none=False)),
    "metric_interval_s": ("metric_interval", _seconds),
    "imports_as_regions": ("imports_as_regions", flag),
    "c_functions": ("c_functions", flag),
    "accelerators": ("accelerators", flag),
    "instrumenter": ("instrumenter", flag),
    "io": ("io", _io),
}


@dataclass(frozen=True)
class MeasureConfig:
    """Filters are module-name prefixes ("numpy" matches numpy and numpy.linalg).

    ``exclude``: a region from such a module is not recorded, nor anything it calls.
    ``include``: always recorded, even below an excluded region (include wins).
    ``max_depth``: call levels kept below a cell (1 = what the cell calls directly, 0 = cells only).
    ``event_cap``: enter+leave events recorded before recording stops.
    ``c_functions``: also record builtin (C) functions such as time.sleep or len; off by
    default as in Score-P's Python bindings (it multiplies the events of typical code).
    ``accelerators``: record PyTorch's operators and the device's activity through
    torch.profiler when the run uses torch (scorep_kernel.accel); on by default.
    ``instrumenter``: Python functions recorded from the start (false: ``--noinstrumenter``);
    ``instrumenter_file``: ``--instrumenter-file``, run before the first cell.
    ``io``: "posix" records Python's file I/O (open, read, write, close, bytes) as OTF2 I/O
    events (measure.io_recorder).
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    max_depth: int | None = None
    event_cap: int = DEFAULT_EVENT_CAP
    metric_interval_s: float = DEFAULT_METRIC_INTERVAL_S
    imports_as_regions: bool = True
    c_functions: bool = False
    accelerators: bool = True
    instrumenter: bool = True
    instrumenter_file: str | None = None
    io: str = "none"

    def __post_init__(self) -> None:
        for name, (key, rule) in _RULES.items():
            object.__setattr__(self, name, rule(key, getattr(self, name)))

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any] | None) -> MeasureConfig:
        """From an env-like or cell-metadata dict. ``exclude`` given here is added to the
        defaults (the machinery stays out); ``exclude_defaults: false`` drops them."""
        if settings is None:
            return cls()
        if not isinstance(settings, Mapping):
            raise ValueError(f"measurement settings must be a mapping, not {settings!r}")
        kwargs: dict[str, Any] = {}
        keep_defaults = True
        for key, value in settings.items():
            if key == "exclude_defaults":
                keep_defaults = flag(key, value)
                continue
            if key not in SETTING_FIELDS:
                accepted = sorted(set(SETTING_FIELDS) - {"metric_interval_s"}) + [
                    "exclude_defaults"
                ]
                raise ValueError(
                    f"unknown measurement setting {key!r}: accepted keys are " + ", ".join(accepted)
                )
            if value is None and key not in ("max_depth",):
                continue
            kwargs[SETTING_FIELDS[key]] = value
        exclude = _modules("exclude", kwargs.pop("exclude", ()))
        base = DEFAULT_EXCLUDE if keep_defaults else ()
        kwargs["exclude"] = base + tuple(m for m in exclude if m not in base)
        return cls(**kwargs)


# A setting's name -> the field it sets: each field by its own name, and metric_interval
# (the cell setting) for metric_interval_s.
SETTING_FIELDS: dict[str, str] = {
    **{f.name: f.name for f in fields(MeasureConfig)},
    "metric_interval": "metric_interval_s",
}


def check_setting(key: str, value: Any) -> None:
    """The tracer's rule for one measurement setting (what MeasureConfig checks of the
    field it sets); ValueError in the words from_mapping would use."""
    if key == "exclude_defaults":
        flag(key, value)
        return
    rule = _RULES.get(SETTING_FIELDS.get(key, ""))
    if rule is not None:
        rule[1](rule[0], value)
