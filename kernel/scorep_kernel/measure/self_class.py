"""The class Score-P's bindings name a function after: the class of its ``self``.

The bindings (scorep_binding_python, ``pythonHelpers.cpp`` ``get_module_name``) name a frame
``<module>.<type(self).__name__>:<function>`` when its locals hold a ``self`` at the call (a
parameter of that name, or a closure's free variable: a function nested in a method), else
``<module>:<function>``; the module is the frame's globals' ``__name__`` (where the function
is defined), and the region a code object gets at its first call is kept for the process
(``try_region_begin``). So an inherited method ``K.m`` called on an ``S`` is
``__main__.S:m``, a static or class method ``__main__:m``.

VizTracer's record of a call holds its code object, not its arguments (logging them costs a
dict per call). The runtime class is found after the run from the defining class ``K``
(the code's ``__qualname__`` looked up in its module): when ``K`` has no subclass, ``K`` is
the only class ``self`` can have. When it has (the method inherited, or called through
``super()``), the candidates that have live instances decide, in one pass over the
collector's objects for all of them (``live_types``: C speed, tens of ms per million
objects, and only when such a method ran); when that leaves more than one or none, the
defining class is named (the bindings' choice is the first caller's class, which the record
does not keep).
"""

from __future__ import annotations

import gc
import inspect
import sys
from types import CodeType

_LOCALS = "<locals>"


def has_self(code: CodeType) -> bool:
    """Whether the frame's locals hold a ``self`` at the call, as the bindings look."""
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return "self" in code.co_varnames[:n] or "self" in code.co_freevars


def _owner(code: CodeType) -> list[str] | None:
    """The qualname path of the class whose ``self`` the frame holds: ``K.m`` -> ["K"];
    ``K.m.<locals>.inner`` (self free in inner) -> ["K"]; None outside a class."""
    parts = getattr(code, "co_qualname", code.co_name).split(".")
    parts.pop()
    while len(parts) >= 2 and parts[-1] == _LOCALS:
        parts.pop()
        parts.pop()
    return parts if parts and parts[-1] != _LOCALS else None


def _resolve(module: str, path: list[str]) -> type | None:
    obj: object = sys.modules.get(module)
    for part in path:
        if obj is None or part == _LOCALS:
            return None
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) else None


def _subclasses(cls: type) -> list[type]:
    out: list[type] = []
    todo: list[type] = list(type.__subclasses__(cls))
    while todo:
        c = todo.pop()
        if c not in out:
            out.append(c)
            todo.extend(type.__subclasses__(c))
    return out


# Up to this many classes, one gc.get_referrers pass; past it, the type of every tracked
# object. get_referrers compares each reference it visits with every class asked for, so its
# cost grows with their number: the paper's training cell asks for torch's nn.Module and its
# 368 subclasses, and one pass over that kernel's 300k objects took 205 ms, where the types
# of all of them took 43 ms and get_referrers of one class 23 ms (16 classes: 38 ms).
REFERRERS_UP_TO = 16


def live_types(wanted: set[type]) -> set[type]:
    """Those of ``wanted`` that have an instance the garbage collector tracks (a class is
    an instance of its metaclass)."""
    if len(wanted) <= REFERRERS_UP_TO:
        return {type(o) for o in gc.get_referrers(*wanted)} & wanted
    return set(map(type, gc.get_objects())) & wanted


class SelfClasses:
    """Code object -> the class name Score-P puts before ``:function`` (None: the module's)."""

    def __init__(self) -> None:
        self._names: dict[CodeType, str | None] = {}

    def prepare(self, codes: list[tuple[CodeType, str]]) -> None:
        """Name the classes of these (code, module) pairs, one census for the ambiguous."""
        ambiguous: dict[CodeType, tuple[type, list[type]]] = {}
        for code, module in codes:
            if code in self._names:
                continue
            if not has_self(code):
                self._names[code] = None
                continue
            found = _owner(code)
            if found is None:
                self._names[code] = None  # ``def f(self)`` outside a class: no class known
                continue
            path = found
            cls = _resolve(module, path)
            if cls is None:  # a class defined in a function: the name it was given
                self._names[code] = path[-1]
                continue
            heirs = _subclasses(cls)  # any may call it: inherited, or through super()
            self._names[code] = cls.__name__
            if heirs:
                ambiguous[code] = (cls, [cls, *heirs])
        if ambiguous:
            self._census(ambiguous)

    def _census(self, ambiguous: dict[CodeType, tuple[type, list[type]]]) -> None:
        wanted = {c for _, cands in ambiguous.values() for c in cands}
        live = live_types(wanted)
        for code, (_cls, cands) in ambiguous.items():
            alive = [c for c in cands if c in live]
            if len(alive) == 1:
                self._names[code] = alive[0].__name__

    def name(self, code: CodeType, module: str) -> str | None:
        if code not in self._names:
            self.prepare([(code, module)])
        return self._names[code]
