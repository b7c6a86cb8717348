"""The frontend tells the kernel which profiled cells a notebook holds, before any of them
runs: the contract of the ``jupyterlab-scorep`` comm (docs/API.md, "Kernel comm").

Why: by default the kernel starts no spare worker until the notebook first profiles a
cell in a subprocess, so ordinary cells pay nothing. The first such cell then paid a
fresh interpreter and every import the notebook had made (2.9-3.3 s over stock with the
paper's cells after an unprofiled `import torch`: benchmarks/paper_overhead.py, "setup
before"). A notebook opened with profiled cells in it, or a cell just toggled, says that a
subprocess run is coming: the kernel prepares the spare then, at idle (it is paused
while cells run), and the first profiled cell finds it ready.

Frontend → kernel, the comm's open message (nothing else is sent on it)::

    {"version": 1, "profiled_cells": [<a cell's "scorep" metadata>, ...]}

Kernel → frontend, one message on the comm::

    {"version": 1, "spare": "preparing" | "not needed" | "off", "why": "<words>"}

The sender then closes the comm (comm_close; or right after the open when it does not
wait for the answer: the kernel takes shell messages in order). JupyterLab sends both as
plain shell messages rather than through ``kernel.createComm``, which would start a kernel
subshell (a thread, shown in cells profiled in the kernel) for the comm's target.

A malformed message gets ``"spare": "not needed"`` with the reason in ``why``; it never
fails the kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:  # the kernel's modules are imported where read: `jupyter scorep run`
    # (server side) imports this module for the contract alone, as it does experiment.py
    from scorep_kernel.settings import Availability, CellSettings, KernelSettings

TARGET = "jupyterlab-scorep"
VERSION = 1
MAX_CELLS = 200  # a notebook's profiled cells; more are not read (one subprocess cell is enough)
SpareAnswer = Literal["preparing", "not needed", "off"]


class Notice(TypedDict):
    version: int
    profiled_cells: list[dict[str, Any]]


class NoticeReply(TypedDict):
    version: int
    spare: SpareAnswer
    why: str


@dataclass(frozen=True)
class Expectation:
    """What the notice means for the spare: the settings of the first profiled cell that
    runs in a subprocess, or why no spare is wanted."""

    spare: SpareAnswer
    why: str
    settings: CellSettings | None = None


def from_the_extension(data: object) -> bool:
    """Whether ``data`` is a notice as the extension sends it (its version): the frontend
    renders experiments with the extension's panel."""
    return isinstance(data, dict) and data.get("version") == VERSION


def read_notice(
    data: object, kernel_settings: KernelSettings, availability: Availability
) -> Expectation:
    from scorep_kernel.cell_metadata import parse_cell_metadata
    from scorep_kernel.settings import SettingsError

    if not isinstance(data, dict) or not from_the_extension(data):
        return Expectation("not needed", f"not a version-{VERSION} notice: {data!r:.80}")
    cells = data.get("profiled_cells")
    if not isinstance(cells, list):
        return Expectation("not needed", "profiled_cells is not a list")
    if kernel_settings.spare_worker == "off":
        return Expectation("off", "spare_worker=off (%scorep spare_worker=on turns it on)")
    errors = []
    for meta in cells[:MAX_CELLS]:
        try:
            cell = parse_cell_metadata({"scorep": meta})
            if not cell.profile:
                continue
            settings = kernel_settings.resolve(cell.settings, availability)
        except SettingsError as e:
            errors.append(str(e))  # the cell says so itself when it runs
            continue
        if settings.isolation == "subprocess":
            return Expectation(
                "preparing", f"a cell runs under {settings.backend} in a subprocess", settings
            )
    why = "no profiled cell runs in a subprocess"
    if errors:
        why += f" ({len(errors)} with settings that cannot run: {errors[0]})"
    return Expectation("not needed", why)


def notice_for(scorep_metadata: list[Any]) -> Notice | None:
    """The notice for these cells' ``scorep`` metadata (the profiled ones), or None when
    none is profiled: what JupyterLab sends, for a Python sender (``jupyter scorep run``)."""
    profiled = [m for m in scorep_metadata if isinstance(m, dict) and m.get("profile") is True]
    return {"version": VERSION, "profiled_cells": profiled[:MAX_CELLS]} if profiled else None


def reply(expectation: Expectation) -> NoticeReply:
    return {"version": VERSION, "spare": expectation.spare, "why": expectation.why}


def register(comm_manager: Any, on_notice: Callable[[object], Expectation]) -> None:
    """Answer each notice with ``on_notice``'s verdict (the sender closes the comm)."""

    def opened(comm: Any, open_msg: dict[str, Any]) -> None:
        data = open_msg.get("content", {}).get("data")
        try:
            expectation = on_notice(data)
        except Exception as e:  # a notice is a hint: it never fails the kernel
            expectation = Expectation("not needed", f"{type(e).__name__}: {e}")
        comm.send(reply(expectation))

    comm_manager.register_target(TARGET, opened)
