"""The experiment directory: the one contract between the kernel and the server.

Every profiled run writes one directory (format version 1)::

    manifest.json                   what ran, how, and how it ended (see ``new_manifest``)
    traces.otf2, traces.def, traces/  the OTF2 archive
    profile.cubex                   the CUBE4 call-path profile
    metrics.json + metrics.npz      system metric samples (see ``write_metrics``)
    .index/                         caches the server may add

Manifest fields written when a run ends, besides those of ``new_manifest``: ``end_ns``,
``wall_s``, ``status``, ``errors``, ``measurement`` (the tracer's notes), and ``timings``
(additive, optional): ``{phase: seconds}``, where the profiled cells' time in the kernel
went, summed over the run's cells, the phases one after another (so they add up to the
cells' time from execute_request to the run's end). Phases: ``kernel_dispatch``,
``worker_spare_ready`` | ``worker_spare_starting`` | ``worker_fresh`` (getting a worker
process), ``start_run_wait`` (the worker finishing its preload imports), ``measure_start``,
``pack`` / ``unpack`` / ``apply`` (the namespace, in the kernel), ``to_worker``,
``worker_unpack``, ``worker_apply``, ``cell``, ``worker_pack`` (in the worker),
``messages`` (the rest of the round trips), ``tracer_stop``, ``recording_build``,
``summary``, ``manifest``. Readers must accept phases they do not know.

The server imports this module and nothing else from ``scorep_kernel``; keep it free of
kernel imports (standard library and numpy only).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import platform
import secrets
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1

MANIFEST = "manifest.json"
OTF2_ANCHOR = "traces.otf2"
OTF2_DEFS = "traces.def"
OTF2_EVENTS_DIR = "traces"
CUBEX = "profile.cubex"
METRICS_SCHEMA = "metrics.json"
METRICS_DATA = "metrics.npz"
INDEX_DIR = ".index"
DEFAULT_PARENT = "scorep-experiments"

BACKENDS = ("scorep", "builtin")
ISOLATIONS = ("subprocess", "inprocess")


class ExperimentError(Exception):
    """A directory that is not a readable experiment; the message says why."""


def new_experiment_id(now: _dt.datetime | None = None) -> str:
    """UTC time plus a random suffix: sortable, and unique across concurrent kernels."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%S_%fZ") + "-" + secrets.token_hex(3)


def default_parent(cwd: str | os.PathLike | None = None) -> Path:
    return Path(cwd or os.getcwd()) / DEFAULT_PARENT


def create_experiment_dir(
    cwd: str | os.PathLike | None = None, explicit: str | os.PathLike | None = None
) -> tuple[str, Path]:
    """Make a fresh experiment directory and return ``(id, path)``.

    ``explicit`` is the user's ``SCOREP_EXPERIMENT_DIRECTORY``, used as given (as plain
    Score-P does); otherwise ``<cwd>/scorep-experiments/<id>/``.
    """
    exp_id = new_experiment_id()
    if explicit:
        path = Path(explicit).expanduser().absolute()
        path.mkdir(parents=True, exist_ok=True)
        return exp_id, path
    path = default_parent(cwd).absolute() / exp_id
    path.mkdir(parents=True, exist_ok=False)
    return exp_id, path


def new_manifest(
    exp_id: str,
    *,
    backend: str,
    isolation: str,
    cells: list[dict[str, Any]] | None = None,
    scorep_env: dict[str, str] | None = None,
    binding_args: list[str] | None = None,
    start_ns: int | None = None,
) -> dict[str, Any]:
    """The manifest as first written, with status "running"."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    if isolation not in ISOLATIONS:
        raise ValueError(f"isolation must be one of {ISOLATIONS}, not {isolation!r}")
    import time

    return {
        "format_version": FORMAT_VERSION,
        "id": exp_id,
        "backend": backend,
        "isolation": isolation,
        "status": "running",
        # [{cell_id, execution_count, code}]
        "cells": list(cells or []),
        "start_ns": int(start_ns if start_ns is not None else time.time_ns()),
        "end_ns": None,
        "wall_s": None,
        "hostname": socket.gethostname(),
        "python_version": platform.python_version(),
        "python_executable": sys.executable,
        "scorep_env": dict(scorep_env or {}),
        "binding_args": list(binding_args or []),
        # relative names of the files written so far: {"otf2": "traces.otf2", ...}
        "files": {},
        # the measurement's own account: events, dropped, filters, event cap ...
        "measurement": {},
        # files being finished in the background: "pending" | "ready" | "failed"
        "files_status": "pending",
        "errors": [],
    }


def _atomic_write_json(path: Path, data: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".manifest-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True, default=str)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def file_lock(lock_path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` (created if missing) for the block:
    serialises writers across processes. Also used by the server's index builder."""
    with open(lock_path, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _manifest_lock(exp_dir: Path) -> contextlib.AbstractContextManager[None]:
    # Kernel, worker and background writer may all update one manifest.
    return file_lock(exp_dir / ".manifest.lock")


def write_manifest(exp_dir: str | os.PathLike, manifest: dict[str, Any]) -> None:
    exp_dir = Path(exp_dir)
    with _manifest_lock(exp_dir):
        _atomic_write_json(exp_dir / MANIFEST, manifest)


def update_manifest(exp_dir: str | os.PathLike, **changes: Any) -> dict[str, Any]:
    """Read-modify-write under a lock. Dict values for "files" and "measurement" are merged,
    "errors" entries are appended; other keys are replaced. Returns the new manifest."""
    exp_dir = Path(exp_dir)
    with _manifest_lock(exp_dir):
        manifest = read_manifest(exp_dir)
        for key, value in changes.items():
            if key in ("files", "measurement") and isinstance(value, dict):
                manifest.setdefault(key, {}).update(value)
            elif key == "errors":
                manifest.setdefault("errors", []).extend(value)
            else:
                manifest[key] = value
        _atomic_write_json(exp_dir / MANIFEST, manifest)
        return manifest


def read_manifest(exp_dir: str | os.PathLike) -> dict[str, Any]:
    """The manifest, checked for the fields everything else relies on."""
    path = Path(exp_dir) / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ExperimentError(f"{exp_dir} is not an experiment: it has no {MANIFEST}") from None
    except OSError as e:
        raise ExperimentError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ExperimentError(f"{path} is not UTF-8 text") from None
    try:
        manifest = json.loads(text)
    except ValueError as e:
        raise ExperimentError(f"{path} is not valid JSON ({e})") from None
    if not isinstance(manifest, dict):
        raise ExperimentError(f"{path} does not hold a JSON object")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise ExperimentError(
            f"{path} has format version {version!r}; this version reads {FORMAT_VERSION}"
        )
    for key in ("id", "backend", "status"):
        if not isinstance(manifest.get(key), str):
            raise ExperimentError(f"{path} lacks the field {key!r}")
    return manifest


def list_experiments(parent: str | os.PathLike) -> list[tuple[Path, dict[str, Any]]]:
    """``(path, manifest)`` for each readable experiment directly under ``parent``, newest
    first. Unreadable ones are skipped."""
    parent = Path(parent)
    found = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            manifest = read_manifest(entry.path)
        except ExperimentError:
            continue
        found.append((Path(entry.path), manifest))
    found.sort(key=lambda pm: (pm[1].get("start_ns") or 0, pm[1]["id"]), reverse=True)
    return found


# --- metrics -------------------------------------------------------------------------
#
# metrics.json: {"format_version": 1, "interval_s": 0.1, "clock": "epoch_ns",
#                "series": [{"key", "label", "unit", "group", "description"}],
#                "notes": ["No NVIDIA GPU found: GPU metrics skipped."]}
# metrics.npz:  t_ns   int64   [n]       sample times, ns since the epoch
#               values float64 [n, k]    one column per series, in "series" order
#
# Keys in use: cpu.total (%), cpu.core<i> (%), mem.rss (bytes, the measured process tree),
# mem.used (bytes, system), disk.read / disk.write (bytes/s), net.recv / net.sent (bytes/s),
# gpu<i>.util (%), gpu<i>.mem (bytes). group is one of cpu, memory, io, network, gpu.


def write_metrics(
    exp_dir: str | os.PathLike,
    series: list[dict[str, str]],
    t_ns: Any,
    values: Any,
    *,
    interval_s: float,
    notes: list[str] | None = None,
) -> None:
    import numpy as np

    exp_dir = Path(exp_dir)
    t = np.asarray(t_ns, dtype=np.int64)
    v = np.asarray(values, dtype=np.float64).reshape(len(t), len(series))
    with open(exp_dir / METRICS_DATA, "wb") as f:
        np.savez(f, t_ns=t, values=v)
    _atomic_write_json(
        exp_dir / METRICS_SCHEMA,
        {
            "format_version": FORMAT_VERSION,
            "interval_s": interval_s,
            "clock": "epoch_ns",
            "series": series,
            "notes": list(notes or []),
        },
    )


def read_metrics(exp_dir: str | os.PathLike) -> tuple[dict[str, Any], Any, Any]:
    """``(schema, t_ns, values)``; raises ExperimentError for missing or malformed files."""
    import numpy as np

    exp_dir = Path(exp_dir)
    try:
        schema = json.loads((exp_dir / METRICS_SCHEMA).read_text(encoding="utf-8"))
        with np.load(exp_dir / METRICS_DATA, allow_pickle=False) as data:
            t, v = data["t_ns"], data["values"]
    except FileNotFoundError:
        raise ExperimentError(f"{exp_dir} has no metric samples") from None
    except Exception as e:  # numpy raises several types for damaged files
        raise ExperimentError(f"metric samples in {exp_dir} are unreadable: {e}") from None
    series = schema.get("series") if isinstance(schema, dict) else None
    if (
        not isinstance(series, list)
        or t.ndim != 1
        or v.ndim != 2
        or v.shape != (len(t), len(series))
    ):
        raise ExperimentError(f"metric samples in {exp_dir} do not match their schema")
    return schema, t, v
