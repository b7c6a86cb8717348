"""Region names as Score-P's Python bindings write them: ``module:function``,
``module.Class:method``, ``user:<name>``; the region group is the module."""

from __future__ import annotations

import os
import re
import sys

from scorep_kernel import region_words as rw

from ..formats.recording import ROLE_FUNCTION, Region
from .self_class import SelfClasses


def matches(module: str, prefixes: tuple[str, ...]) -> bool:
    """ "numpy" matches numpy and numpy.linalg, not numpyro."""
    return any(module == p or module.startswith(p + ".") for p in prefixes)


# Where IPython and ipykernel put the code of notebook cells, which runs in __main__.
_CELL_FILE = re.compile(r"(^<ipython-input-\d+-[0-9a-f]+>$)|([/\\]ipykernel_\d+[/\\][^/\\]+\.py$)")


class ModuleNames:
    """File name -> module name, from sys.modules first, then from sys.path. Code of
    notebook cells (this run's or earlier cells') is ``__main__``, as Score-P sees it."""

    def __init__(self, main_files: tuple[str, ...] = ()):
        self._by_file: dict[str, str] = {f: "__main__" for f in main_files if f}
        self._cell_dirs = {os.path.dirname(f) for f in main_files if f and os.path.dirname(f)}
        self._indexed = False
        self._paths: list[str] | None = None

    def _index(self) -> None:
        self._indexed = True
        main = sys.modules.get("__main__")
        path = getattr(main, "__file__", None)
        if isinstance(path, str):
            self._by_file.setdefault(path, "__main__")
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            # multiprocessing registers the main module a second time as __mp_main__
            if isinstance(path, str) and name not in ("__main__", "__mp_main__"):
                self._by_file.setdefault(path, name)
                if path.endswith((".pyc", ".pyo")):
                    self._by_file.setdefault(path[:-1], name)

    def _from_sys_path(self, filename: str) -> str | None:
        if self._paths is None:
            self._paths = sorted(
                (os.path.abspath(p) + os.sep for p in sys.path if p and isinstance(p, str)),
                key=len,
                reverse=True,
            )
        for prefix in self._paths:
            if filename.startswith(prefix):
                rel = filename[len(prefix) :]
                root, ext = os.path.splitext(rel)
                if ext not in (".py", ".pyw", ".pyx", ""):
                    continue
                parts = root.split(os.sep)
                if parts and parts[-1] == "__init__":
                    parts.pop()
                if parts and all(p.isidentifier() for p in parts):
                    return ".".join(parts)
        return None

    def module(self, filename: str) -> str:
        found = self._by_file.get(filename)
        if found is not None:
            return found
        if not self._indexed:
            self._index()
            found = self._by_file.get(filename)
            if found is not None:
                return found
        if _CELL_FILE.search(filename) or os.path.dirname(filename) in self._cell_dirs:
            found = "__main__"
        elif filename.startswith("<frozen ") and filename.endswith(">"):
            found = filename[len("<frozen ") : -1]
        elif filename.startswith("<"):
            found = "__main__"  # exec'd strings, as Score-P sees them (globals' __name__)
        else:
            found = self._from_sys_path(filename) or os.path.splitext(os.path.basename(filename))[0]
        self._by_file[filename] = found
        return found


def code_region(code, modules: ModuleNames, classes: SelfClasses) -> tuple[Region, str]:
    """The region of a Python code object, and its module. Named as Score-P's bindings do
    (self_class.py): after the class of ``self`` when the frame has one
    (``__main__.S:m`` for K.m called on an S), else after the module, static and class
    methods and methods whose first parameter is not ``self`` included (``__main__:m``)."""
    module = modules.module(code.co_filename)
    owner = classes.name(code, module)
    region = Region(
        name=rw.function_region_name(module, code.co_name, owner),
        group=module,
        file=code.co_filename,
        line=int(code.co_firstlineno),
        role=ROLE_FUNCTION,
    )
    return region, module


def c_module(module: str | None, type_name: str | None) -> str:
    """The module of a builtin function or method (``c_region``'s group)."""
    if module:
        return module
    if type_name and "." in type_name:
        return type_name.rsplit(".", 1)[0]
    return "builtins"


def c_region(module: str | None, type_name: str | None, name: str) -> tuple[Region, str]:
    """A builtin function (module-level: ``time:sleep``) or method (``builtins.list:append``)."""
    mod = c_module(module, type_name)
    if module:
        full = f"{module}:{name}"
    elif type_name:
        full = f"{type_name}:{name}" if "." in type_name else f"builtins.{type_name}:{name}"
    else:
        full = f"builtins:{name}"
    return Region(name=full, group=mod, role=ROLE_FUNCTION), mod
