"""The kernel's own log lines (``logging.getLogger("scorep_kernel")``) go to the kernel
process's stderr, which Jupyter shows in the server's console, never into a cell.

Without a handler of their own they would reach logging's last-resort handler, which
writes to ``sys.stderr``: in ipykernel that is the output stream of whichever cell runs at
that moment, so a warning from work done in the background (a run's files, a spare worker)
would appear in an unrelated later cell. ipykernel also forwards what is written to file
descriptor 2 into the current cell, so the handler writes to its copy of the descriptor.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # generic in typeshed only (at run time from Python 3.11 on)
    _StreamHandler = logging.StreamHandler[TextIO]
else:
    _StreamHandler = logging.StreamHandler

LOGGER = "scorep_kernel"
_FORMAT = "[ScorePKernel] %(levelname)s | %(message)s"


class _ProcessStderr(_StreamHandler):
    """Writes to the process's own stderr: under ipykernel, the copy of file descriptor 2
    it keeps while it forwards what is written to descriptor 2 into the current cell (as
    ipykernel reroutes its own log handler)."""

    def __init__(self) -> None:
        copy = getattr(sys.stderr, "_original_stdstream_copy", None)
        if isinstance(copy, int):
            stream: TextIO | None = os.fdopen(copy, "w", buffering=1, closefd=False)
        else:
            stream = sys.__stderr__
        super().__init__(stream)


def keep_out_of_cells() -> None:
    """Route the kernel's logger to the process's own stderr (once per process)."""
    logger = logging.getLogger(LOGGER)
    if any(isinstance(h, _ProcessStderr) for h in logger.handlers):
        return
    handler = _ProcessStderr()
    handler.setFormatter(logging.Formatter(_FORMAT))
    logger.addHandler(handler)
    # a cell that configures the root logger must not pull our lines into its output
    logger.propagate = False
