"""Is real Score-P usable here: ``scorep-config`` on PATH and the ``scorep`` bindings
importable (our shim, which stands in for the bindings, does not count)."""

from __future__ import annotations

import importlib.machinery
import os
import shutil
import sys


def _real_bindings() -> bool:
    from ..shim import SHIM_DIR

    shim = os.path.realpath(SHIM_DIR)
    path = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != shim]
    if "scorep" in sys.modules:
        spec_origin = getattr(sys.modules["scorep"], "__file__", "") or ""
        if not os.path.realpath(spec_origin).startswith(shim + os.sep):
            return True
    return importlib.machinery.PathFinder.find_spec("scorep", path) is not None


def detect_scorep() -> dict:
    config = shutil.which("scorep-config")
    bindings = _real_bindings()
    if config and bindings:
        message = f"Score-P found: {config}, Python bindings installed"
    elif not config and not bindings:
        message = (
            "Score-P not found: scorep-config is not on PATH and the Python bindings are "
            "missing. Install Score-P (https://www.vi-hps.org/projects/score-p, built with "
            "--enable-shared) and put its bin/ on PATH, then `pip install scorep`."
        )
    elif not config:
        message = (
            "Score-P not found: the scorep Python bindings are installed but scorep-config "
            "is not on PATH. Add Score-P's bin/ directory to PATH."
        )
    else:
        message = (
            f"Score-P found ({config}) but its Python bindings are missing: "
            "`pip install scorep` in the kernel's environment."
        )
    return {
        "available": bool(config and bindings),
        "scorep_config": config,
        "bindings": bool(bindings),
        "message": message,
    }
