"""``import x`` as one region: a replacement for builtins.__import__ while measuring.

The hook lives in this package, whose frames the C tracer drops together with everything
below them, so an import costs one region instead of the import machinery's thousands of
calls (importlib's own frozen frames are cut the same way for importlib.import_module),
and it switches the profiler off on its thread while the import runs.
A region is recorded only when the import loaded something; an import nested in another
(a module body importing its dependencies) is part of the outer one.
"""

from __future__ import annotations

import builtins
import sys
import threading

from scorep_kernel import region_words as rw

_real_import = builtins.__import__
_importing = threading.local()
_target = None  # the Measurement recording imports: has _now() and record_import()


def install(measurement) -> bool:
    global _target
    if builtins.__import__ is not _real_import and builtins.__import__ is not _import_hook:
        return False  # someone else's hook: leave it alone
    _target = measurement
    builtins.__import__ = _import_hook
    return True


def uninstall() -> None:
    global _target
    _target = None
    if builtins.__import__ is _import_hook:
        builtins.__import__ = _real_import


def _resolve(name: str, globals_: dict | None, level: int) -> str:
    if level <= 0 or not globals_:
        return name
    package = globals_.get("__package__") or globals_.get("__name__", "")
    if not globals_.get("__path__") and not globals_.get("__package__"):
        package = package.rpartition(".")[0]
    base = package.rsplit(".", level - 1)[0] if level > 1 else package
    return f"{base}.{name}" if name else base


def _in_module_body(globals_: dict | None) -> bool:
    """Called from a module body that is being imported (importlib marks its spec), e.g.
    below importlib.import_module(): part of that import, not a region of its own."""
    spec = globals_.get("__spec__") if isinstance(globals_, dict) else None
    return bool(getattr(spec, "_initializing", False))


def _import_hook(name, globals=None, locals=None, fromlist=(), level=0):
    m = _target
    if (
        m is None
        or (level == 0 and not fromlist and name in sys.modules)
        or getattr(_importing, "depth", 0)  # an import inside an import: part of it
        or _in_module_body(globals)
    ):
        return _real_import(name, globals, locals, fromlist, level)
    before = len(sys.modules)
    t0 = m._now()
    _importing.depth = 1
    # The C tracer would drop the import's calls anyway, but it would still be called for
    # each of them (an import of a large package: 1.5x slower). Off for the import; back
    # on through tracer.resume_here(), the same recorder with its open calls kept.
    # Not when C functions are recorded: the C call that switches it off would be counted
    # as entered and never left, and the tracer's bookkeeping would go wrong.
    tracer = m._tracer
    paused = not tracer.c_functions and tracer.owns(sys.getprofile())
    if paused:
        sys.setprofile(None)
    try:
        return _real_import(name, globals, locals, fromlist, level)
    finally:
        t1 = m._now()
        loaded = len(sys.modules) != before  # something was really loaded
        if loaded:
            m.after_import()  # e.g. torch.profiler starts once torch is there (accel)
        if paused:
            tracer.resume_here()
        _importing.depth = 0
        if loaded:
            try:
                full = _resolve(name, globals, level)
            except Exception:
                full = name
            if not rw.is_measurement_api(full):
                m.record_import(full, t0, t1)
