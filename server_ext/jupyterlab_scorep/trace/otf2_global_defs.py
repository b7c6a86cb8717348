"""An OTF2 archive's global definitions read with ctypes callbacks on the bundled libotf2:
the records ``otf2_definitions.definitions_of`` needs (clock, strings, regions, groups,
location groups, locations, metric members, classes and instances), as plain tuples.

The ``otf2`` package's reader builds an object per definition and registers it (~80 us
each here): 0.25 s of reading a 1,024-rank archive's 3,140 definitions, half of the whole
read. These callbacks keep a tuple (~5 us). ``otf2_definitions.read_definitions`` (the
package's objects) and ``definitions_of`` (these records) give the same ``Definitions``
(test_otf2_read.py and test_scorep_archives.py compare them): the records keep the
package's order (file order, which its enumerations number) and its refusals (a ref
defined twice, a string not UTF-8); a ref to a string or location group that is not
defined reads as None, as the package gives the undefined ref.

The callbacks hold the GIL (``ctypes.PyDLL``), like otf2_read's event callbacks.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

_VP, _CP = ctypes.c_void_p, ctypes.c_char_p
_U8, _U32, _U64, _I64 = ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int64
_CB = ctypes.c_int  # OTF2_CallbackCode

# OTF2_GlobalDefReaderCallback_<name>(userData, ...) as OTF2 3.0's header declares them
_SIGNATURES: dict[str, Any] = {
    # timerResolution, globalOffset, traceLength, realtimeTimestamp
    "ClockProperties": ctypes.CFUNCTYPE(_CB, _VP, _U64, _U64, _U64, _U64),
    "String": ctypes.CFUNCTYPE(_CB, _VP, _U32, _CP),
    # self, name, canonicalName, description, regionRole, paradigm, regionFlags,
    # sourceFile, beginLineNumber, endLineNumber
    "Region": ctypes.CFUNCTYPE(_CB, _VP, _U32, _U32, _U32, _U32, _U8, _U8, _U32, _U32, _U32, _U32),
    # self, name, groupType, paradigm, groupFlags, numberOfMembers, members
    "Group": ctypes.CFUNCTYPE(_CB, _VP, _U32, _U32, _U8, _U8, _U32, _U32, ctypes.POINTER(_U64)),
    # self, name, locationGroupType, systemTreeParent, creatingLocationGroup
    "LocationGroup": ctypes.CFUNCTYPE(_CB, _VP, _U32, _U32, _U8, _U32, _U32),
    # self, name, locationType, numberOfEvents, locationGroup
    "Location": ctypes.CFUNCTYPE(_CB, _VP, _U64, _U32, _U8, _U64, _U32),
    # self, name, description, metricType, metricMode, valueType, base, exponent, unit
    "MetricMember": ctypes.CFUNCTYPE(_CB, _VP, _U32, _U32, _U32, _U8, _U8, _U8, _U8, _I64, _U32),
    # self, numberOfMetrics, metricMembers, metricOccurrence, recorderKind
    "MetricClass": ctypes.CFUNCTYPE(_CB, _VP, _U32, _U8, ctypes.POINTER(_U32), _U8, _U8),
    # self, metricClass, recorder, metricScope, scope
    "MetricInstance": ctypes.CFUNCTYPE(_CB, _VP, _U32, _U32, _U64, _U8, _U64),
}
_lib: Any = None


def _library() -> Any:
    global _lib
    if _lib is None:
        import _otf2  # type: ignore[import-untyped]  # the otf2 package has no types

        lib = ctypes.PyDLL(_otf2.Config.lib_path())
        lib.OTF2_Reader_GetGlobalDefReader.restype = _VP
        lib.OTF2_Reader_GetGlobalDefReader.argtypes = [_VP]
        lib.OTF2_GlobalDefReaderCallbacks_New.restype = _VP
        lib.OTF2_GlobalDefReaderCallbacks_New.argtypes = []
        lib.OTF2_GlobalDefReaderCallbacks_Delete.argtypes = [_VP]
        for name, signature in _SIGNATURES.items():
            setter = getattr(lib, f"OTF2_GlobalDefReaderCallbacks_Set{name}Callback")
            setter.argtypes = [_VP, signature]
        lib.OTF2_Reader_RegisterGlobalDefCallbacks.argtypes = [_VP, _VP, _VP, _VP]
        lib.OTF2_Reader_ReadAllGlobalDefinitions.argtypes = [_VP, _VP, ctypes.POINTER(_U64)]
        lib.OTF2_Reader_CloseGlobalDefReader.argtypes = [_VP, _VP]
        _lib = lib
    return _lib


@dataclass
class GlobalRecords:
    """The records, in file order; strings by ref (None: not defined)."""

    clock: tuple[int, int, int, int] | None = None  # resolution, offset, length, realtime
    strings: dict[int, str] = field(default_factory=dict)
    # ref, name, description, region role, paradigm, source file, begin line (string refs)
    regions: list[tuple[int, int, int, int, int, int, int]] = field(default_factory=list)
    groups: list[tuple[int, int, int, tuple[int, ...]]] = field(default_factory=list)
    location_groups: dict[int, int] = field(default_factory=dict)  # ref -> name
    locations: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    # ref, name, description, base, exponent, unit
    metric_members: list[tuple[int, int, int, int, int, int]] = field(default_factory=list)
    # ref, its members (a class) or None and its class's ref (an instance)
    metrics: list[tuple[int, tuple[int, ...] | None, int]] = field(default_factory=list)
    # why the records cannot be used: a ref defined twice, a string not UTF-8 (the
    # package refuses such an archive too)
    refused: str = ""

    def string(self, ref: int) -> str | None:
        return self.strings.get(ref)


def read_global_records(handle: Any) -> GlobalRecords:
    """The global definitions of an open ``_otf2.Reader_Open`` handle (its collective
    callbacks set). Raises ValueError for definitions the package would refuse, OSError
    with libotf2's error code where libotf2 fails."""
    lib = _library()
    reader = ctypes.cast(handle, _VP)
    out = GlobalRecords()
    seen: dict[str, set[int]] = {}

    def once(kind: str, ref: int) -> None:
        refs = seen.setdefault(kind, set())
        if ref in refs and not out.refused:
            out.refused = f"{kind} {ref} is defined twice"
        refs.add(ref)

    def on_clock(_u: Any, resolution: int, offset: int, length: int, realtime: int) -> int:
        out.clock = (resolution, offset, length, realtime)
        return 0

    def on_string(_u: Any, ref: int, text: bytes | None) -> int:
        once("string", ref)
        try:
            out.strings[ref] = None if text is None else text.decode("utf-8")  # type: ignore[assignment]
        except UnicodeDecodeError:
            out.refused = out.refused or f"string {ref} is not UTF-8"
            return 1  # OTF2_CALLBACK_INTERRUPT: libotf2 stops reading
        return 0

    def on_region(
        _u, ref, name, _canonical, description, role, paradigm, _flags, source, line, _end
    ):
        once("region", ref)
        out.regions.append((ref, name, description, role, paradigm, source, line))
        return 0

    def on_group(_u, ref, name, group_type, _paradigm, _flags, n, members):
        once("group", ref)
        out.groups.append((ref, name, group_type, tuple(members[i] for i in range(n))))
        return 0

    def on_location_group(_u, ref, name, _type, _parent, _creator):
        once("location group", ref)
        out.location_groups[ref] = name
        return 0

    def on_location(_u, ref, name, location_type, events, group):
        once("location", ref)
        out.locations.append((ref, name, location_type, events, group))
        return 0

    def on_member(_u, ref, name, description, _mtype, _mode, _vtype, base, exponent, unit):
        once("metric member", ref)
        out.metric_members.append((ref, name, description, base, exponent, unit))
        return 0

    def on_class(_u, ref, n, members, _occurrence, _recorder):
        once("metric", ref)
        out.metrics.append((ref, tuple(members[i] for i in range(n)), -1))
        return 0

    def on_instance(_u, ref, metric_class, _recorder, _scope_type, _scope):
        once("metric", ref)
        out.metrics.append((ref, None, metric_class))
        return 0

    handlers = {
        "ClockProperties": on_clock,
        "String": on_string,
        "Region": on_region,
        "Group": on_group,
        "LocationGroup": on_location_group,
        "Location": on_location,
        "MetricMember": on_member,
        "MetricClass": on_class,
        "MetricInstance": on_instance,
    }
    callbacks = {name: _SIGNATURES[name](fn) for name, fn in handlers.items()}  # kept alive
    def_reader = lib.OTF2_Reader_GetGlobalDefReader(reader)
    if not def_reader:
        raise OSError("libotf2 has no global definition reader for this archive")
    cbs = lib.OTF2_GlobalDefReaderCallbacks_New()
    try:
        for name, callback in callbacks.items():
            getattr(lib, f"OTF2_GlobalDefReaderCallbacks_Set{name}Callback")(cbs, callback)
        code = lib.OTF2_Reader_RegisterGlobalDefCallbacks(reader, def_reader, cbs, None)
        if code == 0:
            count = _U64()
            code = lib.OTF2_Reader_ReadAllGlobalDefinitions(reader, def_reader, ctypes.byref(count))
    finally:
        lib.OTF2_GlobalDefReaderCallbacks_Delete(cbs)
        lib.OTF2_Reader_CloseGlobalDefReader(reader, def_reader)
    if out.refused:
        raise ValueError(f"bad definitions: {out.refused}")
    if code != 0:
        raise OSError(f"libotf2 error code {code} while reading the global definitions")
    return out
