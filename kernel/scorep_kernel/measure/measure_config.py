"""What the builtin tracer records: filters, depth, event cap, metric interval."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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

# Keys accepted by from_mapping (env-like or cell-metadata dicts) and what they set.
_KEYS = {
    "include": "include",
    "exclude": "exclude",
    "max_depth": "max_depth",
    "event_cap": "event_cap",
    "metric_interval": "metric_interval_s",
    "metric_interval_s": "metric_interval_s",
    "imports_as_regions": "imports_as_regions",
    "c_functions": "c_functions",
    "accelerators": "accelerators",
    "io": "io",
    # from the binding arguments (scorep_kernel.binding_args), not a cell setting
    "instrumenter": "instrumenter",
    "instrumenter_file": "instrumenter_file",
}


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


def _flag(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{key} must be true or false, not {value!r}")


@dataclass
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
        self.include = _modules("include", self.include)
        self.exclude = _modules("exclude", self.exclude)
        self.max_depth = _whole("max_depth", self.max_depth, 0, allow_none=True)
        self.event_cap = _whole("event_cap", self.event_cap, 2, allow_none=False)
        self.metric_interval_s = _seconds("metric_interval", self.metric_interval_s)
        self.imports_as_regions = _flag("imports_as_regions", self.imports_as_regions)
        self.c_functions = _flag("c_functions", self.c_functions)
        self.accelerators = _flag("accelerators", self.accelerators)
        self.instrumenter = _flag("instrumenter", self.instrumenter)
        if self.io not in ("posix", "none"):
            raise ValueError(f"io must be posix or none, not {self.io!r}")

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
                keep_defaults = _flag(key, value)
                continue
            if key not in _KEYS:
                accepted = sorted(set(_KEYS) - {"metric_interval_s"}) + ["exclude_defaults"]
                raise ValueError(
                    f"unknown measurement setting {key!r}: accepted keys are " + ", ".join(accepted)
                )
            if value is None and key not in ("max_depth",):
                continue
            kwargs[_KEYS[key]] = value
        exclude = _modules("exclude", kwargs.pop("exclude", ()))
        base = DEFAULT_EXCLUDE if keep_defaults else ()
        kwargs["exclude"] = base + tuple(m for m in exclude if m not in base)
        return cls(**kwargs)
