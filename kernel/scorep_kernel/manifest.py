"""manifest.json: what ran, how, and how it ended; typed once, read and written here only.

Its words: ``BACKENDS``, ``ISOLATIONS``, ``RUN_STATUSES``, ``FILES_STATUSES``. Its type:
``Manifest`` and the TypedDicts of its parts (see "the manifest, typed" below). Other
modules of either side call ``new_manifest``, ``write_manifest``, ``update_manifest``,
``read_manifest``, ``settle`` and ``list_experiments``; none opens the file.

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
``cells``: each cell's ``time_s``; ``ref_cpu_s``: the CPU seconds of a fixed reference
workload on the cells' thread around the run, the machine's speed then, see
measure/machine_speed.py), ``wall_s`` is its ``time_s``, and ``run_s`` is the
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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

from scorep_kernel.experiment import (
    FORMAT_VERSION,
    MANIFEST,
    ExperimentError,
    atomic_write_json,
    file_lock,
)
from scorep_kernel.typed_json import check

if TYPE_CHECKING:  # typing.Unpack from Python 3.11; only the type checker reads it here
    from typing_extensions import Unpack

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

# --- the manifest, typed ------------------------------------------------------------
#
# TypedDicts, not dataclasses: the manifest is JSON that changes additively (readers keep
# and pass on keys they do not know, the server answers it as it is), so its type is the
# JSON object itself. Only ``format_version``, ``id``, ``backend`` and ``status`` are
# certain; every other key may be missing from an older run's directory.
# src/api/experimentTypes.ts spells the same types (IManifest ...), and server_ext/tests/test_contract.py checks that the
# field names and their optionality agree. ``read_manifest`` checks every key it knows
# against these types (``typed_json.check``), so a reader may rely on them.


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


class _CellTimeSplit(TypedDict):
    time_s: float
    cpu_s: float | None
    queue_s: float | None
    wait_s: float | None


class CellTime(_CellTimeSplit, total=False):
    """The manifest's ``cell_time``: the cells' time and its split (see the module doc), and
    the machine's speed around the run (``ref_cpu_s``, measure/machine_speed.py)."""

    ref_cpu_s: float | None


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


class AcceleratorNotes(TypedDict, total=False):
    """``measurement.accelerator``: torch.profiler with a builtin run (``accel``)."""

    profiler: str  # "torch.profiler"
    torch: str  # torch's version
    activities: list[str]  # "cpu", "cuda"
    file: str  # the trace in the experiment directory (torch.pt.trace.json)
    error: str  # why the profiler did not start, stop, or merge: the rest was measured
    seconds: dict[str, float]  # the profiler's own cost: start, stop_export, parse
    operators: int
    runtime_calls: int
    device_activities: int
    streams: list[str]  # the device streams' locations, CUDA[device:stream]
    left_out_not_nested: int  # host events that crossed a Python call
    device_starts_moved: int  # device activity started before the stream's previous end
    skipped_events: int  # trace events without the numbers they need
    clock_shift_ns: int  # added to Kineto's times to nest its operators in their callers


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
    # an MPI run under Score-P, whose names repeat across ranks: per location group
    # ("MPI Rank r"), Score-P's thread location -> the Python thread's name
    group_thread_names: dict[str, dict[str, str]]
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
    group_thread_names: dict[str, dict[str, str]]
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
    time_ns: int,
    cpu_ns: int | None,
    queue_ns: int | None,
    cells_ns: list[int] | None = None,
    ref_cpu_s: float | None = None,
) -> CellTimeRecord:
    """The manifest's ``cell_time`` with each cell's (see the module doc); cpu/queue/wait
    None when the threads' clocks were not read; ``ref_cpu_s`` the reference workload's CPU
    seconds on the cells' thread around the run (measure.machine_speed), None when not
    measured."""
    cells = [round(t / 1e9, 9) for t in cells_ns or []]
    ref = round(ref_cpu_s, 9) if ref_cpu_s else None
    if cpu_ns is None or queue_ns is None:
        return {
            "time_s": round(time_ns / 1e9, 9),
            "cpu_s": None,
            "queue_s": None,
            "wait_s": None,
            "cells": cells,
            "ref_cpu_s": ref,
        }
    # The threads' clocks are read from /proc by the sampler thread, and a reading's
    # timestamp is taken just before the file is read: a sampler descheduled in between
    # (a loaded machine) sees the cell's thread a little further on, so running + queued
    # can come out above the cell's time (by 1 ms seen here under load). The split adds up
    # to the cell's time by construction: the excess comes off the queued time first (the
    # least exact), then off the running time.
    excess = max(0, cpu_ns + queue_ns - time_ns)
    off_queue = min(queue_ns, excess)
    queue_ns -= off_queue
    cpu_ns -= excess - off_queue
    return {
        "time_s": round(time_ns / 1e9, 9),
        "cpu_s": round(cpu_ns / 1e9, 9),
        "queue_s": round(queue_ns / 1e9, 9),
        "wait_s": round(max(0, time_ns - cpu_ns - queue_ns) / 1e9, 9),
        "cells": cells,
        "ref_cpu_s": ref,
    }


def with_ref_cpu_s(record: CellTimeRecord, ref_cpu_s: float | None) -> CellTimeRecord:
    """The record with the machine's speed measured around the whole run."""
    out = record.copy()
    out["ref_cpu_s"] = round(ref_cpu_s, 9) if ref_cpu_s else None
    return out


def cell_time_of(record: CellTimeRecord) -> CellTime:
    """The manifest's top-level ``cell_time`` from the measurement's record."""
    return {
        "time_s": record["time_s"],
        "cpu_s": record.get("cpu_s"),
        "queue_s": record.get("queue_s"),
        "wait_s": record.get("wait_s"),
        "ref_cpu_s": record.get("ref_cpu_s"),
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


def _manifest_lock(exp_dir: Path) -> contextlib.AbstractContextManager[None]:
    # Kernel, worker and background writer may all update one manifest.
    return file_lock(exp_dir / ".manifest.lock")


def write_manifest(exp_dir: str | os.PathLike, manifest: Manifest) -> None:
    exp_dir = Path(exp_dir)
    with _manifest_lock(exp_dir):
        atomic_write_json(exp_dir / MANIFEST, manifest)


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
        atomic_write_json(exp_dir / MANIFEST, manifest)
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
    wrong = check(manifest, Manifest)
    if wrong:
        raise ExperimentError(f"{path}: the field {wrong}")
    return manifest  # type: ignore[return-value]  # _check found it a Manifest


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
            atomic_write_json(exp_dir / MANIFEST, manifest)
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
        atomic_write_json(exp_dir / MANIFEST, manifest)


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
