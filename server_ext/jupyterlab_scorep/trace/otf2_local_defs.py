"""Each location's local definitions, read through libotf2's definition reader: what
changes the meaning of its events, handed to the native scanner (otf2_scan), which applies
it as libotf2's event reader does.

Score-P writes events with process-local ids and puts the local -> global mapping of each
kind (regions, metrics, strings, communicators, ...) into the location's ``<ref>.def`` as
MappingTable records, with ClockOffset records (time, offset) from its clock
synchronisations: libotf2 maps the ids and corrects the timestamps while it reads. The
builtin writer's local definition files are empty. Reading them here costs a callback per
record and a Python call per mapped id (Score-P maps a few hundred), paid once per
location while libotf2 reads the same file for its own readers (``otf2_read.open_event_files``).
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

from .otf2_scan import LocalDefinitions

MAPPING_REGION, MAPPING_METRIC, MAPPING_COMM = 3, 5, 6  # OTF2_MappingType
_MAPPED = (MAPPING_REGION, MAPPING_METRIC, MAPPING_COMM)
# A sparse mapping whose local ids reach beyond this is left to libotf2's callbacks.
MAX_DENSE = 1 << 24

_VP, _U8, _U64 = ctypes.c_void_p, ctypes.c_uint8, ctypes.c_uint64
# OTF2_DefReaderCallback_MappingTable(userData, mappingType, idMap)
_MAPPING = ctypes.CFUNCTYPE(ctypes.c_int, _VP, _U8, _VP)
# OTF2_DefReaderCallback_ClockOffset(userData, time, offset, standardDeviation)
_CLOCK = ctypes.CFUNCTYPE(ctypes.c_int, _VP, _U64, ctypes.c_int64, ctypes.c_double)
# OTF2_IdMap_TraverseCallback(localId, globalId, userData)
_PAIR = ctypes.CFUNCTYPE(None, _U64, _U64, _VP)
_lib: Any = None
# A local definitions file with no records: an 18-byte chunk header, END_OF_FILE, END_OF_BUFFER.
_EMPTY_SIZE = 20


def has_no_records(path: str) -> bool:
    """Whether the local definitions file at ``path`` holds no record (the builtin
    writer's): one chunk header (0x03, 0x42, its event numbers), END_OF_FILE, END_OF_BUFFER."""
    try:
        if os.stat(path).st_size != _EMPTY_SIZE:
            return False
        with open(path, "rb") as f:
            head = f.read(_EMPTY_SIZE + 1)
    except OSError:
        return False
    return len(head) == _EMPTY_SIZE and head[:2] == b"\x03\x42" and head[-2:] == b"\x02\x01"


def _library() -> Any:
    global _lib
    if _lib is None:
        import _otf2  # type: ignore[import-untyped]  # the otf2 package has no types

        lib = ctypes.PyDLL(_otf2.Config.lib_path())  # the GIL stays held in callbacks
        lib.OTF2_DefReaderCallbacks_New.restype = _VP
        lib.OTF2_DefReaderCallbacks_New.argtypes = []
        lib.OTF2_DefReaderCallbacks_Delete.argtypes = [_VP]
        lib.OTF2_DefReaderCallbacks_SetMappingTableCallback.argtypes = [_VP, _MAPPING]
        lib.OTF2_DefReaderCallbacks_SetClockOffsetCallback.argtypes = [_VP, _CLOCK]
        lib.OTF2_Reader_RegisterDefCallbacks.argtypes = [_VP, _VP, _VP, _VP]
        lib.OTF2_IdMap_Traverse.argtypes = [_VP, _PAIR, _VP]
        _lib = lib
    return _lib


class LocalDefsReader:
    """Collects one location's mappings and clock offsets while libotf2 reads its local
    definitions: ``register`` on its definition reader before reading, ``result`` after."""

    def __init__(self) -> None:
        self.pairs: dict[int, tuple[list[int], list[int]]] = {}
        self.clock: list[tuple[int, int]] = []
        self.refused = ""  # why the callbacks could not be registered, if they could not
        self._callbacks = (_MAPPING(self._on_mapping), _CLOCK(self._on_clock))

    def _on_mapping(self, _user: Any, kind: int, id_map: Any) -> int:
        if kind in _MAPPED:
            local: list[int] = []
            glob: list[int] = []

            def pair(lo: int, gl: int, _u: Any) -> None:
                local.append(lo)
                glob.append(gl)

            _library().OTF2_IdMap_Traverse(id_map, _PAIR(pair), None)
            self.pairs[kind] = (local, glob)
        return 0

    def _on_clock(self, _user: Any, time: int, offset: int, _stddev: float) -> int:
        self.clock.append((time, offset))
        return 0

    def register(self, reader: Any, def_reader: Any) -> int:
        """libotf2's return code of registering the callbacks."""
        lib = _library()
        cbs = lib.OTF2_DefReaderCallbacks_New()
        try:
            lib.OTF2_DefReaderCallbacks_SetMappingTableCallback(cbs, self._callbacks[0])
            lib.OTF2_DefReaderCallbacks_SetClockOffsetCallback(cbs, self._callbacks[1])
            return int(
                lib.OTF2_Reader_RegisterDefCallbacks(
                    ctypes.cast(reader, _VP), ctypes.cast(def_reader, _VP), cbs, None
                )
            )
        finally:
            lib.OTF2_DefReaderCallbacks_Delete(cbs)  # registering copied them

    def result(self) -> LocalDefinitions | str:
        """The location's local definitions, or why the native scanner cannot apply them."""
        maps: dict[int, np.ndarray | None] = dict.fromkeys(_MAPPED)
        for kind, (local, glob) in self.pairs.items():
            if not local:
                continue
            top = max(local)
            if top >= MAX_DENSE:
                return f"a mapping table with local ids up to {top:,} (sparse beyond a table)"
            table = np.arange(top + 1, dtype=np.uint32)  # ids it does not map stay as they are
            # libotf2 hands the global id to a uint32 record field: the same truncation
            table[np.asarray(local, np.int64)] = np.asarray(glob, np.uint64) & 0xFFFFFFFF
            maps[kind] = table
        times = np.array([t for t, _ in self.clock], np.uint64)
        offsets = np.array([o for _, o in self.clock], np.int64)
        return LocalDefinitions(
            maps[MAPPING_REGION], maps[MAPPING_METRIC], times, offsets, maps[MAPPING_COMM]
        )
