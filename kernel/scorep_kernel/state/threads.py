"""Thread objects across the process boundary: the ones that can be taken over are.

A thread that has finished (the quickstart's ``worker = Thread(...); worker.start();
worker.join()``) is only a record by then: its name, daemon flag, and whatever its
subclass stored on it (``self.result = ...``). It travels as such and arrives as a
finished thread of the same class (``is_alive()`` False, ``join()`` returns at once) with
those attributes. A thread never started travels with its target and arguments and can
be started on the other side. Only a thread still running cannot travel: its work runs in
the process it was started in.
"""

from __future__ import annotations

import pickle
import threading
from typing import Any

# What Thread.__init__ sets on every thread (the rest of a thread's __dict__ is its own).
_THREAD_OWN = frozenset(vars(threading.Thread()))


def reduce_thread(thread: threading.Thread) -> tuple[Any, tuple[Any, ...]]:
    """The pickle reduction of a finished or unstarted thread; PicklingError if it runs."""
    if thread.is_alive():
        raise pickle.PicklingError(f"cannot pickle a running thread ({thread.name!r})")
    own = {k: v for k, v in vars(thread).items() if k not in _THREAD_OWN}
    if thread.ident is None:  # never started
        target = getattr(thread, "_target", None)
        args = (getattr(thread, "_args", ()), getattr(thread, "_kwargs", {}))
        return _unstarted, (type(thread), thread.name, thread.daemon, own, target, *args)
    return _finished, (type(thread), thread.name, thread.daemon, own)


def _new(cls: type[threading.Thread], name: str, daemon: bool, own: dict, **init: Any):
    thread = cls.__new__(cls)
    # Thread's own initialisation, not the subclass's (its arguments are not known here)
    threading.Thread.__init__(thread, name=name, daemon=daemon, **init)
    vars(thread).update(own)
    return thread


def _unstarted(cls, name, daemon, own, target, args, kwargs) -> threading.Thread:
    return _new(cls, name, daemon, own, target=target, args=args, kwargs=kwargs)


def _finished(cls, name, daemon, own) -> threading.Thread:
    thread = _new(cls, name, daemon, own)
    _mark_finished(thread)
    return thread


def _mark_finished(thread: threading.Thread) -> None:
    """Make ``thread`` a thread that ran and ended, without running anything of it."""
    handle = getattr(thread, "_handle", None)  # Python 3.13+
    if handle is not None and hasattr(handle, "_set_done"):
        handle._set_done()
        thread._started.set()  # type: ignore[attr-defined]
    elif hasattr(thread, "_is_stopped") and hasattr(thread, "_tstate_lock"):  # up to 3.12
        thread._started.set()  # type: ignore[attr-defined]
        thread._is_stopped = True
        thread._tstate_lock = None
    else:  # an interpreter whose internals differ: run an empty body to its end
        thread.run = lambda: None  # type: ignore[method-assign]
        thread.start()
        thread.join()
        del thread.run
