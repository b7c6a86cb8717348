"""The start and the end of every Python thread, seen on the thread itself.

CPython calls ``threading.Thread._set_native_id`` on a new thread as it starts (before its
``run()``), and ``threading.Thread._delete`` on a thread at its very end (after its
``run()``, the last Python code the thread runs). Each is wrapped here once per process,
and the wrapper calls the listeners registered at that moment; several users share the
one wrapper (the builtin measurement's thread clocks and thread lifetimes, the Score-P
worker's map of thread names) instead of stacking wrappers of their own, which could not
be taken off again in any order.

Both methods are private to CPython's ``threading``: where one is missing (another
Python), ``available()`` says so, registering does nothing, and the callers do without
(a thread's end is then the end of the measurement).

Standard library only, and no frame of this module is ever recorded: the builtin tracer
skips the package's frames, Score-P's bindings skip modules named ``scorep*``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

Listener = Callable[[threading.Thread], None]

_START, _END = "_set_native_id", "_delete"
_listeners: dict[str, list[Listener]] = {_START: [], _END: []}
_installed: set[str] = set()
_lock = threading.Lock()


def available(which: str) -> bool:
    """Whether ``threading.Thread`` has the method (``"start"`` or ``"end"``) to wrap."""
    return callable(getattr(threading.Thread, _name(which), None))


def _name(which: str) -> str:
    if which not in ("start", "end"):
        raise ValueError(f"which must be 'start' or 'end', not {which!r}")
    return _START if which == "start" else _END


def _install(name: str) -> None:
    """Wrap ``threading.Thread.<name>`` once; called with ``_lock`` held."""
    if name in _installed:
        return
    original = getattr(threading.Thread, name)
    listeners = _listeners[name]

    if name == _START:

        def wrapper(thread: threading.Thread) -> None:
            original(thread)  # sets thread.native_id
            for listener in tuple(listeners):
                listener(thread)

    else:

        def wrapper(thread: threading.Thread) -> None:
            try:
                for listener in tuple(listeners):
                    listener(thread)
            finally:
                original(thread)

    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(threading.Thread, name, wrapper)
    _installed.add(name)


def listen(which: str, listener: Listener) -> Callable[[], None]:
    """Call ``listener(thread)`` on every thread that starts (``"start"``: after its native
    id is set) or ends (``"end"``: before ``_delete`` takes it off the list of threads),
    from that thread, until the returned function is called. A listener must not raise
    (an exception at a thread's end is printed by ``threading`` and lost)."""
    name = _name(which)
    if not available(which):
        return lambda: None
    with _lock:
        _install(name)
        _listeners[name].append(listener)

    def remove() -> None:
        with _lock:
            if listener in _listeners[name]:
                _listeners[name].remove(listener)

    return remove


@dataclass(frozen=True)
class Lifetime:
    """When a thread began and ended (``time.perf_counter_ns``); None: not seen."""

    begin_ns: int | None
    end_ns: int | None


class ThreadLifetimes:
    """The begin and end time of each thread that starts or ends while watched, by
    native thread id: what the builtin trace writes as THREAD_BEGIN / THREAD_END, as
    Score-P's pthread adapter does."""

    def __init__(self) -> None:
        self._begin: dict[int, int] = {}
        self._end: dict[int, int] = {}
        self._removers: list[Callable[[], None]] = []

    def watch(self) -> None:
        if self._removers:
            return
        self._removers = [listen("start", self._started), listen("end", self._ended)]

    def unwatch(self) -> None:
        for remove in self._removers:
            remove()
        self._removers = []

    def _started(self, thread: threading.Thread) -> None:
        if thread.native_id is not None:
            self._begin[thread.native_id] = time.perf_counter_ns()

    def _ended(self, _thread: threading.Thread) -> None:
        self._end[threading.get_native_id()] = time.perf_counter_ns()

    def of(self, tid: int) -> Lifetime:
        return Lifetime(self._begin.get(tid), self._end.get(tid))

    def span(
        self, tid: int, first_ns: int, last_ns: int, run: tuple[int, int], before_run: bool
    ) -> tuple[int, int]:
        """(begin, end) ns of thread ``tid`` whose first and last recorded events were at
        ``first_ns`` and ``last_ns``, in a measurement that ran from ``run[0]`` to
        ``run[1]``: a thread alive before the run (``before_run``) begins with it, one not
        seen starting (no hook) with its first event; one not seen ending (still running,
        or no hook) ends with the run. Never after the first event nor before the last."""
        seen = self.of(tid)
        if before_run:
            begin = run[0]
        else:
            begin = seen.begin_ns if seen.begin_ns is not None else first_ns
        end = seen.end_ns if seen.end_ns is not None else run[1]
        return min(begin, first_ns), max(end, last_ns)
