"""The communication matrix's non-zero pairs, kept with the trace index.

GET ranks?matrix=pairs sends an MPI run's N x N matrix as its non-zero cells. Finding them
in the dense N x N lists (``mpi_read.read_traffic``'s form, which the dense answer and the
summary read) costs ~70 ms for 1,024 ranks, on every request. They are found once per
index instead: when first asked, then kept in the loaded index and stored in the index's
directory (``<experiment>/.index/trace-v<N>/mpi.pairs.npz``) like its other parts.

Freshness follows the index's rule: the file records a digest of the source files' stamps
(``meta["sources"]``) of the index it was computed for, and is read only by an index of
the same stamps. A changed trace gets a new index directory without the file (the build
renames a new directory into place); a file written by a request that raced such a
rebuild carries the old stamps and is ignored, then replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from .index_store import LoadedIndex

PAIRS_FILE = "mpi.pairs.npz"
_COLUMNS = ("sender", "receiver", "bytes", "messages")


class MatrixPairs(TypedDict):
    """The non-zero cells of the N x N matrix, row-major: ``sender`` sent to ``receiver``."""

    sender: list[int]
    receiver: list[int]
    bytes: list[int]
    messages: list[int]


@dataclass(frozen=True)
class Pairs:
    """The matrix's side ``size`` and its non-zero cells as int64 columns, row-major."""

    size: int
    sender: np.ndarray
    receiver: np.ndarray
    bytes: np.ndarray
    messages: np.ndarray

    def as_json(self) -> MatrixPairs:
        return {
            "sender": self.sender.tolist(),
            "receiver": self.receiver.tolist(),
            "bytes": self.bytes.tolist(),
            "messages": self.messages.tolist(),
        }


def from_dense(dense_bytes: list[list[int]], dense_messages: list[list[int]]) -> Pairs:
    """The non-zero cells (bytes or messages) of the dense matrices, row-major."""
    n = len(dense_bytes)
    b = np.asarray(dense_bytes, np.int64).reshape(n, n)
    m = np.asarray(dense_messages, np.int64).reshape(n, n)
    sender, receiver = np.nonzero((b != 0) | (m != 0))
    return Pairs(n, sender, receiver, b[sender, receiver], m[sender, receiver])


def _stamp(sources: dict[str, Any]) -> str:
    """A digest of the index's ``sources`` (1,024 ranks' files: ~100 kB of JSON)."""
    return hashlib.sha256(json.dumps(sources, sort_keys=True).encode()).hexdigest()


def load(index_dir: Path, sources: dict[str, Any]) -> Pairs | None:
    """The stored pairs of the index at ``index_dir`` whose sources are ``sources``; None
    when there are none, they belong to another build, or the file is unreadable."""
    try:
        with np.load(index_dir / PAIRS_FILE, allow_pickle=False) as f:
            if str(f["sources"]) != _stamp(sources):
                return None
            columns = [np.asarray(f[name], np.int64) for name in _COLUMNS]
            size = int(f["size"])
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):  # damaged: found again
        return None
    if len({c.shape for c in columns}) != 1 or columns[0].ndim != 1:
        return None
    return Pairs(size, *columns)


def save(index_dir: Path, sources: dict[str, Any], pairs: Pairs) -> bool:
    """Store ``pairs`` in the index at ``index_dir`` (atomically: written under a temporary
    name, then renamed). Nothing is written when the directory is gone or not writable
    (the answer does not depend on it); False then."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".pairs-", suffix=".npz", dir=index_dir)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez(
                out,
                sources=np.array(_stamp(sources)),
                size=np.array(pairs.size, np.int64),
                **{name: getattr(pairs, name) for name in _COLUMNS},
            )
        os.replace(tmp, index_dir / PAIRS_FILE)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False
    return True


def of_index(
    index: LoadedIndex, dense_bytes: list[list[int]], dense_messages: list[list[int]]
) -> Pairs:
    """The pairs of the loaded trace index ``index`` whose MPI traffic has these dense
    matrices: kept in the loaded index, read from its directory, or found in the dense
    matrices and stored there, in that order."""

    def make(loaded: LoadedIndex) -> Pairs:
        sources = loaded.meta.get("sources") or {}
        found = load(loaded.dir, sources)
        if found is None:
            found = from_dense(dense_bytes, dense_messages)
            save(loaded.dir, sources, found)
        return found

    return index.cached("matrix_pairs", make)
