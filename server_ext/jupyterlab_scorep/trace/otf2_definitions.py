"""An OTF2 archive's definitions: the clock, the regions (named and grouped as the
experiment contract says), the locations, the metric members with the scale of their
recorded values, and Score-P's artificial regions. ``definitions_of`` builds them from the
records otf2_global_defs reads with ctypes callbacks (what read_trace uses);
``read_definitions`` from the public ``otf2`` API's objects (the reference the tests
compare it with: the same ``Definitions`` for the same archive)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf
from scorep_kernel import region_words as rw

if TYPE_CHECKING:
    from .otf2_global_defs import GlobalRecords

# Score-P's names for its artificial regions (SCOREP_Definitions ... "MEASUREMENT OFF")
FLUSH_REGION_NAME = "TRACE BUFFER FLUSH"
OFF_REGION_NAME = "MEASUREMENT OFF"


@dataclass
class Definitions:
    timer_resolution: int
    global_offset: int
    trace_length: int
    realtime_timestamp: int | None  # ns since the epoch at global_offset, when recorded
    regions: dict[int, dict[str, Any]]
    locations: list[dict[str, Any]]  # [{ref, name, group, kind, events}]
    metric_members: dict[int, dict[str, Any]]  # member ref -> {name, unit, description}
    metric_classes: dict[int, list[int]]  # metric class/instance ref -> member refs
    # Score-P's artificial regions, when defined: what flushes and "recording off" become
    flush_region: int | None = None
    off_region: int | None = None


def _enum_name(value: Any) -> str:
    return str(value).rsplit(".", 1)[-1].lower()


def region_group(name: str, role: str, group: str | None, source_file: str = "") -> str:
    """The group a viewer colours a region by (the contract's naming rule): "cell" for a
    cell, the imported top-level package for an import, else the region's group as
    recorded, else the module part of its name, else its source file."""
    if role == rw.ROLE_CELL:
        return "cell"
    module = rw.region_module(name)
    if role == rw.ROLE_IMPORT and module == rw.IMPORT_MODULE:
        return name.split(":", 1)[1].split(".", 1)[0] or rw.IMPORT_MODULE
    return group or module or source_file or ""


def region_label(name: str, role: str) -> str:
    """The name shown: a cell's region reads as written, "cell [n]" or its label, under
    either backend (Score-P experiments before its cells were begun through the user API
    hold ":cell [n]", shown "cell [n]"); other names as recorded."""
    if role == rw.ROLE_CELL:
        return rw.cell_region_label(name) or name
    return name


def _region_info(region: Any, group: str | None) -> dict[str, Any]:
    return _region_fields(
        region.name,
        _enum_name(region.paradigm),
        _enum_name(region.region_role),
        region.description,
        region.source_file,
        region.begin_line_number,
        group,
    )


def _region_fields(
    name: str | None,
    paradigm: str,
    otf2_role: str,
    description: str | None,
    source_file: str | None,
    line: int | None,
    group: str | None,
) -> dict[str, Any]:
    name = name or ""
    role = rw.decode_region_role(description, otf2_role, name, group)
    return {
        "name": region_label(name, role),
        "group": region_group(name, role, group, source_file or ""),
        "file": source_file or "",
        "line": int(line or 0),
        "role": role,
        "otf2_role": otf2_role,
        "paradigm": paradigm,
    }


def _metric_scale(member: Any) -> float:
    return _scale(_enum_name(getattr(member, "base", "")), getattr(member, "exponent", 0))


def _scale(base_name: str, exponent: int | None) -> float:
    exponent = int(exponent or 0)
    if not exponent:
        return 1.0
    return float(2 if base_name == "binary" else 10) ** exponent


_LOCATION_KINDS = {
    "cpu_thread": "thread",
    "gpu": "gpu",
    "accelerator_stream": "gpu",
    "metric": "metric",
}


def _artificial_region(regions: dict[int, dict[str, Any]], name: str) -> int | None:
    for ref, info in regions.items():
        if info["name"] == name and info["role"] == rw.ROLE_ARTIFICIAL:
            return ref
    return None


def _region_groups(defs: Any) -> dict[int, str]:
    """Region -> name of its REGIONS group (Score-P's region group: the module)."""
    out: dict[int, str] = {}
    for group in getattr(defs, "groups", ()):
        if _enum_name(getattr(group, "group_type", "")) != "regions":
            continue
        for member in getattr(group, "members", ()):
            out.setdefault(id(member), group.name)
    return out


def read_definitions(trace: Any) -> Definitions:
    """Definitions from an open ``otf2.reader.Reader`` (public API only)."""
    defs = trace.definitions
    clock = defs.clock_properties
    groups = _region_groups(defs)
    regions = {i: _region_info(r, groups.get(id(r))) for i, r in enumerate(defs.regions)}
    locations = []
    for i, loc in enumerate(defs.locations):
        group = loc.group
        locations.append(
            {
                "ref": i,
                "name": loc.name or f"Location {i}",
                "group": getattr(group, "name", "") or "",
                "kind": _LOCATION_KINDS.get(_enum_name(loc.type), _enum_name(loc.type)),
                "events": int(loc.number_of_events or 0),
            }
        )
    members = {
        i: {
            "name": m.name,
            "unit": m.unit or "",
            "description": m.description or "",
            # values are recorded in units of base**exponent of ``unit``: Score-P's
            # ru_utime in µs of "s" (10**-6), ru_maxrss in KiB of "Bytes" (2**10)
            "scale": _metric_scale(m),
        }
        for i, m in enumerate(defs.metric_members)
    }
    member_index = {id(m): i for i, m in enumerate(defs.metric_members)}
    classes: dict[int, list[int]] = {}
    for i, metric in enumerate(defs.metrics):
        cls = getattr(metric, "metric_class", metric)  # MetricInstance -> its class
        classes[i] = [member_index.get(id(m), -1) for m in getattr(cls, "members", ())]
    realtime = clock.realtime_timestamp
    return Definitions(
        timer_resolution=int(clock.timer_resolution),
        global_offset=int(clock.global_offset),
        trace_length=int(clock.trace_length),
        realtime_timestamp=None if realtime >= 2**64 - 1 else int(realtime),
        regions=regions,
        locations=locations,
        metric_members=members,
        metric_classes=classes,
        flush_region=_artificial_region(regions, FLUSH_REGION_NAME),
        off_region=_artificial_region(regions, OFF_REGION_NAME),
    )


def definitions_of(records: GlobalRecords) -> Definitions:
    """``read_definitions``'s answer from otf2_global_defs' records."""
    import _otf2  # type: ignore[import-untyped]  # the otf2 package has no types

    if records.clock is None:
        raise ValueError("the archive defines no clock properties")
    text = records.strings.get
    names: dict[tuple[Any, int], str] = {}

    def enum(kind: Any, value: int) -> str:  # as _enum_name(kind(value)), once per value
        key = (kind, value)
        if key not in names:
            names[key] = _enum_name(kind(value))
        return names[key]

    region_group_of: dict[int, str] = {}
    for _ref, name, group_type, group_members in records.groups:
        if enum(_otf2.GroupType, group_type) == "regions":
            for member in group_members:
                region_group_of.setdefault(member, text(name))  # type: ignore[arg-type]
    regions = {
        i: _region_fields(
            text(name),
            enum(_otf2.Paradigm, paradigm),
            enum(_otf2.RegionRole, role),
            text(description),
            text(source),
            line,
            region_group_of.get(ref),
        )
        for i, (ref, name, description, role, paradigm, source, line) in enumerate(records.regions)
    }
    locations = []
    for i, (_ref, name, location_type, events, group) in enumerate(records.locations):
        kind = enum(_otf2.LocationType, location_type)
        group_name = records.location_groups.get(group)
        locations.append(
            {
                "ref": i,
                "name": text(name) or f"Location {i}",
                "group": (text(group_name) if group_name is not None else "") or "",
                "kind": _LOCATION_KINDS.get(kind, kind),
                "events": int(events or 0),
            }
        )
    members = {
        i: {
            "name": text(name),
            "unit": text(unit) or "",
            "description": text(description) or "",
            "scale": _scale(enum(_otf2.Base, base), exponent),
        }
        for i, (_ref, name, description, base, exponent, unit) in enumerate(records.metric_members)
    }
    member_index = {ref: i for i, (ref, *_rest) in enumerate(records.metric_members)}
    class_members = {ref: m for ref, m, _cls in records.metrics if m is not None}
    classes: dict[int, list[int]] = {}
    for i, (_ref, own, of_class) in enumerate(records.metrics):
        refs = own if own is not None else class_members.get(of_class, ())
        classes[i] = [member_index.get(m, -1) for m in refs]
    resolution, offset, length, realtime = records.clock
    return Definitions(
        timer_resolution=int(resolution),
        global_offset=int(offset),
        trace_length=int(length),
        realtime_timestamp=None if realtime >= 2**64 - 1 else int(realtime),
        regions=regions,
        locations=locations,
        metric_members=members,
        metric_classes=classes,
        flush_region=_artificial_region(regions, FLUSH_REGION_NAME),
        off_region=_artificial_region(regions, OFF_REGION_NAME),
    )


@dataclass(frozen=True)
class ThreadNames:
    """The manifest's names for Score-P's thread locations: ``by_group`` (an MPI run's
    ``group_thread_names``: {location group: {Score-P's name: ours}}) first, then
    ``by_name`` (``thread_names``: {Score-P's name: ours})."""

    by_name: dict[str, str]
    by_group: dict[str, dict[str, str]]

    def shown(self, group: str, name: str) -> str:
        return self.by_group.get(group, {}).get(name) or self.by_name.get(name) or name


def thread_names_of(anchor: str) -> ThreadNames:
    """The manifest's ``thread_names`` and ``group_thread_names`` beside the archive at
    ``anchor`` (empty when none)."""
    try:
        manifest = mf.read_manifest(Path(anchor).parent)
    except ex.ExperimentError:
        return ThreadNames({}, {})
    groups = manifest.get("group_thread_names")
    return ThreadNames(
        _names(manifest.get("thread_names")),
        {str(g): _names(n) for g, n in groups.items()} if isinstance(groups, dict) else {},
    )


def _names(names: object) -> dict[str, str]:
    if not isinstance(names, dict):
        return {}
    return {str(k): str(v) for k, v in names.items() if isinstance(v, str) and v}


def rename_locations(definitions: Definitions, names: ThreadNames) -> None:
    """Show Score-P's "Orphan thread N" as the Python thread it was (looked up in its
    location group first: under MPI every rank has its "Orphan thread 1")."""
    for location in definitions.locations:
        location["name"] = names.shown(location.get("group") or "", location["name"])
