"""What ``jupyter scorep run`` was asked to do (``app`` parses the command line into
``RunOptions``; ``execute.Runner`` runs by them, ``run_results`` records them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .notebook_client import SCOREP_KERNEL

DEFAULT_KERNEL = SCOREP_KERNEL


@dataclass
class RunOptions:
    notebook: Path
    output: Path | None = None
    kernel: str = DEFAULT_KERNEL
    backend: str | None = None
    isolation: str | None = None
    experiment_dir: Path | None = None
    profile_all: bool = False
    cells: str | None = None
    timeout: float | None = None  # per cell, seconds
    cwd: Path | None = None
    allow_errors: bool = False
    summary: Path | None = None
    startup_timeout: float = 60.0
    files_timeout: float = 300.0
    top: int = 5  # top regions per cell in the summary
    color: bool | None = None  # None: when the output is a terminal
    repeat: int = 1  # run each profiled cell this many times (the gate judges the best)
