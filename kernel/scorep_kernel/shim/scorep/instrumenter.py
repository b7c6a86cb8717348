"""``scorep.instrumenter`` of Score-P's Python bindings: switch the recording of Python
functions off and on (per thread) in the builtin tracer.

``enable``/``disable`` work as calls (``scorep.instrumenter.disable()`` pauses until
``enable()``) and as context managers (``with scorep.instrumenter.disable(): ...`` pauses
inside the block and restores the previous state after it), with an optional region name
recorded as a ``user_instrumenter:<name>`` region around the block, as Score-P does.
"""

from __future__ import annotations

import sys

from scorep_kernel.measure.session import active


def get_registered() -> bool:
    """Whether functions are being recorded on this thread."""
    m = active()
    return bool(m is not None and m.instrumenter_enabled())


def register():
    """Resume recording Python functions on this thread."""
    m = active()
    if m is not None:
        m.set_instrumenter(True)


def unregister():
    """Pause recording Python functions on this thread (user regions still recorded)."""
    m = active()
    if m is not None:
        m.set_instrumenter(False)


class _Switch:
    _to: bool = True

    def __init__(self, region_name=None):
        self.region_name = region_name
        m = active()
        self._previous = m.set_instrumenter(self._to) if m is not None else None
        self._in_region = False

    def __enter__(self):
        m = active()
        if m is not None and self.region_name is not None:
            frame = sys._getframe(1)
            m.user_region_begin(
                str(self.region_name),
                frame.f_code.co_filename,
                frame.f_lineno,
                module="user_instrumenter",
            )
            self._in_region = True
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        m = active()
        if m is not None:
            if self._in_region:
                m.user_region_end(str(self.region_name))
            if self._previous is not None:
                m.set_instrumenter(self._previous)
        return False


class enable(_Switch):
    """Record Python functions (from now, or inside the with-block)."""

    _to = True


class disable(_Switch):
    """Do not record Python functions (from now, or inside the with-block)."""

    _to = False
