"""Our stand-in for Score-P's Python bindings lives in ``shim/scorep``; this directory goes
on ``sys.path`` in every process the builtin tracer measures, so code written for the
bindings (``scorep.user.region``, ``scorep.instrumenter``) runs and shows in our traces.

The shim goes first on ``sys.path``, even where the real bindings are installed: outside
``python -m scorep`` they measure nothing, and a cell must give the same user regions under
both backends. In a process that Score-P measures (the bindings set
``SCOREP_PYTHON_BINDINGS_INITIALISED``) the real bindings stay. The directory never travels
with the namespace's ``sys.path`` (state.transfer keeps each process's own entry).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

SHIM_DIR = str(Path(__file__).resolve().parent)


def under_scorep() -> bool:
    """This process runs under ``python -m scorep`` (the real bindings measure it)."""
    return os.environ.get("SCOREP_PYTHON_BINDINGS_INITIALISED") == "true"


def install_scorep_shim() -> bool:
    """Put the shim first on sys.path unless Score-P measures this process; True when
    ``import scorep`` now finds the shim. A ``scorep`` imported before stays as it is."""
    if under_scorep():
        return False
    if SHIM_DIR in sys.path:
        sys.path.remove(SHIM_DIR)
    sys.path.insert(0, SHIM_DIR)
    importlib.invalidate_caches()
    imported = sys.modules.get("scorep")
    return imported is None or getattr(imported, "BUILTIN_SHIM", False) is True


def preload_scorep_shim() -> None:
    """Import the shim's ``scorep`` before a builtin run starts, as a worker under Score-P
    has its bindings loaded: a cell's ``import scorep.user`` is then no ``import:`` region
    under either backend. Nothing where another ``scorep`` is imported or found first."""
    if "scorep" not in sys.modules and sys.path[:1] == [SHIM_DIR]:
        importlib.import_module("scorep")
