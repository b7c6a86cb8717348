"""apply(): make a namespace (and the process state) equal to what came from the other side."""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass, field

from .packet import Unpacked
from .placeholder import is_placeholder, placeholder_for

__all__ = ["Changes", "apply", "apply_process_state"]


@dataclass
class Changes:
    """What apply() changed, for a message to the user."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)  # rebound to the object that came back
    deleted: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)  # skipped: left as they were, {name: reason}
    placeholders: list[str] = field(default_factory=list)
    # with lost_origin: rebound on the other side to what could not come, {name: reason};
    # a placeholder that says so stands in their place
    lost: dict[str, str] = field(default_factory=dict)
    environ_set: list[str] = field(default_factory=list)
    environ_removed: list[str] = field(default_factory=list)
    sys_path_changed: bool = False
    cwd: str | None = None  # the new working directory, when it changed
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = []
        for label, names in (("added", self.added), ("deleted", self.deleted)):
            if names:
                parts.append(f"{label} {', '.join(sorted(names))}")
        if self.kept:
            parts.append(
                "not transferred: " + "; ".join(f"{n} ({r})" for n, r in sorted(self.kept.items()))
            )
        if self.environ_set or self.environ_removed:
            parts.append(
                f"environment: {len(self.environ_set)} set, {len(self.environ_removed)} removed"
            )
        if self.cwd:
            parts.append(f"working directory now {self.cwd}")
        parts.extend(self.errors)
        return "; ".join(parts) if parts else "no changes"


def apply_process_state(
    state: dict,
    changes: Changes,
    environ_ignore: Iterable[str] = (),
    keep_paths: Iterable[str] = (),
) -> None:
    """os.environ (as a diff), sys.path (in place; entries in ``keep_paths`` are this
    process's own: they keep their place first and never come from the sender) and the
    working directory."""
    ignore = tuple(environ_ignore)
    wanted = state.get("environ")
    if wanted is not None:
        for key in [
            k for k in os.environ if k not in wanted and not k.startswith(ignore or ("\0",))
        ]:
            del os.environ[key]
            changes.environ_removed.append(key)
        for key, value in wanted.items():
            if ignore and key.startswith(ignore):
                continue
            if os.environ.get(key) != value:
                os.environ[key] = value
                changes.environ_set.append(key)
    path = state.get("sys_path")
    if path is not None:
        keep = tuple(keep_paths)
        path = [p for p in sys.path if p in keep] + [p for p in path if p not in keep]
        if sys.path != path:
            sys.path[:] = path
            changes.sys_path_changed = True
    cwd = state.get("cwd")
    if cwd is not None and os.getcwd() != cwd:
        try:
            os.chdir(cwd)
            changes.cwd = cwd
        except OSError as exc:
            changes.errors.append(
                f"could not change the working directory to {cwd} ({exc.strerror})"
            )


def _rebind_globals(value, old: dict, new: dict):
    """Fallback when the objects were built before apply(): a function living in `old` is copied
    into one living in `new` (top-level functions and the methods of top-level classes)."""
    if isinstance(value, types.FunctionType) and value.__globals__ is old:
        clone = types.FunctionType(
            value.__code__, new, value.__name__, value.__defaults__, value.__closure__
        )
        clone.__kwdefaults__ = value.__kwdefaults__
        clone.__dict__.update(value.__dict__)
        clone.__qualname__, clone.__module__, clone.__doc__ = (
            value.__qualname__,
            value.__module__,
            value.__doc__,
        )
        clone.__annotations__ = value.__annotations__
        return clone
    if isinstance(value, type):
        for attr, member in list(vars(value).items()):
            inner = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
            if isinstance(inner, types.FunctionType) and inner.__globals__ is old:
                clone = _rebind_globals(inner, old, new)
                setattr(value, attr, type(member)(clone) if inner is not member else clone)
    return value


def apply(
    target: dict,
    unpacked: Unpacked,
    *,
    previous_names: Iterable[str] | None = None,
    bind_placeholders: bool = False,
    placeholder_where: str = "kernel",
    environ_ignore: Iterable[str] = (),
    keep_paths: Iterable[str] = (),
    lost_origin: str | None = None,
) -> Changes:
    """Make `target` equal to the unpacked namespace and apply the process state.

    * Names that came are bound (added or rebound); functions defined in the notebook get
      `target` as their globals.
    * Names in `previous_names` (pass Packet.names of the packet you sent) that did not come
      back and were not skipped were deleted on the other side: they are deleted here too.
      None: nothing is deleted.
    * Skipped names are left untouched. With bind_placeholders (the worker side), a skipped name
      that `target` lacks is bound to placeholder_for(name, reason, where=placeholder_where).
    * environ_ignore: prefixes of environment variables to leave alone (e.g. "SCOREP_").
    * keep_paths: sys.path entries that are this process's own (e.g. the scorep shim).
    * lost_origin (the kernel side, e.g. "cell [5]"): a skipped name that was not a
      placeholder over there was (re)bound there to something that cannot come back: its
      value here is stale, so a placeholder saying what it was and which cell made it
      takes its place (Changes.lost). Without it such names keep their value here.
    """
    changes = Changes()
    if unpacked.process_state is not None:
        apply_process_state(unpacked.process_state, changes, environ_ignore, keep_paths)

    if unpacked._namespace is None:
        incoming: dict = {}
        unpacked._load(incoming, target)
    else:
        incoming = unpacked._namespace
        if unpacked._globals is not target:
            old = unpacked._globals
            assert old is not None  # Unpacked._load sets _globals together with _namespace
            for name, value in incoming.items():
                incoming[name] = _rebind_globals(value, old, target)

    for name, value in incoming.items():
        if name in target:
            changes.updated.append(name)
        else:
            changes.added.append(name)
        target[name] = value

    if previous_names is not None:
        for name in previous_names:
            if name not in incoming and name not in unpacked.skipped and name in target:
                del target[name]
                changes.deleted.append(name)

    for name, reason in unpacked.skipped.items():
        if lost_origin is not None and name not in unpacked.stayed:
            target[name] = placeholder_for(name, reason, where="worker", origin=lost_origin)
            changes.lost[name] = reason
        elif bind_placeholders and (name not in target or is_placeholder(target[name])):
            if name not in target:
                changes.placeholders.append(name)
            target[name] = placeholder_for(name, reason, where=placeholder_where)
        else:
            changes.kept[name] = reason
    return changes
