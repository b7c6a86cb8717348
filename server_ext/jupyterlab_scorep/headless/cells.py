"""Which cells a headless run profiles, and the metadata each execute_request carries.

JupyterLab sends a cell's metadata with every execute_request, plus its ``cellId``; the
kernel reads the ``scorep`` key (kernel/scorep_kernel/cell_metadata.py). A headless run
sends the same, changed only as the command line asks, for this run only (the notebook
written with ``-o`` keeps the cells' metadata as they were):

- ``--all`` sets ``profile: true`` on every code cell; ``--cells 3,5-7`` profiles exactly
  those code cells (every other cell is sent ``profile: false``, so neither its toggle nor
  the kernel's ``SCOREP_KERNEL_PROFILE=all`` profiles it);
- ``--backend``, ``--isolation`` and ``--experiment-dir`` act as the JupyterLab settings do:
  they are sent as ``scorep.lab_settings`` (replacing the ones saved in the notebook), so
  the keys a cell sets itself still win. Without any of them the saved ``lab_settings``
  apply, so the run measures as the notebook's author did in JupyterLab.

Code cells are numbered from 1 in the notebook's order, markdown and raw cells not counted:
on a fresh run top to bottom, number n is the cell that shows ``In [n]``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class SelectionError(ValueError):
    """A ``--cells`` value that names no cell of the notebook; the message says which."""


@dataclass(frozen=True)
class CodeCell:
    number: int  # 1-based among the notebook's code cells
    index: int  # position in nb.cells
    cell: Any  # the nbformat NotebookNode


def code_cells(nb: Any) -> list[CodeCell]:
    out: list[CodeCell] = []
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") == "code":
            out.append(CodeCell(len(out) + 1, index, cell))
    return out


_RANGE = re.compile(r"(\d+)\s*-\s*(\d+)")


def parse_selection(spec: str, cells: list[CodeCell]) -> frozenset[int]:
    """The code-cell numbers ``spec`` names: numbers, ranges ``a-b`` and cell ids, separated
    by commas (``3,5-7,aee8b4be``)."""
    by_id = {str(c.cell.get("id")): c.number for c in cells if c.cell.get("id")}
    last = len(cells)
    chosen: set[int] = set()
    for raw in spec.split(","):
        token = raw.strip()
        if not token:
            continue
        m = _RANGE.fullmatch(token)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo > hi:
                raise SelectionError(
                    f"--cells: the range {token!r} runs backwards; write {hi}-{lo}"
                )
            numbers = range(lo, hi + 1)
        elif token.isdigit():
            numbers = range(int(token), int(token) + 1)
        elif token in by_id:
            chosen.add(by_id[token])
            continue
        else:
            raise SelectionError(
                f"--cells: {token!r} is neither a code-cell number (1-{last}) nor the id of a "
                "code cell in this notebook"
            )
        for n in numbers:
            if not 1 <= n <= last:
                raise SelectionError(
                    f"--cells: the notebook has {last} code cells (numbered 1-{last}, markdown "
                    f"cells not counted); {n} is not one of them"
                )
            chosen.add(n)
    if not chosen:
        raise SelectionError("--cells names no cell: give numbers like 3,5-7 or cell ids")
    return frozenset(chosen)


@dataclass(frozen=True)
class Profiling:
    """What the command line asks of every cell."""

    mode: str = "toggled"  # "toggled" | "all" | "cells"
    chosen: frozenset[int] = frozenset()  # code-cell numbers, for mode "cells"
    # None: the notebook's saved lab_settings apply; else they are replaced by these
    lab_settings: dict[str, Any] | None = None
    # for the summary: what was asked, in the user's words
    described: dict[str, Any] = field(default_factory=dict)


def lab_settings_from_options(
    backend: str | None, isolation: str | None, experiment_dir: str | None
) -> dict[str, Any] | None:
    """The JupyterLab-settings equivalent of the command-line options, as the frontend
    writes them: a choice of ``auto`` (the settings' default) is no choice and not written;
    None when nothing was chosen."""
    out: dict[str, Any] = {}
    if backend and backend != "auto":
        out["backend"] = backend
    if isolation and isolation != "auto":
        out["isolation"] = isolation
    if experiment_dir:
        out["experiment_dir"] = experiment_dir
    return out or None


# What JupyterLab 4 and Notebook 7 add to every cell's metadata in an execute_request
# (beside ``cellId``); by them the kernel knows the cell's metadata came along, also for a
# cell that has none (scorep_kernel/frontend_metadata.py).
JUPYTERLAB_KEYS: dict[str, Any] = {"deletedCells": [], "recordTiming": False}


def request_metadata(code_cell: CodeCell, profiling: Profiling) -> dict[str, Any]:
    """The execute_request metadata for one code cell: its metadata as JupyterLab sends it
    (with ``cellId`` and JupyterLab's own keys), changed as ``profiling`` asks."""
    cell = code_cell.cell
    meta = {**copy.deepcopy(JUPYTERLAB_KEYS), **copy.deepcopy(dict(cell.get("metadata") or {}))}
    cell_id = cell.get("id")
    if cell_id:
        meta["cellId"] = cell_id
    scorep = meta.get("scorep")
    if scorep is not None and not isinstance(scorep, Mapping):
        return meta  # malformed: the kernel says what is wrong, in the cell
    scorep = dict(scorep or {})
    if profiling.mode == "all":
        scorep["profile"] = True
    elif profiling.mode == "cells":
        # exactly the chosen cells, also under the kernel's profile=all
        scorep["profile"] = code_cell.number in profiling.chosen
    if profiling.lab_settings is not None:
        scorep["lab_settings"] = dict(profiling.lab_settings)
    if scorep:
        meta["scorep"] = scorep
    return meta


def is_toggled(code_cell: CodeCell, profiling: Profiling) -> bool:
    """Whether the metadata sent for the cell asks for profiling (a cell may still be
    profiled by its %%execute_with_scorep magic or an open multi-cell run)."""
    scorep = request_metadata(code_cell, profiling).get("scorep")
    return isinstance(scorep, Mapping) and scorep.get("profile") is True


def first_line(source: str, width: int = 60) -> str:
    """The first non-blank line of a cell's source, shortened to ``width``."""
    for line in source.splitlines():
        if line.strip():
            line = line.rstrip()
            return line if len(line) <= width else line[: width - 1] + "…"
    return ""
