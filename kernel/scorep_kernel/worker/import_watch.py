"""Tell the kernel when a cell starts importing a package the worker did not have.

The namespace that comes back after the cell holds objects of that package (a torch tensor
after ``import torch``), and the kernel imports it to unpickle them: 1.9 s for torch, after
the cell, in the user's wait. Told when the worker's import begins, the kernel imports the
package in a thread at the same time (two processes, two cores), and the namespace comes
back into a kernel that has it already.

A finder first on ``sys.meta_path`` sees each module not yet loaded; it reports top-level
packages, once each, while a cell runs, and finds nothing itself. Only those the cell's
own code imports (the importing frame's globals are the cell's namespace): what they
import in turn comes with them in the kernel, and a package imported inside another's
code (torch.optim loading torch._dynamo and with it sympy, networkx, hypothesis and
twenty more) holds nothing the namespace refers to. Reported, each of those cost an
import in the kernel and another in the spare template beside the cell's own, three
processes importing on two cores while the user waits for the cell; the next spare still
gets them, from the modules the cell's worker had at its end (CellDone.imported).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

# The worker's own machinery: never worth importing in the kernel ahead of time.
_NOT_REPORTED = ("scorep", "scorep_kernel", "IPython", "ipykernel", "__main__")
# Frames between an import statement and the finder: importlib's own, and this package's
# (measure.imports' hook, while the builtin tracer runs).
_PASSED = ("<frozen importlib.", os.path.dirname(importlib.__file__) + os.sep,
           os.path.dirname(os.path.dirname(__file__)) + os.sep)  # fmt: skip


def importer_globals() -> dict[str, Any] | None:
    """The globals of the code whose import reached the finder (a module body, a cell)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PASSED):
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_globals if frame is not None else None


class ImportWatch:
    def __init__(self, report: Callable[[str], None], namespace: Callable[[], dict[str, Any]]):
        self.report = report
        self.namespace = namespace  # the cell's globals: imports from there are reported
        self.active = False  # while a cell runs
        self._seen: set[str] = set(sys.modules)

    def install(self) -> None:
        sys.meta_path.insert(0, self)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if self.active and path is None and fullname not in self._seen:
            self._seen.add(fullname)
            if not fullname.startswith(_NOT_REPORTED) and importer_globals() is self.namespace():
                try:
                    self.report(fullname)
                except OSError:  # the kernel is gone; the import goes on
                    pass
        return None  # the other finders find it


def import_all(modules: list[str]) -> list[str]:
    """Import what a spare or the template is asked to preload; the names that failed (a
    module that fails here fails again in the cell, where the user sees why)."""
    failed = []
    for name in modules:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except BaseException:
            failed.append(name)
    return failed
