"""Stand-ins for objects that could not travel, and short descriptions of why.

A placeholder is bound (in the worker) where the real object stays behind (in the kernel).
Any use of it raises `NotTransferredError` with a message that names the object, says what
it is, and what to do; only ``repr()`` works, so that printing a namespace stays possible.
Placeholders never travel back: pickling one raises, and `pack` reports a top-level one as
skipped, so `apply` on the other side keeps the real object.
"""

from __future__ import annotations

import io
import re
import socket
import threading
import types

__all__ = [
    "NotTransferredError",
    "Placeholder",
    "describe_unpicklable",
    "is_placeholder",
    "placeholder_for",
    "stands_for_object",
]


class NotTransferredError(RuntimeError):
    """Raised on any use of an object that stayed in the other process."""


_HINTS = {
    "an open file": "Open it inside the profiled cell, or run this cell without profiling.",
    "a socket": "Open it inside the profiled cell, or run this cell without profiling.",
}
_DEFAULT_HINT = "Create it inside the profiled cell, or run this cell without profiling."


# How to keep an object a profiled cell made in its process (the cell's words, too).
KEEP_HINT = (
    "To keep it, run that cell in the kernel: unprofiled, or profiled in-process (cell "
    'metadata "isolation": "inprocess", builtin backend); or make it again in a later cell.'
)


def _message(name: str, reason: str, where: str, origin: str | None = None) -> str:
    if where == "kernel":
        return (
            f"`{name}` ({reason}) stays in the kernel: it cannot be sent to the profiling process. "
            + _HINTS.get(reason, _DEFAULT_HINT)
        )
    return (
        f"`{name}` ({reason}) was made by {origin or 'a profiled cell'} in its profiling process "
        f"and could not come back to the kernel. {KEEP_HINT}"
    )


def _lost(name: str, reason: str, origin: str | None) -> Placeholder:
    """Unpickling side of a placeholder for an object that is gone (``where="worker"``)."""
    return Placeholder(name, reason, "worker", origin)


class Placeholder:
    """Bound in place of an object that could not travel. Every use raises NotTransferredError."""

    __slots__ = ("_name", "_origin", "_reason", "_where")

    def __init__(self, name: str, reason: str, where: str = "kernel", origin: str | None = None):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_reason", reason)
        object.__setattr__(self, "_where", where)
        object.__setattr__(self, "_origin", origin)

    def _fail(self, *args, **kwargs):
        raise NotTransferredError(
            _message(
                object.__getattribute__(self, "_name"),
                object.__getattribute__(self, "_reason"),
                object.__getattribute__(self, "_where"),
                object.__getattribute__(self, "_origin"),
            )
        )

    def __getattribute__(self, attr):
        if attr in ("__class__", "_fail", "__repr__", "__reduce_ex__", "__reduce__"):
            return object.__getattribute__(self, attr)
        object.__getattribute__(self, "_fail")()

    def __setattr__(self, attr, value):
        self._fail()

    def __delattr__(self, attr):
        self._fail()

    def __repr__(self):
        name = object.__getattribute__(self, "_name")
        reason = object.__getattribute__(self, "_reason")
        if object.__getattribute__(self, "_where") == "kernel":
            return f"<{name}: {reason}, left in the kernel>"
        origin = object.__getattribute__(self, "_origin") or "a profiled cell"
        return f"<{name}: {reason}, made by {origin} in its profiling process, not brought back>"

    def __reduce_ex__(self, protocol):
        # One that stands for a real object elsewhere never travels (it would replace that
        # object there); one for an object that is gone may: it says the same anywhere.
        if object.__getattribute__(self, "_where") == "worker":
            return _lost, (
                object.__getattribute__(self, "_name"),
                object.__getattribute__(self, "_reason"),
                object.__getattribute__(self, "_origin"),
            )
        self._fail()

    def __reduce__(self):  # __reduce__() takes no protocol argument
        return self.__reduce_ex__(2)

    # Special methods are looked up on the type, bypassing __getattribute__: define them all.
    __call__ = __iter__ = __next__ = __len__ = __bool__ = __getitem__ = __setitem__ = (
        __delitem__
    ) = _fail
    __contains__ = __enter__ = __exit__ = __aenter__ = __aexit__ = __await__ = __aiter__ = _fail
    __int__ = __float__ = __index__ = __str__ = __bytes__ = __format__ = __hash__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = (
        _fail
    )
    __floordiv__ = __mod__ = __pow__ = __matmul__ = __neg__ = __pos__ = __abs__ = __invert__ = _fail
    __and__ = __or__ = __xor__ = __lshift__ = __rshift__ = _fail
    __iadd__ = __isub__ = __imul__ = __itruediv__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = _fail
    __eq__ = __ne__ = _fail
    __fspath__ = __array__ = _fail


def placeholder_for(
    name: str, reason: str, *, where: str = "kernel", origin: str | None = None
) -> Placeholder:
    """The object to bind in place of `name`, which stayed behind because of `reason`.

    `where` says where the real object lives: "kernel" (default: the worker binds this for a
    kernel object it did not get) or "worker" (the kernel binds it for an object the
    profiled cell created and that could not come back: gone with its process; `origin`
    names the cell, e.g. "cell [5]").
    """
    if where not in ("kernel", "worker"):
        raise ValueError(f"where must be 'kernel' or 'worker', not {where!r}")
    return Placeholder(name, reason, where, origin)


def is_placeholder(value: object) -> bool:
    return type(value) is Placeholder


def stands_for_object(value: object) -> bool:
    """A placeholder for an object that lives on in the other process (never sent back)."""
    return is_placeholder(value) and object.__getattribute__(value, "_where") == "kernel"


# --- describing why something cannot travel --------------------------------------------------

_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def _describe_type(value: object) -> str | None:
    """A few words for well-known unpicklable kinds, or None."""
    if isinstance(value, (types.GeneratorType, types.AsyncGeneratorType)):
        return "a generator"
    if isinstance(value, types.CoroutineType):
        return "a coroutine"
    if isinstance(value, io.IOBase) and not isinstance(value, (io.BytesIO, io.StringIO)):
        return "an open file" if not value.closed else "a closed file"
    if isinstance(value, socket.socket):
        return "a socket"
    if isinstance(value, (*_LOCK_TYPES, threading.Condition, threading.Semaphore)):
        return "a lock"
    if isinstance(value, threading.Thread):
        return "a running thread" if value.is_alive() else None  # see threads.py
    if isinstance(value, (types.FrameType, types.TracebackType)):
        return "a stack frame"
    module = type(value).__module__ or ""
    if module.startswith(("ipywidgets", "traitlets")):
        return "a widget"
    if module == "sqlite3":
        return "a database connection"
    return None


def known_unpicklable(value: object) -> str | None:
    """The reason for values that are certain to fail, so pack() need not try them."""
    if isinstance(value, type):
        return None
    return _describe_type(value)


_NAMES_IN_ERRORS = [
    (
        re.compile(r"Placeholder|stays in the kernel|cannot be brought back|could not come back"),
        "an object that stayed behind",
    ),
    (re.compile(r"generator"), "a generator"),
    (re.compile(r"coroutine"), "a coroutine"),
    (
        re.compile(r"open file|TextIOWrapper|BufferedReader|BufferedWriter|BufferedRandom|FileIO"),
        "an open file",
    ),
    (re.compile(r"socket"), "a socket"),
    (re.compile(r"lock|RLock", re.IGNORECASE), "a lock"),
]


def describe_unpicklable(value: object, error: BaseException | None = None) -> str:
    """A few words on why `value` could not be pickled, e.g. "an open file" or "contains a lock"."""
    own = _describe_type(value)
    if own:
        return own
    if is_placeholder(value):
        return object.__getattribute__(value, "_reason")
    text = f"{type(error).__name__}: {error}" if error is not None else ""
    for pattern, words in _NAMES_IN_ERRORS:
        if pattern.search(text):
            return f"contains {words}"
    kind = type(value).__qualname__
    detail = str(error).splitlines()[0][:80] if error is not None else "cannot be pickled"
    return f"a {kind} object that cannot be pickled ({detail})"
