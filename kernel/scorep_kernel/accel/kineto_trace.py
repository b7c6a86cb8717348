"""Read a torch.profiler (Kineto) trace: the Chrome trace-event JSON that
``prof.export_chrome_trace(path)`` and ``tensorboard_trace_handler`` (``*.pt.trace.json``)
write, into typed host and device events.

The format, as Kineto writes it (libkineto ``ChromeTraceLogger``) and HTA reads it:

- ``{"traceEvents": [...], "baseTimeNanoseconds": B, "deviceProperties": [...], ...}``;
  each event ``{"ph": "X", "cat", "name", "pid", "tid", "ts", "dur", "args"}`` with
  ``ts``/``dur`` in microseconds (decimals down to ns). ``ts`` counts from ``B`` (epoch ns)
  when the trace names it, else from the epoch itself (older Kineto).
- categories (lower case since Kineto 0.4; ``Kernel``, ``Memcpy``, ``Runtime``,
  ``Operator`` before, read alike): ``cpu_op`` (aten operators and other
  RecordFunctions), ``user_annotation`` (``record_function`` blocks, ``ProfilerStep#n``),
  ``python_function`` (``with_stack``), ``cuda_runtime`` / ``cuda_driver`` (API calls on a
  host thread), ``kernel``, ``gpu_memcpy``, ``gpu_memset`` (device activity: ``pid`` the
  device, ``tid`` the stream), ``gpu_user_annotation``, ``ac2g`` (flow arrows, ``ph``
  ``s``/``f``, launch to kernel).
- device events' ``args``: ``device``, ``stream``, ``correlation`` (the id CUPTI gives the
  API call that launched them, also in that call's ``args.correlation``), ``bytes`` for
  copies and sets; a copy's direction is in its name (``Memcpy HtoD (Pageable ->
  Device)``).
- ``M`` events name processes and threads (``thread_name``).

Anything else (instant events, counters, flow events, unknown categories) is left out;
an event without a number where one is needed is skipped and counted in ``skipped``.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# What a host event stands for (KinetoTrace.host[].kind).
HOST_OPERATOR = "operator"  # cpu_op, user_annotation: aten::mm, ProfilerStep#3 ...
HOST_RUNTIME = "runtime"  # cuda_runtime / cuda_driver: cudaLaunchKernel, cudaMemcpyAsync ...

# What a device activity is (DeviceActivity.kind).
DEVICE_KERNEL = "kernel"
DEVICE_MEMCPY = "memcpy"
DEVICE_MEMSET = "memset"

# Copy directions (DeviceActivity.copy), as CUPTI names them.
COPY_KINDS = ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP")

_HOST_CATEGORIES = {
    "cpu_op": HOST_OPERATOR,
    "operator": HOST_OPERATOR,
    "user_annotation": HOST_OPERATOR,
    "cuda_runtime": HOST_RUNTIME,
    "runtime": HOST_RUNTIME,
    "cuda_driver": HOST_RUNTIME,
}
_DEVICE_CATEGORIES = {
    "kernel": DEVICE_KERNEL,
    "gpu_memcpy": DEVICE_MEMCPY,
    "memcpy": DEVICE_MEMCPY,
    "gpu_memset": DEVICE_MEMSET,
    "memset": DEVICE_MEMSET,
}
_COPY = re.compile(r"\b(HtoD|DtoH|DtoD|HtoH|PtoP)\b")

# Host API calls that wait for the device (the host cannot queue work meanwhile).
SYNC_CALLS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cudaStreamWaitEvent",
        "cudaMemcpy",
        "cuCtxSynchronize",
        "cuStreamSynchronize",
        "cuEventSynchronize",
        "hipDeviceSynchronize",
        "hipStreamSynchronize",
        "hipEventSynchronize",
        "hipMemcpy",
    }
)


class KinetoTraceError(ValueError):
    """A file that is not a torch.profiler trace; the message says why and what to do."""


@dataclass(frozen=True)
class HostEvent:
    """An operator or runtime call on a host thread, ns since the epoch."""

    kind: str  # HOST_OPERATOR | HOST_RUNTIME
    name: str
    pid: int
    tid: int
    start_ns: int
    end_ns: int
    correlation: int = -1  # runtime calls: the id of what they launched (-1: none)


@dataclass(frozen=True)
class DeviceActivity:
    """A kernel, copy or set on a device stream, ns since the epoch."""

    kind: str  # DEVICE_KERNEL | DEVICE_MEMCPY | DEVICE_MEMSET
    name: str
    device: int
    stream: int
    start_ns: int
    end_ns: int
    correlation: int = -1
    bytes: int = 0
    copy: str = ""  # one of COPY_KINDS for copies, "" otherwise


@dataclass(frozen=True)
class DeviceInfo:
    id: int
    name: str
    total_memory: int = 0  # bytes, 0 when the trace does not say


@dataclass
class KinetoTrace:
    host: list[HostEvent]
    device: list[DeviceActivity]
    devices: list[DeviceInfo]
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)  # (pid, tid)
    skipped: int = 0  # events without the numbers they need

    @property
    def span_ns(self) -> tuple[int, int] | None:
        """First start and last end over all events, None when empty."""
        starts = [e.start_ns for e in self.host] + [a.start_ns for a in self.device]
        ends = [e.end_ns for e in self.host] + [a.end_ns for a in self.device]
        return (min(starts), max(ends)) if starts else None


def _int(value: Any, default: int = -1) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            return default
    return default


def _us_to_ns(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str):
            try:
                return round(float(value) * 1000)
            except ValueError:
                return None
        return None
    return round(value * 1000)


def parse(document: Any) -> KinetoTrace:
    """A trace from its decoded JSON (a dict with ``traceEvents``, or the bare list)."""
    if isinstance(document, list):
        events, base = document, 0
        props: list = []
    elif isinstance(document, dict) and isinstance(document.get("traceEvents"), list):
        events = document["traceEvents"]
        base = _int(document.get("baseTimeNanoseconds"), 0)
        props = document.get("deviceProperties") or []
    else:
        raise KinetoTraceError(
            "not a torch.profiler trace: expected a JSON object with a 'traceEvents' list "
            "(what prof.export_chrome_trace() and tensorboard_trace_handler write)"
        )
    host: list[HostEvent] = []
    device: list[DeviceActivity] = []
    names: dict[tuple[int, int], str] = {}
    skipped = 0
    for e in events:
        if not isinstance(e, dict):
            skipped += 1
            continue
        ph = e.get("ph")
        if ph == "M":
            if e.get("name") == "thread_name" and isinstance(e.get("args"), dict):
                names[(_int(e.get("pid")), _int(e.get("tid")))] = str(e["args"].get("name", ""))
            continue
        if ph != "X":
            continue
        cat = str(e.get("cat", "")).lower()
        host_kind = _HOST_CATEGORIES.get(cat)
        device_kind = _DEVICE_CATEGORIES.get(cat)
        if host_kind is None and device_kind is None:
            continue
        ts, dur = _us_to_ns(e.get("ts")), _us_to_ns(e.get("dur", 0))
        if ts is None or dur is None or dur < 0:
            skipped += 1
            continue
        start = base + ts
        raw_args = e.get("args")
        args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        name = str(e.get("name", ""))
        correlation = _int(args.get("correlation"))
        if host_kind is not None:
            host.append(
                HostEvent(
                    host_kind, name, _int(e.get("pid")), _int(e.get("tid")), start, start + dur,
                    correlation if host_kind == HOST_RUNTIME else -1,
                )
            )  # fmt: skip
            continue
        copy = ""
        if device_kind == DEVICE_MEMCPY:
            found = _COPY.search(name)
            copy = found.group(1) if found else ""
        device.append(
            DeviceActivity(
                str(device_kind),
                name,
                _int(args.get("device"), _int(e.get("pid"), 0)),
                _int(args.get("stream"), _int(e.get("tid"), 0)),
                start,
                start + dur,
                correlation,
                max(_int(args.get("bytes"), 0), 0),
                copy,
            )
        )
    infos = []
    for p in props if isinstance(props, list) else []:
        if isinstance(p, dict) and "id" in p:
            infos.append(
                DeviceInfo(_int(p.get("id"), 0), str(p.get("name", "")), _int(p.get("totalGlobalMem"), 0))
            )  # fmt: skip
    host.sort(key=lambda h: (h.start_ns, -h.end_ns))
    device.sort(key=lambda a: (a.device, a.stream, a.start_ns))
    return KinetoTrace(host, device, infos, names, skipped)


def load(path: str | Path) -> KinetoTrace:
    """Read a trace file (``.json`` or ``.json.gz``, as tensorboard_trace_handler may
    write it). Raises KinetoTraceError with the cause for anything else."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise KinetoTraceError(f"cannot read {path}: {e.strerror or e}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise KinetoTraceError(f"{path.name} is a damaged gzip file: {e}") from None
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise KinetoTraceError(
            f"{path.name} is not JSON ({e}); a torch.profiler trace is the file "
            "export_chrome_trace() or tensorboard_trace_handler wrote"
        ) from None
    return parse(document)
