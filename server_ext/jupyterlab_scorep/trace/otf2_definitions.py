"""An OTF2 archive's definitions, through the public ``otf2`` API: the clock, the regions
(named and grouped as the experiment contract says), the locations, the metric members
with the scale of their recorded values, and Score-P's artificial regions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf
from scorep_kernel import region_words as rw

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
    """The name shown: a cell's region reads "cell [n]" under either backend (Score-P's
    bindings write ":cell [n]"); other names as recorded."""
    if role == rw.ROLE_CELL:
        return rw.cell_region_label(name) or name
    return name


def _region_info(region: Any, group: str | None) -> dict[str, Any]:
    name = region.name or ""
    paradigm, otf2_role = _enum_name(region.paradigm), _enum_name(region.region_role)
    role = rw.decode_region_role(region.description, otf2_role, name)
    return {
        "name": region_label(name, role),
        "group": region_group(name, role, group, region.source_file or ""),
        "file": region.source_file or "",
        "line": int(region.begin_line_number or 0),
        "role": role,
        "otf2_role": otf2_role,
        "paradigm": paradigm,
    }


def _metric_scale(member: Any) -> float:
    exponent = int(getattr(member, "exponent", 0) or 0)
    if not exponent:
        return 1.0
    base = 2 if _enum_name(getattr(member, "base", "")) == "binary" else 10
    return float(base) ** exponent


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
                "kind": {
                    "cpu_thread": "thread",
                    "gpu": "gpu",
                    "accelerator_stream": "gpu",
                    "metric": "metric",
                }.get(_enum_name(loc.type), _enum_name(loc.type)),
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


def thread_names_of(anchor: str) -> dict[str, str]:
    """The manifest's ``thread_names`` beside the archive at ``anchor`` ({Score-P's
    location name: the Python thread's, as the builtin tracer names it}; {} when none)."""
    try:
        manifest = mf.read_manifest(Path(anchor).parent)
    except ex.ExperimentError:
        return {}
    names = manifest.get("thread_names")
    if not isinstance(names, dict):
        return {}
    return {str(k): str(v) for k, v in names.items() if isinstance(v, str) and v}


def rename_locations(definitions: Definitions, names: dict[str, str]) -> None:
    """Show Score-P's "Orphan thread N" as the Python thread it was."""
    for location in definitions.locations:
        location["name"] = names.get(location["name"], location["name"])
