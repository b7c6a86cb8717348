"""Find, validate, lock and load trace indexes (no server code here).

An index lives in ``<experiment>/.index/trace-v3/``: ``.index`` is the folder the contract
leaves to the server (``experiment.INDEX_DIR``), ``trace-v3`` the server's own layout,
versioned by ``index_build.INDEX_VERSION``. When the experiment directory is not writable
(a shared, read-only results folder) the index goes to the user's cache directory
instead, keyed by the experiment's real path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from scorep_kernel import experiment as ex
from scorep_kernel import region_words as rw

from .index_build import INDEX_NAME, INDEX_VERSION, LAYOUT_FIELDS, build_index, source_files

REGION_KEYS = ("name", "group", "file", "line", "role")
# "L<i>.<column>": location i's part of a column, and which layout.npy fields say where
_PER_LOCATION = re.compile(r"L(\d+)\.(\w+)")
_PARTS = {
    "start": "items", "end": "items", "region": "items", "count": "items",
    "ptr": "ptr", "px": "px", "mt": "metrics", "mm": "metrics", "mv": "metrics",
}  # fmt: skip
_FIELD = {name: i for i, name in enumerate(LAYOUT_FIELDS)}


def index_parent(exp_dir: Path) -> Path:
    local = exp_dir / ex.INDEX_DIR
    if os.access(exp_dir, os.W_OK) or (local.is_dir() and os.access(local, os.W_OK)):
        return local
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(str(exp_dir).encode()).hexdigest()[:16]
    return cache / "jupyterlab-scorep" / digest


def read_meta(parent: Path) -> dict[str, Any] | None:
    try:
        return json.loads((parent / INDEX_NAME / "meta.json").read_text())
    except (OSError, ValueError):
        return None


def is_fresh(meta: dict[str, Any] | None, exp_dir: Path) -> bool:
    return meta is not None and meta.get("sources") == source_files(exp_dir)


@contextlib.contextmanager
def _build_lock(parent: Path) -> Iterator[None]:
    # Serialises builders across processes (two servers, or a server and a CLI).
    parent.mkdir(parents=True, exist_ok=True)
    with ex.file_lock(parent / ".lock"):
        yield


def ensure_index(exp_dir: str) -> str:
    """Build the index of ``exp_dir`` unless a fresh one exists; return its directory.
    Safe to call from several processes at once: one builds, the others wait and reuse."""
    exp = Path(exp_dir)
    parent = index_parent(exp)
    if is_fresh(read_meta(parent), exp):
        return str(parent / INDEX_NAME)
    with _build_lock(parent):
        if not is_fresh(read_meta(parent), exp):
            build_index(exp, parent)
            _remove_older_versions(parent)
    return str(parent / INDEX_NAME)


_VERSIONED = re.compile(r"trace-v(\d+)")


def _remove_older_versions(parent: Path) -> None:
    """Indexes an earlier version of the server built beside this one (``trace-v2/`` after
    an upgrade): nothing reads them any more, and an experiment kept for months would
    carry each version's copy. Newer versions (a newer server sharing the folder) stay."""
    for entry in parent.iterdir():
        m = _VERSIONED.fullmatch(entry.name)
        if m and int(m[1]) < INDEX_VERSION and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)


class LoadedIndex:
    """A built index, its arrays memory-mapped on first use."""

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        self.meta: dict[str, Any] = json.loads((self.dir / "meta.json").read_text())
        self.regions: dict[str, dict[str, Any]] = self.meta["regions"]
        self._arrays: dict[str, np.ndarray] = {}
        self._files: dict[str, np.ndarray] = {}  # the memory-mapped files, by name
        self._derived: dict[str, Any] = {}
        self._lock = threading.Lock()

    def array(self, name: str) -> np.ndarray:
        """A stored array by name: ``ct.visits``, or ``L<i>.start`` (``.end``, ``.region``,
        ``.count``, ``.ptr``, ``.px``, ``.mt``, ``.mm``, ``.mv``) for location i's part of
        a column (see index_build's layout)."""
        arr = self._arrays.get(name)
        if arr is None:
            per_location = _PER_LOCATION.fullmatch(name)
            if per_location is None:
                arr = self._load(name)
            else:
                arr = self._part(int(per_location[1]), per_location[2])
            with self._lock:
                arr = self._arrays.setdefault(name, arr)
        return arr

    def _load(self, name: str) -> np.ndarray:
        with self._lock:
            arr = self._files.get(name)
            if arr is None:
                arr = np.load(self.dir / f"{name}.npy", mmap_mode="r")
                self._files[name] = arr
            return arr

    def _part(self, loc: int, column: str) -> np.ndarray:
        part = _PARTS.get(column)
        layout = self._load("layout")
        if part is None or not 0 <= loc < len(layout):
            raise KeyError(f"the index has no array L{loc}.{column}")
        row = layout[loc]
        offset = int(row[_FIELD[f"{part}_offset"]])
        if part == "ptr":
            rows, cols = int(row[_FIELD["ptr_rows"]]), int(row[_FIELD["ptr_columns"]])
            return self._load(column)[offset : offset + rows * cols].reshape(rows, cols)
        return self._load(column)[offset : offset + int(row[_FIELD[f"{part}_length"]])]

    def cached(self, key: str, make) -> Any:
        """``make(self)``, computed once per loaded index (e.g. the call tree)."""
        with self._lock:
            if key in self._derived:
                return self._derived[key]
        value = make(self)
        with self._lock:
            return self._derived.setdefault(key, value)

    @property
    def locations(self) -> list[dict[str, Any]]:
        return self.meta["locations"]

    def region_info(self, ref: int) -> dict[str, Any]:
        """Name, group, file, line and role of a region; a placeholder for an unknown ref."""
        info = self.regions.get(str(ref))
        if info is None:
            return {
                "name": f"region {ref}",
                "group": "",
                "file": "",
                "line": 0,
                "role": rw.ROLE_FUNCTION,
            }
        return {k: info.get(k) for k in REGION_KEYS}


class IndexCache:
    """A small LRU of loaded indexes, keyed by index directory and build identity."""

    def __init__(self, size: int = 8):
        self.size = size
        self._items: OrderedDict[tuple[str, str], LoadedIndex] = OrderedDict()
        self._lock = threading.Lock()
        # Loads are serialised so that concurrent first requests share one loaded index.
        self._load_lock = threading.Lock()

    def peek(self, directory: str) -> LoadedIndex | None:
        """The most recently loaded index of ``directory``, without touching the disk;
        the caller checks that it is still fresh."""
        with self._lock:
            for key in reversed(self._items):
                if key[0] == directory:
                    self._items.move_to_end(key)
                    return self._items[key]
        return None

    def get(self, directory: str) -> LoadedIndex:
        # The meta's mtime tells a rebuilt index from the one we hold.
        stamp = str(os.stat(Path(directory) / "meta.json").st_mtime_ns)
        key = (directory, stamp)
        item = self._cached(key)
        if item is not None:
            return item
        with self._load_lock:
            item = self._cached(key)  # loaded by another thread while this one waited
            if item is not None:
                return item
            item = LoadedIndex(directory)
            with self._lock:
                for old in [k for k in self._items if k[0] == directory]:
                    del self._items[old]
                self._items[key] = item
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return item

    def _cached(self, key: tuple[str, str]) -> LoadedIndex | None:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item
