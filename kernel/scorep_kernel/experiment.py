"""The experiment directory: the one contract between the kernel and the server.

Every profiled run writes one directory (format version 1)::

    manifest.json                   what ran, how, and how it ended (see ``new_manifest``)
    traces.otf2, traces.def, traces/  the OTF2 archive
    profile.cubex                   the CUBE4 call-path profile
    metrics.json + metrics.npz      system metric samples (see ``write_metrics``)
    .index/                         the server's (see "Index folder" below)

This module owns every word the two sides exchange through that directory: file names,
manifest values (``RUN_STATUSES``, ``FILES_STATUSES``, ``BACKENDS``, ``ISOLATIONS``), the
region roles and how a trace carries them (``encode_region_role`` /
``decode_region_role``), and the region naming rule (``function_region_name`` ...). Both
sides use these constants, never the literals; src/api/experimentTypes.ts spells the same values as
TypeScript types, and server_ext/tests/test_contract.py checks that they agree.

Manifest fields written when a run ends, besides those of ``new_manifest``: ``end_ns``,
``wall_s``, ``status``, ``errors``, ``measurement`` (the tracer's notes), and ``timings``
(additive, optional): ``{phase: seconds}``, where the profiled cells' time in the kernel
went, summed over the run's cells, the phases one after another (so they add up to the
cells' time from execute_request to the run's end). Phases: ``kernel_dispatch``,
``worker_spare_ready`` | ``worker_spare_starting`` | ``worker_forked`` (from the spare
template, no spare at hand) | ``worker_fresh`` (getting a worker process), ``start_run_wait`` (the worker finishing its preload imports), ``measure_start``,
``pack`` / ``unpack`` / ``apply`` (the namespace, in the kernel), ``to_worker``,
``worker_unpack``, ``worker_apply``, ``cell``, ``worker_pack`` (in the worker),
``messages`` (the rest of the round trips), ``tracer_stop``, ``recording_build``,
``summary``, ``manifest``. Readers must accept phases they do not know.

**The cells' time** (additive), one definition everywhere (the panel's header, Runs, Compare,
GET summary, ``jupyter scorep run``): the cell regions on the threads that ran them, summed
over the run's cells. Where the builtin tracer measured it, ``cell_time`` holds it
(``cell_time_record``: ``time_s``; ``cpu_s`` running on a CPU, ``queue_s`` runnable but
queued for a CPU (the machine's load), ``wait_s`` the rest: sleep, lock, I/O, device, MPI;
``cells``: each cell's ``time_s``), ``wall_s`` is its ``time_s``, and ``run_s`` is the
run's elapsed time in the kernel, so ``run_s - wall_s`` is what the measurement itself cost
(worker, namespace transfer, tracer stop, building the recording; for a multi-cell run also
the time between its cells). Without ``cell_time`` (Score-P runs) ``wall_s`` is the run's
elapsed time as before.

``writers`` (additive): the processes that will say how the run ended (the kernel, and a
subprocess run's worker), each ``{pid, host, boot_id, start}`` (``start``: the process's
start time in clock ticks since boot, so a reused pid is told apart). A run whose manifest
still says "running" or files "pending" when every writer has ended (a kernel killed, or
shut down while an in-process run's files were written) is settled by whoever reads it
(``read_manifest``): status "crashed", files "failed", and an error saying why. Processes
of another host (or another boot) are never judged.

The format stays version 1 and changes only additively: new keys and new files may
appear; readers ignore what they do not know.

The server imports this module and nothing else from ``scorep_kernel`` (but for
``jupyter scorep run``, which sends the kernel ``profiled_cells_notice``'s message and
imports that module for its contract alone); keep it free of kernel imports (standard library only at import time; numpy is imported inside the
metrics functions that need it).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import functools
import hashlib
import json
import os
import platform
import re
import secrets
import socket
import sys
import tempfile
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    TypedDict,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

if TYPE_CHECKING:  # typing.Unpack from Python 3.11; only the type checker reads it here
    from typing_extensions import Unpack

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

BACKENDS = ("scorep", "builtin")
ISOLATIONS = ("subprocess", "inprocess")

# --- manifest "status": how the run went -----------------------------------------------
#
# "running" from the first write until the run ends; then the worst of what its cells did,
# in ENDED_STATUSES order (a multi-cell run where one cell raised and a later one was
# interrupted ends "interrupted").
STATUS_RUNNING = "running"
STATUS_OK = "ok"  # every cell ran to its end
STATUS_ERROR = "error"  # a cell raised an exception
STATUS_INTERRUPTED = "interrupted"  # a cell was interrupted, or the run aborted
STATUS_CRASHED = "crashed"  # the measured process died (crash, kill, out of memory)
ENDED_STATUSES = (STATUS_OK, STATUS_ERROR, STATUS_INTERRUPTED, STATUS_CRASHED)
RUN_STATUSES = (STATUS_RUNNING, *ENDED_STATUSES)


def worse_status(a: str, b: str) -> str:
    """The worse of two ended statuses (``ENDED_STATUSES`` order)."""
    return a if ENDED_STATUSES.index(a) >= ENDED_STATUSES.index(b) else b


# --- manifest "files_status": may the server read the files yet? ----------------------
#
# The trace and profile are finished after the cell's reply, in the background.
FILES_PENDING = "pending"  # still being written: the server answers 409 "not ready"
FILES_READY = "ready"  # written and complete
FILES_FAILED = "failed"  # writing them failed; "errors" says why (some files may exist)
FILES_UNAVAILABLE = "unavailable"  # nothing was measured, so no files will come
FILES_STATUSES = (FILES_PENDING, FILES_READY, FILES_FAILED, FILES_UNAVAILABLE)

# --- index folder ----------------------------------------------------------------------
#
# ``<experiment>/.index/`` belongs to the server: the kernel never writes or reads it, and
# tools that copy or clean experiments may drop it (it is rebuilt on demand). What lies
# inside (today ``trace-v2/``, see jupyterlab_scorep.trace.index_build) is not part of this
# contract: the server versions its own layout (INDEX_VERSION) and rebuilds an index it
# does not know, so changing it needs no new format version here.


class ExperimentError(Exception):
    """A directory that is not a readable experiment; the message says why."""


# --- regions: roles ------------------------------------------------------------------
#
# What a region of the trace and the profile stands for. The viewers draw them apart (a
# cell is a frame, an import a block, an artificial region a marker).
ROLE_FUNCTION = "function"  # a Python function, method or lambda (or a C function)
ROLE_USER = "user"  # a user region: scorep.user.region(...) or its builtin shim
ROLE_IMPORT = "import"  # one `import x`, shown as a single region
ROLE_CELL = "cell"  # one notebook cell of the run
ROLE_ARTIFICIAL = "artificial"  # made by the measurement: "event cap reached", a run root
# Accelerators (torch.profiler / Kineto, Score-P's CUDA adapter): a framework operator on a
# host thread (aten::mm), a runtime API call (cudaLaunchKernel, cudaMemcpyAsync), and on a
# device stream a kernel, a memory copy or a memory set.
ROLE_OPERATOR = "operator"
ROLE_RUNTIME = "runtime"
ROLE_KERNEL = "kernel"
ROLE_MEMCPY = "memcpy"
ROLE_MEMSET = "memset"
DEVICE_ROLES = (ROLE_KERNEL, ROLE_MEMCPY, ROLE_MEMSET)
REGION_ROLES = (
    ROLE_FUNCTION, ROLE_USER, ROLE_IMPORT, ROLE_CELL, ROLE_ARTIFICIAL,
    ROLE_OPERATOR, ROLE_RUNTIME, *DEVICE_ROLES,
)  # fmt: skip

# How a trace carries the role. OTF2's own region roles cannot tell these apart (Score-P
# writes user regions, imports and functions all as FUNCTION), so the builtin writer
# stores the role word itself as the region's *description*, and sets the OTF2 region
# role and paradigm as Score-P would (formats.otf2_writer.REGION_ROLES). A reader takes
# the description when it is one of REGION_ROLES; otherwise (a Score-P trace, whose
# descriptions are its own) the OTF2 region role decides ARTIFICIAL -> "artificial", and
# the name the rest (the naming rule below): a cell's own region (``cell_region_label``)
# -> "cell", ``import:<module>`` -> "import", ``user:<name>`` -> "user", anything else ->
# "function".


_RUNTIME_NAME = re.compile(r"^(cuda|cu|hip|nccl)[A-Z]\w*$")


def encode_region_role(role: str) -> str:
    """The OTF2 region description that carries ``role``."""
    if role not in REGION_ROLES:
        raise ValueError(f"region role must be one of {REGION_ROLES}, not {role!r}")
    return role


def decode_region_role(description: str | None, otf2_region_role: str = "", name: str = "") -> str:
    """The role of a region read from any OTF2 trace (or CUBE4 profile), from its
    description, its OTF2 region role (the enum's name, any case: "ARTIFICIAL", "function"
    ...) and its name."""
    if description in REGION_ROLES:
        return description
    if otf2_region_role.lower() == ROLE_ARTIFICIAL:
        return ROLE_ARTIFICIAL
    # Score-P's CUDA adapter: kernels are KERNEL regions, copies DATA_TRANSFER ones, and
    # the API it wraps keeps CUDA's names (cudaLaunchKernel, cuMemcpyHtoDAsync_v2).
    if otf2_region_role.upper() == "KERNEL":
        return ROLE_KERNEL
    if otf2_region_role.upper() == "DATA_TRANSFER":
        return ROLE_MEMCPY
    if name and _RUNTIME_NAME.match(name):
        return ROLE_RUNTIME
    if name and cell_region_label(name) is not None:
        return ROLE_CELL
    module = region_module(name) if name else None
    if module == IMPORT_MODULE:
        return ROLE_IMPORT
    if module == USER_MODULE:
        return ROLE_USER
    return ROLE_FUNCTION


# --- regions: names --------------------------------------------------------------------
#
# Regions are named as Score-P's Python bindings name them, so a trace of the builtin
# tracer and one of Score-P read alike (and compare by name):
#
#   module:function        a module-level function           (__main__:f, time:sleep)
#   module.Class:method    a method, named after its class   (pandas.core.frame.DataFrame:sum)
#   user:<name>            a user region, scorep.user.region("<name>"); a user region given
#                          a module is <module>:<name>
#   import:<module>        an `import <module>` shown as one region
#
# Code of notebook cells runs in ``__main__``. A cell's own region is named by its label
# (``cell [<execution count>]`` unless the user named it) with group "cell". The region
# group, which the viewers colour by, is the module (for imports the imported top-level
# package; for user regions their module, "user" by default). A reader that finds no group
# takes the part of the name before the first ":" (``region_module``); a name without ":"
# comes from another tool, and the reader falls back to the region's source file.
USER_MODULE = "user"
IMPORT_MODULE = "import"


def function_region_name(module: str, function: str, owner: str | None = None) -> str:
    """``module:function``, or ``module.Owner:function`` for a method of class Owner."""
    return f"{module}.{owner}:{function}" if owner else f"{module}:{function}"


def user_region_name(name: str, module: str = USER_MODULE) -> str:
    return f"{module}:{name}"


def unclosed_regions_note(names: list[str]) -> str:
    """What a cell says of the user regions it left open (closed at its end, under either
    backend: Score-P would otherwise abort with an inconsistent profile)."""
    listed = ", ".join(repr(n) for n in names)
    return (
        f"scorep: user region{'s' if len(names) > 1 else ''} {listed} left open by the cell: "
        "closed at its end (end each scorep.user.region_begin with region_end).\n"
    )


def import_region_name(module: str) -> str:
    return f"{IMPORT_MODULE}:{module}"


def region_module(name: str) -> str | None:
    """The module part of a region name (before the first ":"), None when it has none."""
    return name.split(":", 1)[0] if ":" in name else None


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


# --- the manifest, typed ------------------------------------------------------------
#
# TypedDicts, not dataclasses: the manifest is JSON that changes additively (readers keep
# and pass on keys they do not know, the server answers it as it is), so its type is the
# JSON object itself. Only ``format_version``, ``id``, ``backend`` and ``status`` are
# certain; every other key may be missing from an older run's directory. src/api.ts spells
# the same types (IManifest ...), and server_ext/tests/test_contract.py checks that the
# field names and their optionality agree. ``read_manifest`` checks every key it knows
# against these types (``_check``), so a reader may rely on them.


class CellRecord(TypedDict, total=False):
    """One entry of the manifest's ``cells`` (``cell_record``)."""

    cell_id: str | None  # JupyterLab's cellId; None from frontends that send none
    execution_count: int
    code: str
    source_sha256: str  # ``source_hash(code)``
    start_ns: int  # when the cell's region began (epoch ns), once it ran


class WriterRecord(TypedDict, total=False):
    """A ``writers`` entry (``process_record``)."""

    pid: int
    host: str
    boot_id: str
    start: int | None  # clock ticks since boot


class CellTime(TypedDict):
    """The manifest's ``cell_time``: the cells' time and its split (see the module doc)."""

    time_s: float
    cpu_s: float | None
    queue_s: float | None
    wait_s: float | None


class CellTimeRecord(CellTime, total=False):
    """``cell_time_record``: the measurement's note, which also holds each cell's time."""

    cells: list[float]


class MpiRecord(TypedDict, total=False):
    """An MPI run's ``mpi``: its ranks and how they were launched."""

    ranks: int
    launcher: str | None
    launcher_kind: str | None
    launcher_args: list[str]
    library: str
    kept: bool
    cells_on_ranks: int
    hosts: dict[str, list[int]]  # hostname -> ranks
    gather: list[str]
    timeout: float | None
    # rank -> its clock on the kernel's (kernel ns = slope * rank ns + offset_ns), probes
    clocks: dict[str, dict[str, float]]


class SourceRecord(TypedDict, total=False):
    """An imported trace's ``source`` (``accel.import_trace``)."""

    kind: str
    trace: str


class ErrorRecord(TypedDict, total=False):
    """An ``errors`` entry that is not a string: readers take its message."""

    message: str


# The measurement's own account (the tracer's notes, or what measured a Score-P run: tool,
# scorep_config, scorep_messages, notes): open-ended, readers take the keys they know.
Measurement = dict[str, object]


class _ManifestCore(TypedDict):
    format_version: int
    id: str
    backend: str  # one of BACKENDS
    status: str  # one of RUN_STATUSES


class Manifest(_ManifestCore, total=False):
    """manifest.json (see the module doc and ``new_manifest``)."""

    isolation: str  # one of ISOLATIONS
    cells: list[CellRecord]
    notebook: str | None
    start_ns: int
    end_ns: int | None
    wall_s: float | None
    run_s: float | None
    cell_time: CellTime | None
    hostname: str
    python_version: str
    python_executable: str
    scorep_env: dict[str, str]
    binding_args: list[str]
    binding_args_not_applicable: list[str]
    files: dict[str, str]  # what -> relative file name: {"otf2": "traces.otf2", ...}
    measurement: Measurement
    files_status: str  # one of FILES_STATUSES
    errors: list[str | ErrorRecord]
    writers: list[WriterRecord]
    timings: dict[str, float]  # phase -> seconds
    thread_names: dict[str, str]  # Score-P's thread location -> the Python thread's name
    run: str  # the cell metadata's "run": the multi-cell run this cell began
    mpi: MpiRecord
    script: str  # ``python -m scorep_kernel.script``: the script that ran
    source: SourceRecord


class ManifestChanges(TypedDict, total=False):
    """What ``update_manifest`` may change (never the run's identity)."""

    status: str
    cells: list[CellRecord]
    start_ns: int
    end_ns: int | None
    wall_s: float | None
    run_s: float | None
    cell_time: CellTime | None
    files: Mapping[str, str]  # merged into the manifest's
    measurement: Mapping[str, object]  # merged into the manifest's
    files_status: str
    errors: Sequence[str]  # appended to the manifest's
    timings: dict[str, float]
    thread_names: dict[str, str]
    mpi: MpiRecord


def new_manifest(
    exp_id: str,
    *,
    backend: str,
    isolation: str,
    cells: list[CellRecord] | None = None,
    scorep_env: dict[str, str] | None = None,
    binding_args: list[str] | None = None,
    start_ns: int | None = None,
    notebook: str | None = None,
    writer_pids: list[int] | None = None,
    run: str | None = None,
    binding_args_not_applicable: list[str] | None = None,
    script: str | None = None,
    source: SourceRecord | None = None,
) -> Manifest:
    """The manifest as first written, with status "running". ``notebook`` is the notebook's
    path relative to the server root, when the kernel knows it (Jupyter's session sets
    JPY_SESSION_NAME). ``writer_pids``: the processes besides this one that will say how
    the run ended (a worker). ``run``, ``binding_args_not_applicable``, ``script`` and
    ``source`` are written only when given."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    if isolation not in ISOLATIONS:
        raise ValueError(f"isolation must be one of {ISOLATIONS}, not {isolation!r}")
    import time

    manifest: Manifest = {
        "format_version": FORMAT_VERSION,
        "id": exp_id,
        "backend": backend,
        "isolation": isolation,
        "status": STATUS_RUNNING,
        # [cell_record(...)]: {cell_id, execution_count, code, source_sha256}, and once
        # the cell ran, start_ns: when its region began (epoch ns)
        "cells": list(cells or []),
        "notebook": notebook,
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
        # files being finished in the background: one of FILES_STATUSES
        "files_status": FILES_PENDING,
        "errors": [],
        # who will say how the run ended (see "writers" above)
        "writers": [process_record(pid) for pid in (os.getpid(), *(writer_pids or []))],
    }
    if run is not None:
        manifest["run"] = run
    if binding_args_not_applicable is not None:
        manifest["binding_args_not_applicable"] = list(binding_args_not_applicable)
    if script is not None:
        manifest["script"] = script
    if source is not None:
        manifest["source"] = source
    return manifest


def cell_time_record(
    time_ns: int, cpu_ns: int | None, queue_ns: int | None, cells_ns: list[int] | None = None
) -> CellTimeRecord:
    """The manifest's ``cell_time`` with each cell's (see the module doc); cpu/queue/wait None when the
    threads' clocks were not read."""
    cells = [round(t / 1e9, 9) for t in cells_ns or []]
    if cpu_ns is None or queue_ns is None:
        return {
            "time_s": round(time_ns / 1e9, 9),
            "cpu_s": None,
            "queue_s": None,
            "wait_s": None,
            "cells": cells,
        }
    return {
        "time_s": round(time_ns / 1e9, 9),
        "cpu_s": round(cpu_ns / 1e9, 9),
        "queue_s": round(queue_ns / 1e9, 9),
        "wait_s": round(max(0, time_ns - cpu_ns - queue_ns) / 1e9, 9),
        "cells": cells,
    }


def source_hash(code: str) -> str:
    """Identifies a cell's source across runs (the Runs list says when it changed)."""
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


def cell_record(cell_id: str | None, execution_count: int, code: str) -> CellRecord:
    """One entry of the manifest's ``cells``: JupyterLab's cellId (None from frontends that
    send none), the execution count, the source and its hash."""
    return {
        "cell_id": cell_id,
        "execution_count": execution_count,
        "code": code,
        "source_sha256": source_hash(code),
    }


# Score-P's bindings name the cell's region "<module>:<name>" with an empty module
# (":cell [3]"); the builtin tracer writes "cell [3]". Both are the cell of count 3.
_CELL_REGION = re.compile(r":?cell \[(\d+)\]")


def cell_region_count(region_name: str) -> int | None:
    """The execution count of a cell's own region (either backend's naming), else None."""
    m = _CELL_REGION.fullmatch(region_name)
    return int(m.group(1)) if m else None


def cell_region_label(region_name: str) -> str | None:
    """What a viewer shows for a cell's own region, the same under either backend ("cell
    [3]" for the builtin's "cell [3]" and Score-P's ":cell [3]"); None for other regions.
    Under Score-P every region of the empty module is a cell's: the kernel names nothing
    else so (a builtin trace marks a cell by its role instead)."""
    if cell_region_count(region_name) is not None:
        return region_name.removeprefix(":")
    if region_name.startswith(":") and len(region_name) > 1:
        return region_name[1:]
    return None


def _atomic_write_json(path: Path, data: Mapping[str, object]) -> None:
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


def write_manifest(exp_dir: str | os.PathLike, manifest: Manifest) -> None:
    exp_dir = Path(exp_dir)
    with _manifest_lock(exp_dir):
        _atomic_write_json(exp_dir / MANIFEST, manifest)


def update_manifest(exp_dir: str | os.PathLike, **changes: Unpack[ManifestChanges]) -> Manifest:
    """Read-modify-write under a lock. Dict values for "files" and "measurement" are merged,
    "errors" entries are appended; other keys are replaced. Returns the new manifest."""
    exp_dir = Path(exp_dir)
    with _manifest_lock(exp_dir):
        manifest = _read_checked(exp_dir)
        if "files" in changes:
            manifest.setdefault("files", {}).update(changes.pop("files"))
        if "measurement" in changes:
            manifest.setdefault("measurement", {}).update(changes.pop("measurement"))
        if "errors" in changes:
            manifest.setdefault("errors", []).extend(changes.pop("errors"))
        manifest.update(cast(Manifest, changes))  # the rest replace, as typed
        _atomic_write_json(exp_dir / MANIFEST, manifest)
        return manifest


def read_manifest(exp_dir: str | os.PathLike) -> Manifest:
    """The manifest, checked against ``Manifest`` (every key it knows; the reason names the
    key); a run whose writers have all ended without saying how it ended is settled first
    (see "writers")."""
    manifest = _read_checked(exp_dir)
    if orphaned(manifest):
        return _settle_orphan(Path(exp_dir), manifest)
    return manifest


def _read_checked(exp_dir: str | os.PathLike) -> Manifest:
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
    for key in sorted(Manifest.__required_keys__):
        if key not in manifest:
            raise ExperimentError(f"{path} lacks the field {key!r}")
    wrong = _check(manifest, Manifest)
    if wrong:
        raise ExperimentError(f"{path}: the field {wrong}")
    return manifest  # type: ignore[return-value]  # _check found it a Manifest


# --- checking the JSON against the types above ------------------------------------------
#
# Each type becomes a check once (``_checker``), so a read costs about what parsing the
# JSON does. A check answers None, or where (the key's path) and what is wrong.

_Check = Callable[[object], "tuple[str, str] | None"]
_JSON_NAMES: dict[object, str] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _kind_of(expected: object) -> str:
    """The JSON word for a type: "a string", "an array", "null" ..."""
    origin = get_origin(expected)
    if origin is list:
        return "an array"
    if origin is dict or is_typeddict(expected):
        return "an object"
    return _JSON_NAMES.get(expected, str(expected))


def _check(value: object, expected: object) -> str | None:
    """None when ``value`` (parsed JSON) has type ``expected``, else the key's path and
    what is wrong ("'cells'[2].'code' is an integer, not a string"). Keys a TypedDict does
    not declare are not checked: the format grows by new keys."""
    wrong = _checker(expected)(value)
    return None if wrong is None else f"{wrong[0].lstrip('.')} {wrong[1]}"


@functools.cache
def _checker(expected: object) -> _Check:
    if is_typeddict(expected):
        fields = [
            (key, f".{key!r}", _checker(hint))
            for key, hint in get_type_hints(cast(type, expected)).items()
        ]

        def check_object(value: object) -> tuple[str, str] | None:
            if not isinstance(value, dict):
                return "", f"is {_json_kind(value)}, not an object"
            for key, label, check in fields:
                if key in value:
                    wrong = check(value[key])
                    if wrong is not None:
                        return label + wrong[0], wrong[1]
            return None

        return check_object
    origin, args = get_origin(expected), get_args(expected)
    if origin in (Union, types.UnionType):
        options = [(_kind_of(o), _checker(o)) for o in args]

        def check_union(value: object) -> tuple[str, str] | None:
            wrongs = []
            for _, check in options:
                wrong = check(value)
                if wrong is None:
                    return None
                wrongs.append(wrong)
            # the mismatch inside the one option of the same kind, if any (an array)
            kind = _json_kind(value)
            for (option_kind, _), wrong in zip(options, wrongs):
                if option_kind == kind:
                    return wrong
            return "", f"is {kind}, not {' or '.join(k for k, _ in options)}"

        return check_union
    if origin is list or origin is dict:
        item = _checker(args[-1])
        container = list if origin is list else dict

        def check_container(value: object) -> tuple[str, str] | None:
            if not isinstance(value, container):
                return "", f"is {_json_kind(value)}, not {_kind_of(expected)}"
            pairs = enumerate(value) if isinstance(value, list) else value.items()
            for at, v in pairs:
                wrong = item(v)
                if wrong is not None:
                    return f"[{at!r}]" + wrong[0], wrong[1]
            return None

        return check_container
    if expected is object:
        return lambda value: None
    if expected is float:
        ok: Callable[[object], bool] = lambda v: isinstance(v, (int, float))
    elif expected is type(None):
        ok = lambda v: v is None
    elif isinstance(expected, type):  # str, int, bool: what the TypedDicts above use
        ok = lambda v: isinstance(v, expected)
    else:
        raise TypeError(f"no check for {expected!r}")
    kind = _kind_of(expected)

    def check_value(value: object) -> tuple[str, str] | None:
        if ok(value) and (expected is bool or not isinstance(value, bool)):
            return None
        return "", f"is {_json_kind(value)}, not {kind}"

    return check_value


# --- writers: who says how a run ended ------------------------------------------------


def boot_id() -> str:
    """This boot of this host (Linux), "" where unknown."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, Linux); None if there is none
    (or only its corpse: a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    try:
        # fields[0] is field 3 of proc(5) (the state), fields[19] field 22 (start time)
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (IndexError, ValueError):
        return None


def process_record(pid: int) -> WriterRecord:
    """A ``writers`` entry for process ``pid`` of this host."""
    return {
        "pid": pid,
        "host": socket.gethostname(),
        "boot_id": boot_id(),
        "start": _start_ticks(pid),
    }


def writer_alive(record: object) -> bool | None:
    """Whether the writer still runs: True, False, or None where this host cannot tell
    (another host or boot, or a record it does not understand)."""
    if not isinstance(record, dict):
        return None
    pid = record.get("pid")
    if not isinstance(pid, int):
        return None
    here = boot_id()
    if record.get("host") != socket.gethostname() or not here or record.get("boot_id") != here:
        return None
    start = _start_ticks(pid)
    return start is not None and (record.get("start") is None or start == record["start"])


def orphaned(manifest: Manifest) -> bool:
    """The run has not said how it ended, and every writer it named has ended."""
    unsettled = (
        manifest.get("status") == STATUS_RUNNING or manifest.get("files_status") == FILES_PENDING
    )
    writers = manifest.get("writers")
    if not unsettled or not isinstance(writers, list) or not writers:
        return False
    return all(writer_alive(w) is False for w in writers)


def _as_ended(manifest: Manifest) -> Manifest:
    """An orphaned run's manifest as it ended: what was still under way failed."""
    pids = ", ".join(str(w.get("pid")) for w in manifest.get("writers", []))
    ended = manifest.copy()
    if manifest.get("status") == STATUS_RUNNING:
        ended["status"] = STATUS_CRASHED
        why = f"The kernel (process {pids}) ended while this run was still going"
    else:
        why = f"The kernel (process {pids}) ended while this run's files were being written"
    if manifest.get("files_status") == FILES_PENDING:
        ended["files_status"] = FILES_FAILED
    ended["errors"] = [
        *manifest.get("errors", []),
        f"{why} (shut down or killed): the files are missing or incomplete. Run the cell again.",
    ]
    return ended


def _settle_orphan(exp_dir: Path, manifest: Manifest) -> Manifest:
    """Say in the manifest how an orphaned run ended (when the directory can be written;
    the reader gets the same answer either way)."""
    try:
        with _manifest_lock(exp_dir):
            manifest = _read_checked(exp_dir)
            if not orphaned(manifest):  # settled meanwhile
                return manifest
            manifest = _as_ended(manifest)
            _atomic_write_json(exp_dir / MANIFEST, manifest)
            return manifest
    except OSError:  # a read-only experiment: answer as if it were written
        return _as_ended(manifest)


def settle(exp_dir: str | os.PathLike, why: str) -> None:
    """The run's writer stops waiting (the kernel shuts down): a run still "running" ended
    "crashed", files still "pending" "failed", with ``why`` as the error."""
    exp_dir = Path(exp_dir)
    with _manifest_lock(exp_dir):
        manifest = _read_checked(exp_dir)
        running = manifest.get("status") == STATUS_RUNNING
        pending = manifest.get("files_status") == FILES_PENDING
        if not running and not pending:
            return
        if running:
            manifest["status"] = STATUS_CRASHED
        if pending:
            manifest["files_status"] = FILES_FAILED
        manifest.setdefault("errors", []).append(why)
        _atomic_write_json(exp_dir / MANIFEST, manifest)


def list_experiments(parent: str | os.PathLike) -> list[tuple[Path, Manifest]]:
    """``(path, manifest)`` for each readable experiment directly under ``parent``, newest
    first. Unreadable ones are skipped."""
    parent = Path(parent)
    found: list[tuple[Path, Manifest]] = []
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
