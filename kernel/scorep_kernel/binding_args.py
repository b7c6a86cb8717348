"""The binding arguments (``%%scorep_python_binding_arguments``, ``python -m scorep``'s
options) as the builtin tracer reads them: those with a meaning for it are honoured, the
others are named as not applicable (manifest ``binding_args_not_applicable``).

Honoured: ``--noinstrumenter`` / ``--nopython`` (Python functions are not recorded unless
``scorep.instrumenter.enable()`` or a ``@scorep.user.region()`` asks for them, as under
Score-P) and ``--instrumenter-file=<file>`` (run once before the run's first cell, in the
process that runs the cells; under Score-P the worker runs it too, with the notebook's
folder on ``sys.path`` as a cell has it), ``--io=runtime:posix`` (the cell setting
``io: posix``). Not applicable: what selects Score-P's own
machinery (``--instrumenter-type``, ``--thread``, ``--mpp``, ``--nocompiler``, ``-v``, ...).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any

from scorep_kernel.measure.measure_config import MeasureConfig

NO_INSTRUMENTER = ("--noinstrumenter", "--nopython")
INSTRUMENTER_FILE = "--instrumenter-file"
IO_POSIX = ("--io=runtime:posix", "--io=posix")


@dataclass(frozen=True)
class BindingArgs:
    instrumenter: bool = True
    instrumenter_file: str | None = None
    io: bool = False  # --io=runtime:posix: the cell setting io: posix
    not_applicable: list[str] = field(default_factory=list)

    def measure(self, config: MeasureConfig, backend: str) -> MeasureConfig:
        """The run's measurement settings with what these arguments say."""
        out: dict[str, Any] = {}
        if self.instrumenter_file is not None:
            out["instrumenter_file"] = self.instrumenter_file
        if backend == "builtin" and not self.instrumenter:
            out["instrumenter"] = False
        if backend == "builtin" and self.io:
            out["io"] = "posix"
        return replace(config, **out)


def parse(args: list[str] | tuple[str, ...], cwd: str | None = None) -> BindingArgs:
    instrumenter = True
    instrumenter_file = None
    io = False
    not_applicable = []
    for arg in args:
        if arg in NO_INSTRUMENTER:
            instrumenter = False
        elif arg in IO_POSIX:
            io = True
        elif arg.startswith(INSTRUMENTER_FILE + "="):
            instrumenter_file = os.path.join(cwd or os.getcwd(), arg.split("=", 1)[1])
        else:
            not_applicable.append(arg)
    return BindingArgs(instrumenter, instrumenter_file, io, not_applicable)


def without_instrumenter_file(args: list[str] | tuple[str, ...]) -> list[str]:
    """Score-P's options without ``--instrumenter-file`` (the worker runs that file)."""
    return [a for a in args if not a.startswith(INSTRUMENTER_FILE + "=")]


_ran: set[tuple[str, float]] = set()


def run_instrumenter_file(path: str) -> None:
    """Execute the file as ``python -m scorep`` does before the program, once per process
    (for a file unchanged since), with the notebook's folder first on ``sys.path``."""
    key = (path, os.path.getmtime(path))
    if key in _ran:
        return
    _ran.add(key)
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        with open(path, encoding="utf-8") as f:
            code = compile(f.read(), path, "exec")
        exec(code, {"__name__": "__scorep_instrumenter_file__", "__file__": path})
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)
