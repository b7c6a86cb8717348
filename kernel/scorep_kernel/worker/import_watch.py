"""Tell the kernel when a cell starts importing a package the worker did not have.

The namespace that comes back after the cell holds objects of that package (a torch tensor
after ``import torch``), and the kernel imports it to unpickle them: 1.9 s for torch, after
the cell, in the user's wait. Told when the worker's import begins, the kernel imports the
package in a thread at the same time (two processes, two cores), and the namespace comes
back into a kernel that has it already.

A finder first on ``sys.meta_path`` sees each module not yet loaded; it reports top-level
packages, once each, while a cell runs, and finds nothing itself.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

# The worker's own machinery: never worth importing in the kernel ahead of time.
_NOT_REPORTED = ("scorep", "scorep_kernel", "IPython", "ipykernel", "__main__")


class ImportWatch:
    def __init__(self, report: Callable[[str], None]):
        self.report = report
        self.active = False  # while a cell runs
        self._seen: set[str] = set(sys.modules)

    def install(self) -> None:
        sys.meta_path.insert(0, self)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if self.active and path is None and fullname not in self._seen:
            self._seen.add(fullname)
            if not fullname.startswith(_NOT_REPORTED):
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
