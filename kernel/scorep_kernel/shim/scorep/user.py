"""``scorep.user`` of Score-P's Python bindings, recorded by the builtin tracer with the
bindings' semantics (measure.user_recorder):

- ``region(name)`` / ``region_begin`` / ``region_end``: ``user:<name>`` regions; an end
  without its begin records an ``error_region`` with the name as its ``leave-region``
  parameter and prints the bindings' two ``SCOREP_BINDING_PYTHON ERROR`` lines, then goes on.
- ``@region()`` without a name: the function as its own region while the instrumenter is
  off (``--noinstrumenter``, ``with scorep.instrumenter.disable()``); nothing more while
  it is on (the tracer records the function anyway).
- ``rewind_begin`` / ``rewind_end(name, True)``: what ran in between is dropped and the
  trace says MEASUREMENT_ON_OFF OFF / ON, as Score-P's rewind writes it.
- ``parameter_int`` / ``_uint`` / ``_string``: OTF2 parameter events.
- ``force_finalize()``: nothing after it is recorded in this run.
- ``instrument_function`` / ``instrument_module``: ``@region()`` on a function, on every
  function of a module.
"""

from __future__ import annotations

import sys
import types

from scorep_kernel.measure.session import active

from ._wraps import wraps


def _caller(depth: int = 2) -> tuple[str, int]:
    try:
        frame = sys._getframe(depth)
        return frame.f_code.co_filename, frame.f_lineno
    except ValueError:
        return "", 0


def region_begin(name, file_name=None, line_number=None):
    """Begin the user region ``name``; end it with region_end(name)."""
    m = active()
    if m is not None:
        if file_name is None or line_number is None:
            file_name, line_number = _caller()
        m.user.region_begin(str(name), file_name, line_number)


def region_end(name):
    m = active()
    if m is not None:
        m.user.region_end(str(name))


class region:
    """A user region as context manager or decorator::

    with scorep.user.region("load"):
        ...

    @scorep.user.region("step")
    def step(): ...
    """

    def __init__(self, region_name=""):
        self.region_name = str(region_name) if region_name else ""
        self.func = None

    def __call__(self, func):
        self.func = func
        name = self.region_name
        code = getattr(func, "__code__", None)
        file_name = code.co_filename if code is not None else ""
        line = code.co_firstlineno if code is not None else 0

        @wraps(func)
        def inner(*args, **kwargs):
            m = active()
            if m is None:
                return func(*args, **kwargs)
            user = m.user
            if name:
                user.region_begin(name, file_name, line)
                try:
                    return func(*args, **kwargs)
                finally:
                    user.region_end(name)
            if user.instrumenter_enabled():
                return func(*args, **kwargs)
            t0 = user.now()
            try:
                return func(*args, **kwargs)
            finally:
                user.function_region(func, t0, user.now())

        return inner

    def __enter__(self):
        if not self.region_name:
            raise RuntimeError("A region name needs to be specified.")
        m = active()
        if m is not None:
            file_name, line = _caller()
            m.user.region_begin(self.region_name, file_name, line)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        m = active()
        if m is not None and self.region_name:
            m.user.region_end(self.region_name)
        return False


def instrument_function(fun, instrumenter_fun=region):
    return instrumenter_fun()(fun)


def instrument_module(module, instrumenter_fun=region):
    for elem in dir(module):
        module_fun = module.__dict__[elem]
        if isinstance(module_fun, types.FunctionType):
            module.__dict__[elem] = instrument_function(module_fun, instrumenter_fun)


def rewind_begin(name, file_name=None, line_number=None):
    """Begin a rewind region: rewind_end(name, True) drops what was recorded since."""
    m = active()
    if m is not None:
        m.user.rewind_begin(str(name))


def rewind_end(name, value):
    m = active()
    if m is not None:
        m.user.rewind_end(str(name), bool(value))


def oa_region_begin(name, file_name=None, line_number=None):
    if file_name is None or line_number is None:
        file_name, line_number = _caller()
    region_begin(name, file_name, line_number)


def oa_region_end(name):
    region_end(name)


def enable_recording():
    """Resume recording (functions and user regions) on this thread."""
    m = active()
    if m is not None:
        m.user.set_recording(True)


def disable_recording():
    """Pause all recording on this thread until enable_recording()."""
    m = active()
    if m is not None:
        m.user.set_recording(False)


def parameter_int(name, val):
    m = active()
    if m is not None:
        m.user.parameter("int", name, int(val))


def parameter_uint(name, val):
    m = active()
    if m is not None:
        m.user.parameter("uint", name, int(val))


def parameter_string(name, string):
    m = active()
    if m is not None:
        m.user.parameter("string", name, str(string))


def force_finalize():
    """Nothing after this call is recorded in this run."""
    m = active()
    if m is not None:
        m.user.force_finalize()


def reregister_exit_handler():
    """Score-P's atexit handler; the builtin tracer ends with the run, not the process."""
