"""The experiment directory: the one contract between the kernel and the server.

Every profiled run writes one directory (format version 1)::

    manifest.json                   what ran, how, and how it ended (``manifest``)
    traces.otf2, traces.def, traces/  the OTF2 archive
    profile.cubex                   the CUBE4 call-path profile
    metrics.json + metrics.npz      system metric samples (see ``write_metrics``)
    .index/                         the server's (see "Index folder" below)

The contract is four modules of the standard library only, which the server imports:
this one (the directory: its file names, ids, locks and metric files), ``manifest``
(manifest.json: its type, words, reading and writing, and who settles a run that never
said how it ended), ``region_words`` (what a trace's regions are called and stand for)
and ``otf2_layout`` (the builtin writer's OTF2 event bytes). Both sides use their
constants, never the literals; src/api/experimentTypes.ts spells the same values as TypeScript types,
and server_ext/tests/test_contract.py checks that they agree.

The format stays version 1 and changes only additively: new keys and new files may
appear; readers ignore what they do not know.

The server imports these modules and nothing else from ``scorep_kernel`` (but for
``jupyter scorep run``, which sends the kernel ``profiled_cells_notice``'s message and
imports that module for its contract alone); keep them free of kernel imports (standard
library only at import time; numpy is imported inside the metrics functions that need
it).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import secrets
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1

MANIFEST = "manifest.json"
OTF2_ANCHOR = "traces.otf2"
OTF2_DEFS = "traces.def"
OTF2_EVENTS_DIR = "traces"
CUBEX = "profile.cubex"
# The torch.profiler (Kineto) trace a cell that used PyTorch recorded, as torch wrote it
# (Chrome trace JSON): HTA, TensorBoard and Perfetto read it; the OTF2 trace holds the same
# operators and device activity. Only when torch.profiler ran.
KINETO_TRACE = "torch.pt.trace.json"
METRICS_SCHEMA = "metrics.json"
METRICS_DATA = "metrics.npz"
INDEX_DIR = ".index"
DEFAULT_PARENT = "scorep-experiments"

# --- index folder ----------------------------------------------------------------------
#
# ``<experiment>/.index/`` belongs to the server: the kernel never writes or reads it, and
# tools that copy or clean experiments may drop it (it is rebuilt on demand). What lies
# inside (today ``trace-v3/``, see jupyterlab_scorep.trace.index_build) is not part of this
# contract: the server versions its own layout (INDEX_VERSION) and rebuilds an index it
# does not know, so changing it needs no new format version here.


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


def atomic_write_json(path: Path, data: Mapping[str, object]) -> None:
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
# gpu<i>.util (%), gpu<i>.mem (bytes), gpu<i>.proc_mem (bytes: the run's processes on the
# GPU), gpu<i>.sm (%, SM activity where NVML offers GPM). group is one of cpu, memory, io,
# network, gpu.


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
    atomic_write_json(
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
