"""Write a Recording as an OTF2 archive laid out as Score-P writes it.

``write_otf2(recording, exp_dir)`` creates ``<exp_dir>/traces.otf2``, ``traces.def`` and
``traces/``. What goes in, following Score-P (with the Python bindings) so that Vampir,
otf2-print and the server's readers treat it like a Score-P trace:

- clock properties: timer resolution 1e9 (timestamps are epoch ns), global offset = the
  recording's start, trace length = its duration, realtime timestamp = the start;
- system tree ``machine Linux`` -> ``node <hostname>`` (domains MACHINE / SHARED_MEMORY),
  one location group ``Process`` (PROCESS) holding one CPU_THREAD location per thread
  (named as in the recording) and, when the recording has system metrics, one METRIC
  location ``System metrics``;
- regions: name and canonical name, source file, begin line, region role, paradigm, and
  the role as the description (see ``REGION_ROLES``); one REGIONS group per module (the
  region's ``group``), which Vampir colours by;
- metrics: one DOUBLE metric member per series (name = series key, description = label,
  unit), grouped into ASYNCHRONOUS metric classes of at most 255 members (OTF2's limit),
  recorded by the METRIC location; one metric event per class and sample time.

Region roles (recording role -> OTF2 role, paradigm), as Score-P maps its region types
(Score-P's user regions are OTF2 FUNCTION regions, paradigm USER). The description carries
the role itself, as the contract says (``rw.encode_region_role``; readers decode it
with ``rw.decode_region_role``):

====================  =================  ====================  =====================
recording role        OTF2 region role   OTF2 paradigm         description
====================  =================  ====================  =====================
function              FUNCTION           USER                  "function"
user                  FUNCTION           USER                  "user"
import                FUNCTION           USER                  "import"
cell                  CODE               USER                  "cell"
artificial            ARTIFICIAL         MEASUREMENT_SYSTEM    "artificial"
====================  =================  ====================  =====================

Engines (all write the same definitions and byte-identical event files):

- ``"fast"`` (default): libotf2 writes archive, definitions and metric events; each
  thread's enter/leave events are encoded with numpy (``_otf2_encode``), byte for byte
  what libotf2 writes, and replace libotf2's empty event file after the archive is
  closed. Falls back to ``"ctypes"`` for a location the encoder does not cover.
- ``"ctypes"``: one libotf2 call per event, argtypes bound once (``_otf2_fast``).
- ``"highlevel"``: only the package's public writer API (``EventWriter.enter`` ...), ~10x
  slower than ``"ctypes"``. The public API cannot set the clock properties, so there the
  global offset is the first event, the length ends at the last event and the realtime
  timestamp is the wall clock at writing time (the otf2 package's own choice).

Private parts of ``otf2`` 3.2 the fast engines rely on (pyproject pins
``otf2>=3.2,<3.3``; test_otf2_writer_engines.py compares them with the public engine and
libotf2's own bytes): ``Writer._write_global_definitions`` and ``DefinitionWriter``
(overridden to write Score-P's clock properties), ``Location._number_of_events_written``
(the event count in the location definition), the ``_ref`` of definitions (their OTF2
ids), ``_otf2.Config.lib_path()`` (the bundled libotf2), and the event-file layout of the
bundled libotf2 3.0 (trace format 2, see ``_otf2_encode``).
"""

from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import otf2
from otf2.definition_writer import DefinitionWriter
from otf2.enums import (
    Base,
    GroupFlag,
    GroupType,
    LocationGroupType,
    LocationType,
    MetricMode,
    MetricOccurrence,
    MetricType,
    Paradigm,
    ParadigmClass,
    RecorderKind,
    RegionFlag,
    RegionRole,
    SystemTreeDomain,
    Type,
)

from scorep_kernel import region_words as rw

from .. import experiment, otf2_layout
from . import CREATOR, _otf2_encode, _otf2_fast, otf2_devices, otf2_markers, otf2_threads
from .callpath import unique_location_names, writer_role
from .recording import (
    ROLE_ARTIFICIAL,
    ROLE_CELL,
    ROLE_FUNCTION,
    ROLE_IMPORT,
    ROLE_USER,
    MetricSamples,
    Recording,
    Region,
)

ENGINES = ("fast", "ctypes", "highlevel")
TIMER_RESOLUTION = 1_000_000_000
ARCHIVE_NAME = "traces"
CHUNK_SIZE_EVENTS = otf2_layout.CHUNK_SIZE
LOCATION_GROUP_NAME = "Process"
METRIC_LOCATION_NAME = "System metrics"

REGION_ROLES = {
    ROLE_FUNCTION: (RegionRole.FUNCTION, Paradigm.USER),
    ROLE_USER: (RegionRole.FUNCTION, Paradigm.USER),
    ROLE_IMPORT: (RegionRole.FUNCTION, Paradigm.USER),
    ROLE_CELL: (RegionRole.CODE, Paradigm.USER),
    ROLE_ARTIFICIAL: (RegionRole.ARTIFICIAL, Paradigm.MEASUREMENT_SYSTEM),
    **otf2_devices.DEVICE_REGION_ROLES,  # operators, launches, kernels, copies (otf2_devices)
}
PARADIGM_NAMES = {
    Paradigm.USER: "user",
    Paradigm.MEASUREMENT_SYSTEM: "measurement",
    Paradigm.CUDA: otf2_devices.PARADIGM_NAME,
}


class _ClockedWriter(otf2.writer.Writer):
    """The package's writer with Score-P's clock properties instead of the ones it derives
    from the events it saw (it sees none of the fast engine's events).

    Private: overrides ``Writer._write_global_definitions`` of otf2 3.2."""

    clock: tuple[int, int, int] = (0, 0, 0)  # global offset, trace length, realtime ns

    def _write_global_definitions(self):
        if not self.is_primary:
            return
        with DefinitionWriter(self) as global_def_writer:
            global_def_writer.write_clock_properties(self.timer_resolution, *self.clock)
            self.definitions.write(global_def_writer)


@dataclass
class _Definitions:
    region_refs: np.ndarray  # uint32 OTF2 region ref per recording region index
    regions: list  # otf2 Region definitions, by recording region index
    thread_locations: list
    metric_location: Any = None  # an otf2 Location (the otf2 package has no types)
    # (metric class definition, first column, end column) per class
    metric_classes: list = field(default_factory=list)
    devices: otf2_devices.DeviceDefinitions = field(default_factory=otf2_devices.DeviceDefinitions)
    parameters: dict = field(default_factory=dict)  # (name, kind) -> otf2 Parameter
    threads: otf2_threads.ThreadDefinitions | None = None  # THREAD_BEGIN / _END


def _define(trace: otf2.writer.Writer, recording: Recording) -> _Definitions:
    defs = trace.definitions
    machine = defs.system_tree_node("Linux", class_name="machine")
    node = defs.system_tree_node(
        recording.hostname or "localhost", class_name="node", parent=machine
    )
    defs.system_tree_node_domain(machine, SystemTreeDomain.MACHINE)
    defs.system_tree_node_domain(node, SystemTreeDomain.SHARED_MEMORY)
    process = defs.location_group(
        LOCATION_GROUP_NAME,
        location_group_type=LocationGroupType.PROCESS,
        system_tree_parent=node,
    )
    names = unique_location_names([t.name for t in recording.threads])
    threads = [defs.location(name, type=LocationType.CPU_THREAD, group=process) for name in names]

    used_paradigms = set()
    regions = []
    for index, r in enumerate(recording.regions):
        role, paradigm = writer_role(REGION_ROLES, index, r)
        used_paradigms.add(paradigm)
        regions.append(define_region(defs, r, role, paradigm, r.file or None))
    for paradigm in sorted(used_paradigms, key=lambda p: p.value):
        defs.paradigm(paradigm, PARADIGM_NAMES[paradigm], ParadigmClass.PROCESS)
    by_group: dict[str, list] = {}
    for r, region_def in zip(recording.regions, regions):
        if r.group:
            members = by_group.setdefault(r.group, [])
            if region_def not in members:  # identical regions share one definition
                members.append(region_def)
    for name, members in by_group.items():
        defs.group(
            name,
            group_type=GroupType.REGIONS,
            paradigm=Paradigm.USER,
            group_flags=GroupFlag.NONE,
            members=members,
        )

    result = _Definitions(
        region_refs=np.asarray([r._ref for r in regions], dtype=np.int64),
        regions=regions,
        thread_locations=threads,
        devices=otf2_devices.define(defs, recording, node, process, threads),
        parameters=otf2_markers.define(defs, recording, node),
        threads=otf2_threads.define(defs, recording, threads),
    )
    metrics = recording.metrics
    if metrics is not None and len(metrics.series):
        result.metric_location = defs.location(
            METRIC_LOCATION_NAME, type=LocationType.METRIC, group=process
        )
        members = [
            defs.metric_member(
                s["key"],
                s.get("label") or s.get("description") or "",
                metric_type=MetricType.OTHER,
                metric_mode=MetricMode.ABSOLUTE_POINT,
                value_type=Type.DOUBLE,
                base=Base.DECIMAL,
                exponent=0,
                unit=s.get("unit", ""),
            )
            for s in metrics.series
        ]
        step = _otf2_fast.MAX_METRIC_MEMBERS
        for lo in range(0, len(members), step):
            metric_class = defs.metric_class(
                members[lo : lo + step],
                occurrence=MetricOccurrence.ASYNCHRONOUS,
                recorder_kind=RecorderKind.ABSTRACT,
            )
            defs.metric_class_recorder(metric_class, result.metric_location)
            result.metric_classes.append((metric_class, lo, min(lo + step, len(members))))
    return result


def _epoch(times, offset: int) -> np.ndarray:
    return np.asarray(times, dtype=np.int64) + np.int64(offset)


def _check_recording(recording: Recording) -> None:
    n_regions = len(recording.regions)
    for index, t in enumerate(recording.threads):
        times = np.asarray(t.times)
        if not (times.shape == np.shape(t.regions) == np.shape(t.kinds)):
            raise ValueError(
                f"thread {index} ({t.name!r}): times, regions and kinds differ in length"
            )
        if len(times) > 1 and (np.diff(times) < 0).any():
            bad = int(np.argmax(np.diff(times) < 0)) + 1
            raise ValueError(
                f"thread {index} ({t.name!r}): the time of event {bad} goes "
                "backwards; OTF2 needs non-decreasing times per location"
            )
        regs = np.asarray(t.regions)
        if regs.size and (regs.min() < 0 or regs.max() >= n_regions):
            raise ValueError(
                f"thread {index} ({t.name!r}) uses region index "
                f"{int(regs.max())}, but the recording has {n_regions} regions"
            )
    m = recording.metrics
    if m is not None and len(m.series) and np.shape(m.values) != (len(m.times), len(m.series)):
        raise ValueError(
            f"metric values have shape {np.shape(m.values)}; expected "
            f"({len(m.times)}, {len(m.series)}) (samples x series)"
        )


def _clock(recording: Recording) -> tuple[int, int, int]:
    lo, hi = recording.start_ns, recording.end_ns
    for t in recording.threads:
        if len(t):
            lo, hi = min(lo, int(t.times[0])), max(hi, int(t.times[-1]))
        if t.span is not None:
            lo, hi = min(lo, t.span.begin_ns), max(hi, t.span.end_ns)
    m = recording.metrics
    if m is not None and len(m.times):
        lo, hi = min(lo, int(np.min(m.times))), max(hi, int(np.max(m.times)))
    for d in recording.devices:
        if len(d):
            lo, hi = min(lo, int(d.starts[0])), max(hi, int(np.max(d.ends)))
    offset = lo + recording.clock_offset_ns
    return offset, max(hi - lo, 0), offset


def _sorted_metric_samples(m: MetricSamples, clock_offset_ns: int):
    times = np.asarray(m.times, dtype=np.int64)
    order = np.argsort(times, kind="stable")  # OTF2 wants non-decreasing times
    values = np.asarray(m.values, dtype=np.float64).reshape(len(times), len(m.series))
    return _epoch(times[order], clock_offset_ns), values[order]


def _write_fast(
    trace: _ClockedWriter,
    recording: Recording,
    defs: _Definitions,
    encoded: dict[Path, np.ndarray] | None,
    exp_dir: Path,
) -> int:
    """Events through libotf2 with argtypes bound once; with ``encoded`` (a dict), a
    thread's enter/leave events are instead encoded with numpy into ``encoded[path]``,
    to replace the empty event file libotf2 leaves once the archive is closed."""
    total = 0
    for t, location in zip(recording.threads, defs.thread_locations):
        # libotf2 creates the location's event and local definition files either way.
        writer = trace.event_writer_from_location(location)
        times = _epoch(t.times, recording.clock_offset_ns)
        refs = defs.region_refs[np.asarray(t.regions, dtype=np.int64)]
        thread = otf2_threads.records(t, defs.threads, recording.clock_offset_ns)
        if (
            encoded is not None
            and not otf2_markers.has_markers(t)
            and _otf2_encode.supported(times, refs, thread)
        ):
            path = exp_dir / ARCHIVE_NAME / f"{location._ref}.evt"
            encoded[path] = _otf2_encode.encode(
                times, refs, t.kinds, CHUNK_SIZE_EVENTS, thread=thread
            )
            n = len(t) + (0 if thread is None else 2)
        else:
            enter_leave = functools.partial(
                _otf2_fast.write_enter_leave_as,
                _otf2_fast.handle_address(writer),
                f"the events of {t.name!r}",
            )
            events = functools.partial(
                otf2_markers.write_all, writer, t, times, refs, defs.parameters,
                defs.devices.parameter, recording.clock_offset_ns, enter_leave,
            )  # fmt: skip
            n = otf2_threads.around(writer, thread, defs.threads, events)
        location._number_of_events_written = n  # private, see _otf2_fast
        total += n
    total += _write_devices(trace, recording, defs)
    if defs.metric_location is not None and recording.metrics is not None:
        writer = trace.event_writer_from_location(defs.metric_location)
        times, values = _sorted_metric_samples(recording.metrics, recording.clock_offset_ns)
        # Per sample, one event per class, classes in order (as the high-level engine).
        addr = _otf2_fast.handle_address(writer)
        n = 0
        if len(defs.metric_classes) == 1:
            metric_class, lo, hi = defs.metric_classes[0]
            _otf2_fast.write_metrics(
                addr, times, metric_class._ref, values[:, lo:hi], "the system metrics"
            )
            n = len(times)
        else:
            for i in range(len(times)):
                for metric_class, lo, hi in defs.metric_classes:
                    _otf2_fast.write_metrics(
                        addr,
                        times[i : i + 1],
                        metric_class._ref,
                        values[i : i + 1, lo:hi],
                        "the system metrics",
                    )
                    n += 1
        defs.metric_location._number_of_events_written = n
        total += n
    return total


def _write_devices(trace: Any, recording: Recording, defs: _Definitions) -> int:
    if not recording.devices:
        return 0
    return otf2_devices.write_streams(
        trace, recording, defs.devices, defs.regions, recording.clock_offset_ns
    )


def _write_highlevel(trace: otf2.writer.Writer, recording: Recording, defs: _Definitions) -> int:
    total = 0
    for t, location in zip(recording.threads, defs.thread_locations):
        writer = trace.event_writer_from_location(location)
        regions = defs.regions

        def enter_leave(times, refs, kinds, writer=writer, regions=regions) -> None:
            for ts, region, kind in zip(times.tolist(), refs.tolist(), kinds.tolist()):
                if kind:
                    writer.enter(ts, regions[region])
                else:
                    writer.leave(ts, regions[region])

        times = _epoch(t.times, recording.clock_offset_ns)
        events = functools.partial(
            otf2_markers.write_all, writer, t, times, np.asarray(t.regions, dtype=np.int64),
            defs.parameters, defs.devices.parameter, recording.clock_offset_ns, enter_leave,
        )  # fmt: skip
        thread = otf2_threads.records(t, defs.threads, recording.clock_offset_ns)
        total += otf2_threads.around(writer, thread, defs.threads, events)
    total += _write_devices(trace, recording, defs)
    if defs.metric_location is not None and recording.metrics is not None:
        writer = trace.event_writer_from_location(defs.metric_location)
        times, values = _sorted_metric_samples(recording.metrics, recording.clock_offset_ns)
        for ts, row in zip(times.tolist(), values.tolist()):
            for metric_class, lo, hi in defs.metric_classes:
                writer.metric(ts, metric_class, row[lo:hi])
                total += 1
    return total


def define_region(defs: Any, r: Region, role: Any, paradigm: Any, source_file: str | None) -> Any:
    """One region definition as every archive we write spells it (the role in words in
    its description, rw.encode_region_role)."""
    return defs.region(
        r.name,
        canonical_name=r.name,
        description=rw.encode_region_role(r.role),
        region_role=role,
        paradigm=paradigm,
        region_flags=RegionFlag.NONE,
        source_file=source_file,
        begin_line_number=int(r.line),
        end_line_number=0,
    )


def write_otf2(recording: Recording, exp_dir, *, engine: str = "fast") -> dict:
    """Write ``recording`` as ``<exp_dir>/traces.otf2`` (+ ``traces.def``, ``traces/``).

    Returns ``{"events": n, "seconds": t, "engine": engine, "path": anchor}``; ``events``
    counts enter, leave and metric events.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    exp_dir = Path(exp_dir)
    exp_dir.mkdir(parents=True, exist_ok=True)
    anchor = exp_dir / experiment.OTF2_ANCHOR
    for existing in (anchor, exp_dir / experiment.OTF2_DEFS, exp_dir / experiment.OTF2_EVENTS_DIR):
        if existing.exists():
            raise FileExistsError(
                f"{existing} already exists: write each trace into a fresh experiment "
                "directory (or remove the old traces.otf2, traces.def and traces/)"
            )
    _check_recording(recording)
    started = time.perf_counter()
    cls = otf2.writer.Writer if engine == "highlevel" else _ClockedWriter
    writer = cls(
        str(exp_dir),
        archive_name=ARCHIVE_NAME,
        timer_resolution=TIMER_RESOLUTION,
        chunk_size_events=CHUNK_SIZE_EVENTS,
    )
    if cls is _ClockedWriter:
        writer.clock = _clock(recording)
    encoded: dict[Path, np.ndarray] | None = {} if engine == "fast" else None
    with contextlib.closing(writer) as trace:
        trace.creator = CREATOR
        trace.machine_name = "Linux"
        defs = _define(trace, recording)
        if engine == "highlevel":
            events = _write_highlevel(trace, recording, defs)
        else:
            events = _write_fast(trace, recording, defs, encoded, exp_dir)
    for path, payload in (encoded or {}).items():
        with open(path, "wb") as f:
            f.write(payload.data)  # the encoded bytes, without a copy
    return {
        "events": events,
        "seconds": time.perf_counter() - started,
        "engine": engine,
        "path": str(anchor),
    }
