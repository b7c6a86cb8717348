"""Score-P's own bindings measuring the cells of a worker started as
``python -m scorep --noinstrumenter [--thread=pthread] ... entry.py``.

The bindings trace every Python frame from the moment their instrumenter is registered,
and Score-P aborts the process ("Inconsistent profile ... Exit event for other than current
region") when a frame that was entered before the registration returns while it is
registered. So the instrumenter is registered only inside the cell's own code: each
top-level statement of the cell is compiled as

    __scorep_kernel_on__()
    try:
        <statement>
    finally:
        __scorep_kernel_off__()

(``MeasuredCompiler``), and the two calls are functions of this module, whose frames the
bindings skip (they skip every module named ``scorep*``). IPython's machinery around the
cell, the worker's own threads and the namespace transfer stay out of the trace; the cell
is one region around its statements, named by its label (``cell [n]``) in group ``cell``
as in the builtin tracer: begun and ended through Score-P's C user API
(``scorep_user_api``), since the bindings would name it ``<module>:cell [n]``.

``import x`` in a cell is one region ``import:x`` with the instrumenter off while the
module loads (``imports_as_regions``, on by default): ``import torch`` alone is ~1.2M
calls, 16 MB of Score-P's default memory and 87 % of the run's time otherwise. Nested
imports are part of the outer one, and an import of a module already loaded is no region.
"""

from __future__ import annotations

import ast
import builtins
import sys
import threading
from typing import Any

from IPython.core.compilerop import CachingCompiler

from scorep_kernel import region_words as rw
from scorep_kernel.measure import thread_hooks
from scorep_kernel.worker.scorep_user_api import RegionKey, UserRegions, loaded_user_regions

ON_NAME = "__scorep_kernel_on__"
OFF_NAME = "__scorep_kernel_off__"
VALUE_NAME = "__scorep_kernel_value__"  # the last expression's value, between two steps
# Where Score-P's user API cannot be reached (never under ``python -m scorep``), the cell
# is begun through the bindings, which name a region "<module>:<function>": ":cell [3]"
# (what experiments before the user API read as, region_words.cell_region_label).
CELL_MODULE = ""
IMPORT_MODULE = "import"
USER_MODULE = "user"


class ScorePSession:
    def __init__(self, instrument: bool):
        import scorep.instrumenter

        self.instrumenter = scorep.instrumenter.get_instrumenter()
        # False under --noinstrumenter as the user asked for it: only user regions count
        self.instrument = instrument
        self.imports_as_regions = True
        self.finalize_after_last_cell = True  # not for MPI ranks (mpi.rank)
        self._importing = threading.local()
        self._real_import = builtins.__import__
        self._main_ident = threading.get_ident()  # (a C call: current_thread() is traced)
        # user regions begun on the cell's thread and not ended yet: closed at the cell's
        # end (Score-P aborts with an inconsistent profile otherwise)
        self._open_user: list[str] = []
        self._user_api: UserRegions | None = None  # Score-P's C user API, at the first cell
        self._open_cell: RegionKey | None = None
        self._region_begin = self.instrumenter.region_begin
        self._region_end = self.instrumenter.region_end
        self.instrumenter.region_begin = self._user_begin
        self.instrumenter.region_end = self._user_end
        # native thread id -> the Python thread: Score-P's trace names a thread's location
        # "Orphan thread N" and gives its id (THREAD_BEGIN's ThreadId attribute)
        self.threads: dict[int, threading.Thread] = {}
        _watch_thread_starts(self.threads)
        setattr(builtins, ON_NAME, self.on)
        setattr(builtins, OFF_NAME, self.off)
        builtins.__import__ = self._import

    # --- the measurement, from the run's start to its last cell -------------------------

    def begin_measurement(self) -> None:
        """Start Score-P's measurement now (with SCOREP_EXPERIMENT_DIRECTORY as the run set
        it), where a worker started without Score-P's constructor (worker.scorep_first_pass)
        has it still to start; a no-op where the constructor started it with the process."""
        lib = _scorep_library()
        if lib is not None and not lib.SCOREP_IsInitialized():
            lib.SCOREP_InitMeasurement()

    def end_measurement(self) -> None:
        """Finalize now, after the run's last cell: the files are written and the program
        region ends here, not when the process exits after the namespace went back."""
        if not self.finalize_after_last_cell:
            return
        self.instrumenter.unregister()
        self.instrumenter.force_finalize()

    def thread_names(self) -> dict[str, str]:
        """{native id: the Python thread's name} of the threads started in this process
        (the kernel names Score-P's locations with them, runs.scorep_threads)."""
        return {str(tid): thread.name for tid, thread in list(self.threads.items())}

    # --- the instrumenter, around the cell's statements ------------------------------

    def on(self) -> None:
        if self.instrument:
            self.instrumenter.register()

    def off(self) -> None:
        self.instrumenter.unregister()

    def cell_begin(self, label: str, filename: str) -> None:
        if self._user_api is None:
            self._user_api = loaded_user_regions()
        if self._user_api is None:
            self._region_begin(CELL_MODULE, label, filename, 1)
            return
        self._open_cell = self._user_api.key(label, rw.CELL_GROUP, filename, 1)
        self._user_api.begin(self._open_cell)

    def cell_end(self, label: str) -> None:
        left_open = list(reversed(self._open_user))
        for name in left_open:
            self._region_end(USER_MODULE, name)
        self._open_user.clear()
        if self._user_api is not None and self._open_cell is not None:
            self._user_api.end(self._open_cell)
            self._open_cell = None
        else:
            self._region_end(CELL_MODULE, label)
        if left_open:
            sys.stderr.write(rw.unclosed_regions_note(left_open))

    def _user_begin(self, module_name, function_name, *args, **kwargs):
        if module_name == USER_MODULE and threading.get_ident() == self._main_ident:
            self._open_user.append(function_name)
        return self._region_begin(module_name, function_name, *args, **kwargs)

    def _user_end(self, module_name, function_name, *args, **kwargs):
        opened = self._open_user
        if (
            module_name == USER_MODULE
            and threading.get_ident() == self._main_ident
            and function_name in opened
        ):
            del opened[len(opened) - 1 - opened[::-1].index(function_name)]
        return self._region_end(module_name, function_name, *args, **kwargs)

    # --- imports ------------------------------------------------------------------------

    def _import(self, name, globals=None, locals=None, fromlist=(), level=0):
        if (
            not self.imports_as_regions
            or threading.get_ident() != self._main_ident
            or getattr(self._importing, "active", False)
            or not self.instrumenter.get_registered()
        ):
            return self._real_import(name, globals, locals, fromlist, level)
        full = _resolve(name, globals, level)
        if not _loads_something(full, fromlist):
            return self._real_import(name, globals, locals, fromlist, level)
        self._importing.active = True
        if rw.is_measurement_api(full):
            # the measurement's own API (``import scorep.user`` in a cell): no region, as
            # under the builtin tracer, whose shim is loaded before the cell, and nothing
            # of the import machinery recorded either
            self.instrumenter.unregister()
            try:
                return self._real_import(name, globals, locals, fromlist, level)
            finally:
                self.instrumenter.register()
                self._importing.active = False
        frame = sys._getframe(1)
        self.instrumenter.region_begin(
            IMPORT_MODULE, full, frame.f_code.co_filename, frame.f_lineno
        )
        self.instrumenter.unregister()
        try:
            return self._real_import(name, globals, locals, fromlist, level)
        finally:
            self.instrumenter.register()
            self.instrumenter.region_end(IMPORT_MODULE, full)
            self._importing.active = False


def _watch_thread_starts(threads: dict[int, threading.Thread]) -> None:
    """Note every thread as it starts, in the thread itself, before Score-P's profile
    hook is set there, through the one wrapper of ``threading.Thread._set_native_id`` that
    measure.thread_hooks keeps (its frames are never recorded: its module's name is
    scorep*). Where Python lacks that method, no thread is noted."""

    def started(thread: threading.Thread) -> None:
        if thread.native_id is not None:
            threads[thread.native_id] = thread

    thread_hooks.listen("start", started)


def _scorep_library() -> Any:
    """Score-P's measurement library as LD_PRELOAD loaded it (None: not loaded that way)."""
    import ctypes

    try:
        lib = ctypes.CDLL(None)
        lib.SCOREP_IsInitialized.restype = ctypes.c_bool
        lib.SCOREP_InitMeasurement.restype = None
    except (OSError, AttributeError):
        return None
    return lib


def _resolve(name: str, globals_: Any, level: int) -> str:
    if level <= 0 or not isinstance(globals_, dict):
        return name
    package = globals_.get("__package__") or globals_.get("__name__", "")
    if not globals_.get("__path__") and not globals_.get("__package__"):
        package = package.rpartition(".")[0]
    base = package.rsplit(".", level - 1)[0] if level > 1 else package
    return f"{base}.{name}" if name else base


def _loads_something(full: str, fromlist: Any) -> bool:
    module = sys.modules.get(full)
    if module is None:
        return True
    return any(
        isinstance(item, str) and item != "*" and not hasattr(module, item)
        for item in (fromlist or ())
    )


class MeasuredCompiler(CachingCompiler):
    """IPython's compiler for the worker's shell: every top-level statement of a cell runs
    between ON_NAME() and OFF_NAME() (see the module docstring)."""

    def __call__(self, source, filename, symbol, **kwargs):
        if isinstance(source, (ast.Module, ast.Interactive)):
            shown = isinstance(source, ast.Interactive)  # "single": its value is displayed
            source.body = [part for node in source.body for part in _wrapped(node, shown)]
        return super().__call__(source, filename, symbol, **kwargs)


def _call(name: str, node: ast.stmt) -> ast.stmt:
    """``if name(): pass``, not an expression statement: in "single" mode every expression
    statement's value goes to the display hook, which would run (and be measured) right
    after ON_NAME()."""
    call = ast.If(ast.Call(ast.Name(name, ast.Load()), [], []), [ast.Pass()], [])
    return ast.copy_location(call, node)


def _wrapped(node: ast.stmt, shown: bool = False) -> list[ast.stmt]:
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return [node]  # must stay first; runs nothing worth measuring
    tail: list[ast.stmt] = []
    if shown and isinstance(node, ast.Expr):
        # The cell's last expression is displayed by IPython's display hook (formatters,
        # traitlets: hundreds of calls): evaluate it measured, display it after.
        value = ast.Name(VALUE_NAME, ast.Store())
        assign = ast.copy_location(ast.Assign([value], node.value), node)
        show = ast.copy_location(ast.Expr(ast.Name(VALUE_NAME, ast.Load())), node)
        forget = ast.copy_location(ast.Delete([ast.Name(VALUE_NAME, ast.Del())]), node)
        node, tail = assign, [show, forget]
    guarded = ast.Try(body=[node], handlers=[], orelse=[], finalbody=[_call(OFF_NAME, node)])
    ast.copy_location(guarded, node)
    parts = [_call(ON_NAME, node), guarded, *tail]
    for part in parts:
        ast.fix_missing_locations(part)
    return parts
