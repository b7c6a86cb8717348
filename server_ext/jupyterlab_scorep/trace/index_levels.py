"""The index's level columns (``start``, ``end``, ``region``, ``count``, ``ptr``, ``px``;
see index_build's layout) built and written a block of locations at a time.

The levels of a location depend on its own calls and the pixel sizes alone
(``lod.build_all_levels`` of locations together is each location's alone), so a block of
locations is merged, appended to the column files and let go before the next. The block's
arrays are about a MB: the allocator hands the same memory from block to block, where
building all 1,024 ranks' levels of 100M events at once took ~6 GB of fresh pages (levels,
their assembly, the columns concatenated to be saved) for 5.6 GB at the peak, and the
kernel zeroing fresh pages was two thirds of the index build's CPU time on this VM.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from . import intervals, lod

# Calls per block of locations (a location is never split): ~1 MB an int64 column.
# Blocks of 1M calls touched 1.3-1.5 GiB of fresh pages at 100M events (glibc maps and
# unmaps arrays of many MB, or trims its heap of them); of 128k, ~10 MB.
BLOCK_CALLS = 1 << 17
_HEADER_BYTES = 128  # a 1-d .npy header (version 1.0) of any length fits in 128 bytes


@dataclass
class LevelLayout:
    """Where each location's part of the columns is (``lod.LevelTables``'s fields)."""

    items: np.ndarray  # int64 [L, 2]: offset, length in start/end/region/count
    ptr_at: np.ndarray  # int64 [L, 3]: offset in ptr, rows, columns
    px_at: np.ndarray  # int64 [L, 2]: offset, length in px


class _Column:
    """A 1-d ``.npy`` file written by appending, its header (the length) at the close:
    the same bytes as ``np.save`` of the whole column."""

    def __init__(self, path: Path, dtype: npt.DTypeLike):
        self.dtype = np.dtype(dtype)
        self.file = open(path, "wb")  # noqa: SIM115 (closed by close())
        self.file.write(b"\0" * _HEADER_BYTES)
        self.length = 0

    def append(self, part: np.ndarray) -> None:
        part = np.ascontiguousarray(part, self.dtype)
        self.file.write(part.data)
        self.length += int(part.shape[0])

    def close(self) -> None:
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            header,
            {
                "descr": np.lib.format.dtype_to_descr(self.dtype),
                "fortran_order": False,
                "shape": (self.length,),
            },
        )
        assert len(header.getvalue()) == _HEADER_BYTES
        self.file.seek(0)
        self.file.write(header.getvalue())
        self.file.close()


def _blocks(calls: list[int], limit: int) -> list[tuple[int, int]]:
    """Runs ``[a, b)`` of locations of at most ``limit`` calls (at least one location)."""
    out, a, total = [], 0, 0
    for i, n in enumerate(calls):
        if i > a and total + n > limit:
            out.append((a, i))
            a, total = i, 0
        total += n
    if a < len(calls):
        out.append((a, len(calls)))
    return out


def write_levels(
    out: Path, per_location: list[intervals.Intervals], pixels: list[float]
) -> LevelLayout:
    """Write the level columns of every location's calls into ``out``. Empties
    ``per_location`` block by block as it goes (each block's calls let go once merged)."""
    names = (("start", np.int64), ("end", np.int64), ("region", np.int32), ("count", np.int32))
    columns = {name: _Column(out / f"{name}.npy", dtype) for name, dtype in names}
    ptr, px = _Column(out / "ptr.npy", np.int64), _Column(out / "px.npy", np.float64)
    items, ptr_at, px_at = [], [], []
    try:
        for a, b in _blocks([len(iv) for iv in per_location], BLOCK_CALLS):
            block = per_location[: b - a]
            del per_location[: b - a]
            raw = [
                np.concatenate([getattr(iv, name) for iv in block])
                for name in ("start", "end", "region")
            ]
            depth_ptrs = [iv.depth_ptr for iv in block]
            tables = lod.build_all_levels(raw[0], raw[1], raw[2], depth_ptrs, pixels)
            del raw, block
            items.append(tables.items + [columns["start"].length, 0])
            ptr_at.append(tables.ptr_at + [ptr.length, 0, 0])
            px_at.append(tables.px_at + [px.length, 0])
            for name, column in columns.items():
                column.append(getattr(tables, name))
            ptr.append(tables.ptr)
            px.append(tables.px)
    finally:
        for column in (*columns.values(), ptr, px):
            column.close()

    def stacked(parts: list[np.ndarray], width: int) -> np.ndarray:
        return np.concatenate(parts or [np.zeros((0, width), np.int64)]).astype(np.int64)

    return LevelLayout(stacked(items, 2), stacked(ptr_at, 3), stacked(px_at, 2))
