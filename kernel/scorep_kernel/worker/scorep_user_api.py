"""Regions through Score-P's C user API (SCOREP_User_Functions.h), called with ctypes on
the measurement library the process already has loaded (``python -m scorep`` preloads it).

Score-P's Python bindings name every region ``<module>:<name>`` and put it in the group of
the module, so a cell's region begun through them reads ``:cell [3]`` in no group. Here a
region is named exactly as given and put in the group given: the cell's region is
``cell [3]`` (or the user's label) in group ``cell`` (region_words.CELL_GROUP), with
paradigm user, as the C macros SCOREP_USER_REGION_INIT / _ENTER / _END would write it.

As with the macros, each region has one handle, initialised once (a ``static
SCOREP_User_RegionHandle`` per region there, one per (name, group, file, line) here), and
the "last file" cache the macros keep per source file lives as long as this object.
This module's frames are never recorded by the bindings (its name is scorep*).
"""

from __future__ import annotations

import ctypes
import os
from typing import Any, NamedTuple

# SCOREP_User_Types.h
REGION_TYPE_COMMON = 0  # SCOREP_USER_REGION_TYPE_COMMON
_RegionHandle = ctypes.c_void_p  # SCOREP_User_RegionHandle: struct SCOREP_User_Region*
_SourceFileHandle = ctypes.c_uint32  # SCOREP_SourceFileHandle: SCOREP_Allocator_MovableMemory


class RegionKey(NamedTuple):
    name: str
    group: str
    file: str  # absolute, as the bindings write every file
    line: int


class UserRegions:
    """Begin and end regions named exactly, with a group, through Score-P's user API."""

    def __init__(self, lib: Any):
        """``lib``: a ctypes library that resolves Score-P's symbols (``ctypes.CDLL(None)``
        in a process Score-P's libraries were preloaded into)."""
        self._init = lib.SCOREP_User_RegionInit
        self._init.restype = None
        self._init.argtypes = [
            ctypes.POINTER(_RegionHandle),
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.POINTER(_SourceFileHandle),
            ctypes.c_char_p,
            ctypes.c_uint32,
            ctypes.c_char_p,
            ctypes.c_uint32,
        ]
        self._set_group = lib.SCOREP_User_RegionSetGroup
        self._set_group.restype = None
        self._set_group.argtypes = [_RegionHandle, ctypes.c_char_p]
        self._enter = lib.SCOREP_User_RegionEnter
        self._enter.restype = None
        self._enter.argtypes = [_RegionHandle]
        self._end = lib.SCOREP_User_RegionEnd
        self._end.restype = None
        self._end.argtypes = [_RegionHandle]
        # SCOREP_User_Variables.h: the last file name (compared by address first) and its
        # handle. The names passed are kept alive (_strings), so no freed address is ever
        # taken for a file Score-P has seen.
        self._last_file_name = ctypes.c_char_p()
        self._last_file = _SourceFileHandle(0)  # SCOREP_INVALID_SOURCE_FILE
        self._strings: list[bytes] = []
        self._handles: dict[RegionKey, ctypes.c_void_p] = {}

    def key(self, name: str, group: str, file: str, line: int = 1) -> RegionKey:
        return RegionKey(name, group, os.path.abspath(file) if file else "", int(line))

    def handle(self, key: RegionKey) -> ctypes.c_void_p:
        """The region's handle, initialised (and put in its group) the first time."""
        handle = self._handles.get(key)
        if handle is None:
            handle = _RegionHandle()  # SCOREP_USER_INVALID_REGION
            name, group, file = (s.encode("utf-8", "replace") for s in key[:3])
            self._strings += (name, group, file)
            self._init(
                ctypes.byref(handle),
                ctypes.byref(self._last_file_name),
                ctypes.byref(self._last_file),
                name,
                REGION_TYPE_COMMON,
                file,
                key.line,
            )
            self._set_group(handle, group)
            self._handles[key] = handle
        return handle

    def begin(self, key: RegionKey) -> None:
        self._enter(self.handle(key))

    def end(self, key: RegionKey) -> None:
        self._end(self.handle(key))


def loaded_user_regions() -> UserRegions | None:
    """UserRegions on the Score-P library this process has loaded; None without one."""
    try:
        return UserRegions(ctypes.CDLL(None))
    except (OSError, AttributeError):
        return None
