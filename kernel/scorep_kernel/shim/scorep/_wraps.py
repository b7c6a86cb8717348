"""``functools.wraps`` for the shim's decorators, written here: the shim's own frames are
left out of the trace, functools' would show as ``functools:wraps`` /
``functools:update_wrapper`` regions that a run under Score-P has not."""

from __future__ import annotations

_ASSIGNED = ("__module__", "__name__", "__qualname__", "__doc__", "__annotations__")


def wraps(func):
    def decorate(inner):
        for attr in _ASSIGNED:
            try:
                setattr(inner, attr, getattr(func, attr))
            except AttributeError:
                pass
        inner.__dict__.update(getattr(func, "__dict__", {}))
        inner.__wrapped__ = func
        return inner

    return decorate
