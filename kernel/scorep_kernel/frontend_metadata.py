"""Frontends that send no cell metadata, and what the kernel says and does about them.

JupyterLab and Notebook 7 send every execute_request with the cell's metadata, plus keys of
their own (``{**cell.metadata, "deletedCells": [...], "recordTiming": false, "cellId":
...}``); ``jupyter scorep run``, ``papermill --engine scorep`` and our nbconvert
preprocessor send the same. VS Code sends ``{"cellId": "vscode-notebook-cell:..."}`` (the
cell's metadata only where its notebook model still keeps it), and nbclient, and so plain
``jupyter nbconvert --execute``, ``jupyter console`` and jupyter_client send ``{}``. There
a cell toggled in JupyterLab runs unprofiled, silently, unless the kernel says so.

The rule: a request whose metadata holds no key but ``cellId`` comes from a frontend that
sends no cell metadata. The first cell the user runs (stored in the history, not silent)
decides; a later request with metadata (the same kernel seen from JupyterLab) makes it a
frontend that does, never the other way round (a console attached to a notebook's kernel
sends none). ``FrontendWatch`` says it once, at the top of the first such cell, with the
ways to profile from there; ``%scorep`` says it again. ``SCOREP_KERNEL_PROFILE`` in the
kernel's environment is a choice made for every cell, so it leaves the note out.

``%scorep profile=all`` (or ``SCOREP_KERNEL_PROFILE=all``) profiles every cell that follows,
as if toggled; ``profile=none`` (the default) only the toggled and marked ones. It is the
kernel-wide default of the cell's ``profile`` key, so the settings precedence holds: a
cell's own ``"profile": false`` keeps it out. ``profiles_by_default`` says which requests
``profile=all`` takes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# The request metadata key every frontend that sends any (VS Code too) sets: the cell's id.
CELL_ID_KEY = "cellId"

UNKNOWN, SENDS_METADATA, SENDS_NONE = "unknown", "sends metadata", "sends none"

# A cell that starts with the %scorep line magic sets the kernel up: it is never profiled by
# profile=all, and the note waits for the next cell (which the setting may have decided).
_SCOREP_LINE = re.compile(r"\A\s*%scorep(?:\s|\Z)")

PREPROCESSOR = "jupyterlab_scorep.ScorePExecutePreprocessor"

WAYS = (
    "  %%execute_with_scorep    as a cell's first line: profile that cell\n"
    "  %scorep profile=all      profile every cell that follows (profile=none: stop)\n"
    "  jupyter scorep run NB.ipynb -o OUT.ipynb        the toggled cells, headless\n"
    "  papermill --engine scorep NB.ipynb OUT.ipynb    the same, with parameters\n"
    "  jupyter nbconvert --execute --to html \\\n"
    f"    --Exporter.preprocessors={PREPROCESSOR} NB.ipynb\n"
)

NOTE = (
    "Score-P kernel: this frontend sends no cell metadata (VS Code, nbclient and plain\n"
    '`jupyter nbconvert --execute` send none), so the cells toggled "Profile with Score-P"\n'
    "in JupyterLab run unprofiled here. To profile from here:\n"
    + WAYS
    + "(Said once; %scorep says it again. SCOREP_KERNEL_PROFILE=none or all in the kernel's\n"
    "environment chooses for every cell and leaves this note out.)\n"
)


def sends_cell_metadata(metadata: Mapping[str, Any] | None) -> bool:
    """Whether an execute_request's metadata carries the cell's metadata: any key but the
    cell's id (JupyterLab's own keys count: they come only with the cell's metadata)."""
    return any(key != CELL_ID_KEY for key in (metadata or {}))


def sets_up_the_kernel(code: str) -> bool:
    """A cell that starts with the ``%scorep`` line magic."""
    return bool(_SCOREP_LINE.match(code))


def profiles_by_default(code: str, silent: bool, store_history: bool) -> bool:
    """Whether ``profile=all`` profiles this request: a cell the user ran (stored in the
    history, not silent: frontends run their own code with store_history off), with code,
    and not one that sets the kernel up (``%scorep`` runs in the kernel, not a worker)."""
    return store_history and not silent and bool(code.strip()) and not sets_up_the_kernel(code)


class FrontendWatch:
    """What the kernel has seen of its frontend's requests, and the note, said once."""

    def __init__(self) -> None:
        self.state = UNKNOWN
        self.note_said = False
        self.said_in_this_cell = False
        self.users_cell = False  # the request being run is a cell the user ran

    def observe(self, metadata: Mapping[str, Any] | None, silent: bool, store_history: bool):
        """Take in one execute_request (before it runs)."""
        self.said_in_this_cell = False
        self.users_cell = store_history and not silent
        if not self.users_cell:
            return  # the frontend's own requests (completions, variable views) say nothing
        if sends_cell_metadata(metadata):
            self.state = SENDS_METADATA
        elif self.state == UNKNOWN:
            self.state = SENDS_NONE

    def note(self, code: str, profile_chosen: bool) -> str | None:
        """The note for this cell, the first time one is due: the frontend sends no
        metadata, the user made no kernel-wide choice, and the cell does not set the
        kernel up (the note then waits for the next cell)."""
        if self.note_said or self.state != SENDS_NONE or profile_chosen or not self.users_cell:
            return None
        if sets_up_the_kernel(code):
            return None
        self.note_said = self.said_in_this_cell = True
        return NOTE

    def describe(self) -> str:
        """``%scorep``'s lines about the frontend."""
        if self.state == SENDS_METADATA:
            return (
                "Frontend\n  sends cell metadata (JupyterLab, Notebook 7, jupyter scorep run): "
                "toggled cells are profiled"
            )
        if self.state == UNKNOWN:
            return "Frontend\n  no cell seen yet"
        if self.said_in_this_cell:
            return "Frontend\n  sends no cell metadata (see the note at the top of this cell)"
        self.note_said = True
        return (
            "Frontend\n  sends no cell metadata: cells toggled in JupyterLab run unprofiled "
            "here. To profile from here:\n" + WAYS.rstrip("\n")
        )
