"""Score-P detection and the local viewers (Vampir, Cube)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

from scorep_kernel import experiment as ex

from ..domain_errors import NotFound

INSTALL_ADVICE = {
    "vampir": "Vampir is commercial (https://vampir.eu); install it on this machine and put "
    "`vampir` on the PATH of the Jupyter server. Meanwhile download the OTF2 archive.",
    "cube": "Install Cube (https://www.scalasca.org/scalasca/software/cube-4.x/download.html, "
    "or your distribution's `cube` / Spack's `cubegui`) and put `cube` on the PATH of the "
    "Jupyter server. Meanwhile download profile.cubex.",
}
TOOL_FILES = {"vampir": ex.OTF2_ANCHOR, "cube": ex.CUBEX}


def scorep_status() -> dict[str, Any]:
    config = shutil.which("scorep-config")
    bindings = importlib.util.find_spec("scorep") is not None
    if config and bindings:
        message = f"Score-P found: {config}, Python bindings importable."
    elif config:
        message = (
            f"Score-P found ({config}) but its Python bindings are not importable: "
            "`pip install scorep` in the kernel's environment."
        )
    elif bindings:
        message = (
            "The scorep Python bindings are importable but scorep-config is not on "
            "PATH: add Score-P's bin directory to PATH."
        )
    else:
        message = (
            "Score-P not found: scorep-config is not on PATH and the scorep bindings "
            "are not importable; the builtin tracer is used instead."
        )
    from ..analysis.scorep_score import executable

    return {
        "available": bool(config and bindings),
        "scorep_config": config,
        "bindings": bindings,
        "message": message,
        # Score-P's scorep-score, for GET score (its estimate and filter suggestion)
        "scorep_score": executable(),
    }


def tool_paths() -> dict[str, str | None]:
    return {name: shutil.which(name) for name in TOOL_FILES}


def open_in_tool(tool: str, exp: Path, target: Path) -> int:
    """Start ``tool target`` detached, no shell; returns the pid."""
    binary = shutil.which(tool)
    if binary is None:
        raise NotFound(
            f"{tool} is not on the server's PATH. {INSTALL_ADVICE[tool]}", "Tool not found"
        )
    proc = subprocess.Popen(
        [binary, str(target)],
        cwd=str(exp),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # survives a server restart, gets no terminal signals
        close_fds=True,
    )
    # Reap it when it exits so no zombie lingers under the server.
    threading.Thread(target=proc.wait, name=f"reap-{tool}", daemon=True).start()
    return proc.pid


def open_once(tool: str, exp: Path, target: Path) -> int | None:
    """``open_in_tool`` unless this experiment was opened in ``tool`` so before (a marker
    under its .index/): None then. A launch that fails leaves no marker."""
    marker = exp / ex.INDEX_DIR / f"opened-{tool}"
    try:
        marker.parent.mkdir(exist_ok=True)
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return None
    except OSError:  # a read-only experiment: it opens, and may open again on a reopen
        return open_in_tool(tool, exp, target)
    os.close(fd)
    try:
        return open_in_tool(tool, exp, target)
    except BaseException:
        marker.unlink(missing_ok=True)
        raise
