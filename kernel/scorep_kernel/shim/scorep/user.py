"""``scorep.user`` of Score-P's Python bindings, recorded by the builtin tracer.

User regions are ``user:<name>`` regions (role "user") in the active measurement;
parameters are accepted and not recorded (the builtin trace has no parameter events).
"""

from __future__ import annotations

import functools
import sys

from scorep_kernel.measure.session import active


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
        m.user_region_begin(str(name), file_name, line_number)


def region_end(name):
    m = active()
    if m is not None:
        m.user_region_end(str(name))


class region:
    """A user region as context manager or decorator::

        with scorep.user.region("load"):
            ...

        @scorep.user.region("step")
        def step(): ...

    Without a name, a decorated function is recorded as the function it is (the builtin
    tracer records every function anyway), as Score-P does while its instrumenter runs.
    """

    def __init__(self, region_name: str = ""):
        self.region_name = str(region_name) if region_name else ""
        self.func = None

    def __call__(self, func):
        self.func = func
        if not self.region_name:
            return func

        name = self.region_name
        file_name = func.__code__.co_filename if hasattr(func, "__code__") else ""
        line = func.__code__.co_firstlineno if hasattr(func, "__code__") else 0

        @functools.wraps(func)
        def inner(*args, **kwargs):
            m = active()
            if m is None:
                return func(*args, **kwargs)
            m.user_region_begin(name, file_name, line)
            try:
                return func(*args, **kwargs)
            finally:
                m.user_region_end(name)

        return inner

    def __enter__(self):
        if not self.region_name:
            raise RuntimeError("A region name needs to be specified.")
        m = active()
        if m is not None:
            file_name, line = _caller()
            m.user_region_begin(self.region_name, file_name, line)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        m = active()
        if m is not None and self.region_name:
            m.user_region_end(self.region_name)
        return False


def rewind_begin(name, file_name=None, line_number=None):
    """Rewind regions are not supported by the builtin tracer: recorded as a user region."""
    if file_name is None or line_number is None:
        file_name, line_number = _caller()
    region_begin(name, file_name, line_number)


def rewind_end(name, value):
    region_end(name)


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
        m.set_recording(True)


def disable_recording():
    """Pause all recording on this thread until enable_recording()."""
    m = active()
    if m is not None:
        m.set_recording(False)


def parameter_int(name, val):
    """Accepted for compatibility; the builtin trace records no parameters."""


def parameter_uint(name, val):
    """Accepted for compatibility; the builtin trace records no parameters."""


def parameter_string(name, string):
    """Accepted for compatibility; the builtin trace records no parameters."""
