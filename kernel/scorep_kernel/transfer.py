"""The namespace's way across the process boundary, as the kernel and worker use it.

``scorep_kernel.state`` (shared memory, out-of-band buffers) does the real work when it is
installed; until then this module falls back to one cloudpickle stream with the same
interface, so the kernel's code does not change when the state package lands:

    pack(namespace) -> Packet(header, skipped, nbytes, release())
    unpack(header) -> Unpacked(namespace, process_state, skipped)
    apply(target, unpacked, previous_names=...) -> Changes
    placeholder_for(name, reason)

Also here: which names of IPython's user namespace belong to the user (``user_names``).
"""

from __future__ import annotations

import os
import re
import sys
import types
from dataclasses import dataclass, field
from typing import Any

try:  # the colleague's package, when present (and complete)
    from scorep_kernel import state as _state

    if not all(hasattr(_state, f) for f in ("pack", "unpack", "apply", "placeholder_for")):
        _state = None
except ImportError:  # pragma: no cover - depends on what is installed
    _state = None

BACKEND = "state" if _state is not None else "cloudpickle"

# IPython's own bookkeeping: never sent, never overwritten.
_IPYTHON_NAMES = {
    "In", "Out", "get_ipython", "exit", "quit", "_exit_code",
    "_", "__", "___", "_i", "_ii", "_iii", "_ih", "_oh", "_dh", "_sh",
    "__builtin__", "__builtins__", "__name__", "__doc__", "__package__", "__loader__",
    "__spec__", "__file__", "__cached__",
}  # fmt: skip
_CACHE_NAME = re.compile(r"^_i?\d+$")

try:  # the state package's rule, when present, so both sides agree on what travels
    from scorep_kernel.state.names import is_bookkeeping as _is_bookkeeping
except ImportError:
    _is_bookkeeping = None


def user_names(namespace: dict[str, Any], hidden: dict[str, Any] | None = None) -> list[str]:
    """The names a user made: not IPython's caches, not the shell's hidden entries (unless
    the user rebound them)."""
    hidden = hidden or {}
    names = []
    for name, value in namespace.items():
        if not isinstance(name, str):
            continue
        if _is_bookkeeping is not None:
            if _is_bookkeeping(name, value):
                continue
        elif name in _IPYTHON_NAMES or _CACHE_NAME.match(name) or (
            name.startswith("__") and name.endswith("__")
        ):
            continue
        if name in hidden and hidden[name] is value:
            continue
        names.append(name)
    return names


# ---------------------------------------------------------------------------------------
# fallback implementation (cloudpickle), replaced by scorep_kernel.state when present


class Placeholder:
    """Stands in for a value that could not cross the process boundary; using it says why."""

    def __init__(self, name: str, reason: str):
        self._name = name
        self._reason = reason

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"{self._name!r} could not be sent to the profiling process ({self._reason}), "
            f"so it is not available in a profiled cell. Use it in an unprofiled cell, or "
            f"recreate it inside the profiled cell."
        )

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        self._fail()

    __call__ = __iter__ = __next__ = __len__ = __getitem__ = __bool__ = _fail

    def __repr__(self) -> str:
        return f"<not transferred: {self._name} ({self._reason})>"


@dataclass
class Packet:
    header: bytes
    skipped: dict[str, str]  # name -> reason
    nbytes: int

    def release(self) -> None:  # nothing to free: everything is in the header
        pass


@dataclass
class Unpacked:
    namespace: dict[str, Any]
    process_state: dict[str, Any]
    skipped: dict[str, str]


@dataclass
class Changes:
    assigned: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # placeholders: the target's value stays


def placeholder_for(name: str, reason: str) -> Any:
    if _state is not None:
        return _state.placeholder_for(name, reason)
    return Placeholder(name, reason)


def is_placeholder(value: Any) -> bool:
    if isinstance(value, Placeholder):
        return True
    cls = getattr(_state, "Placeholder", None) if _state is not None else None
    return cls is not None and isinstance(value, cls)


def _process_state() -> dict[str, Any]:
    return {"cwd": os.getcwd(), "environ": dict(os.environ), "sys_path": list(sys.path)}


def _apply_process_state(ps: dict[str, Any]) -> None:
    if not ps:
        return
    environ = ps.get("environ")
    if environ is not None:
        for key in [k for k in os.environ if k not in environ]:
            del os.environ[key]
        for key, value in environ.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
    if ps.get("sys_path") is not None:
        sys.path[:] = ps["sys_path"]
    cwd = ps.get("cwd")
    if cwd and cwd != os.getcwd():
        try:
            os.chdir(cwd)
        except OSError:
            pass


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:200]


def pack(namespace: dict[str, Any]) -> Packet:
    if _state is not None:
        return _state.pack(namespace)
    import cloudpickle

    skipped: dict[str, str] = {}
    payload = dict(namespace)
    try:
        header = cloudpickle.dumps((payload, _process_state(), skipped), protocol=5)
    except Exception:
        # Find the culprits one by one, then send the rest as one stream (keeps aliasing).
        for name, value in list(payload.items()):
            try:
                cloudpickle.dumps(value, protocol=5)
            except Exception as e:
                skipped[name] = _reason(e)
                payload[name] = Placeholder(name, skipped[name])
        header = cloudpickle.dumps((payload, _process_state(), skipped), protocol=5)
    return Packet(header=header, skipped=skipped, nbytes=len(header))


def unpack(header: bytes) -> Unpacked:
    if _state is not None:
        return _state.unpack(header)
    import pickle

    namespace, process_state, skipped = pickle.loads(header)
    return Unpacked(namespace=namespace, process_state=process_state, skipped=skipped)


def _rebind(value: Any, target: dict[str, Any], memo: set[int]) -> Any:
    """A function unpickled by value gets a private globals dict; give it the target
    namespace instead, so it sees later rebinding of globals as a notebook function does."""
    if id(value) in memo:
        return value
    memo.add(id(value))
    if isinstance(value, types.FunctionType) and value.__module__ == "__main__":
        new = types.FunctionType(
            value.__code__, target, value.__name__, value.__defaults__, value.__closure__
        )
        new.__kwdefaults__ = value.__kwdefaults__
        new.__qualname__ = value.__qualname__
        new.__annotations__ = value.__annotations__
        new.__doc__ = value.__doc__
        new.__dict__.update(value.__dict__)
        return new
    if isinstance(value, type) and value.__module__ == "__main__":
        for attr, member in list(vars(value).items()):
            inner = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
            if isinstance(inner, types.FunctionType) and inner.__module__ == "__main__":
                rebound = _rebind(inner, target, memo)
                if isinstance(member, staticmethod):
                    rebound = staticmethod(rebound)
                elif isinstance(member, classmethod):
                    rebound = classmethod(rebound)
                try:
                    setattr(value, attr, rebound)
                except (AttributeError, TypeError):
                    pass
    return value


def apply(
    target: dict[str, Any], unpacked: Unpacked, previous_names: Any = ()
) -> Changes:
    """Make ``target`` hold the unpacked names: assign new and changed ones, delete those in
    ``previous_names`` that are gone, keep the target's own value where a placeholder came."""
    if _state is not None:
        return _state.apply(target, unpacked, previous_names=previous_names)
    changes = Changes()
    _apply_process_state(unpacked.process_state)
    memo: set[int] = set()
    for name, value in unpacked.namespace.items():
        if is_placeholder(value):
            if name in target:
                changes.kept.append(name)
                continue
        target[name] = _rebind(value, target, memo)
        changes.assigned.append(name)
    for name in previous_names:
        if name not in unpacked.namespace and name in target:
            del target[name]
            changes.deleted.append(name)
    return changes
