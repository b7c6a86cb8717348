"""``scorep.instrumenter`` of Score-P's Python bindings: switch the recording of Python
functions off and on (per thread) in the builtin tracer, with the bindings' semantics.

``register()`` / ``unregister()`` switch at once. ``enable`` / ``disable`` act only as
context managers (``with scorep.instrumenter.disable(): ...``) and decorators
(``@scorep.instrumenter.enable()``): the switch holds inside the block or the call and the
previous state comes back after it; a plain call ``disable()`` does nothing, as in the
bindings. A region name marks the block as a ``user_instrumenter:<name>`` region when the
switch changed something (``enable("x")`` while the instrumenter was off).
"""

from __future__ import annotations

import sys

from scorep_kernel.measure.session import active

from ._wraps import wraps


def has_c_instrumenter() -> bool:
    return True


def get_registered() -> bool:
    """Whether functions are being recorded on this thread."""
    m = active()
    return bool(m is not None and m.user.instrumenter_enabled())


def register():
    """Resume recording Python functions on this thread."""
    m = active()
    if m is not None:
        m.user.set_instrumenter(True)


def unregister():
    """Pause recording Python functions on this thread (user regions still recorded)."""
    m = active()
    if m is not None:
        m.user.set_instrumenter(False)


class _Switch:
    _to: bool = True

    def __init__(self, region_name=""):
        self.region_name = region_name
        self._changed: list = []  # per entered block: (measurement, whether it switched)

    def __call__(self, func):
        switch = self

        @wraps(func)
        def inner(*args, **kwargs):
            with type(switch)(switch.region_name):
                return func(*args, **kwargs)

        return inner

    def __enter__(self):
        m = active()
        changed = m is not None and m.user.instrumenter_enabled() != self._to
        self._changed.append((m, changed))
        if changed:
            assert m is not None
            if self.region_name and self._to:
                self._begin(m)
            m.user.set_instrumenter(self._to)
            if self.region_name and not self._to:
                self._begin(m)
        return self

    def _begin(self, m) -> None:
        frame = sys._getframe(2)
        m.user.region_begin(
            str(self.region_name), frame.f_code.co_filename, frame.f_lineno, "user_instrumenter"
        )

    def __exit__(self, exc_type=None, exc_value=None, traceback=None):
        m, changed = self._changed.pop() if self._changed else (None, False)
        if changed and m is not None:
            if self.region_name and not self._to:
                m.user.region_end(str(self.region_name), "user_instrumenter")
            m.user.set_instrumenter(not self._to)
            if self.region_name and self._to:
                m.user.region_end(str(self.region_name), "user_instrumenter")
        return False


class enable(_Switch):
    """Record Python functions inside the with-block or the decorated function."""

    _to = True


class disable(_Switch):
    """Do not record Python functions inside the with-block or the decorated function."""

    _to = False
