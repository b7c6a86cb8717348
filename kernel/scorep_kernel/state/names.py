"""Which names of a namespace travel between the kernel and a worker process.

Decision (documented in the package docstring too):

* Dunder names (``__name__``, ``__builtins__``, ``__spec__``, ...) never travel: they describe
  the module the namespace belongs to, and each process has its own.
* IPython's and ipykernel's bookkeeping never travels: the output/input history (``In``,
  ``Out``, ``_``, ``__``, ``___``, ``_<n>``, ``_i``, ``_ii``, ``_iii``, ``_i<n>``, ``_ih``,
  ``_oh``, ``_dh``), ``_exit_code``, and the shell-bound helpers ``get_ipython``, ``exit``,
  ``quit`` and IPython's ``open`` wrapper. They are bound to the shell object of one process,
  and the history can hold every large result of the session.
* Every other name travels, including single-underscore user names such as ``_helper``:
  notebook helpers are often named that way, and a function that calls ``_helper()`` must
  still work on the other side.
"""

from __future__ import annotations

import _io
import re
from collections.abc import Iterable

#: Names bound by IPython / ipykernel in the user namespace (see InteractiveShell.init_user_ns).
IPYTHON_BOOKKEEPING = frozenset(
    {
        "In",
        "Out",
        "get_ipython",
        "exit",
        "quit",
        "_ih",
        "_oh",
        "_dh",
        "_exit_code",
        "_i",
        "_ii",
        "_iii",
    }
)

# "_", "__", "___" (last outputs), "_12" (output 12), "_i12" (input 12).
_HISTORY_NAME = re.compile(r"^(_+|_\d+|_i\d+)$")


def is_bookkeeping(name: str, value: object = None) -> bool:
    """True for names that belong to the interpreter or IPython rather than to the user."""
    if name.startswith("__") and name.endswith("__"):
        return True
    if name in IPYTHON_BOOKKEEPING or _HISTORY_NAME.match(name):
        return True
    # IPython's wrapper of builtins.open; a user's own `open` still travels
    # (_io.open: io.open itself may be wrapped for a run's file I/O, measure.io_recorder)
    return name == "open" and getattr(value, "__wrapped__", None) is _io.open


def travelling_names(namespace: dict, skip: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """Split the namespace's user names into (travelling, left out because the caller said so)."""
    skip = set(skip)
    travelling: list[str] = []
    skipped: list[str] = []
    for name, value in namespace.items():
        if not isinstance(name, str) or is_bookkeeping(name, value):
            continue
        (skipped if name in skip else travelling).append(name)
    return travelling, skipped
