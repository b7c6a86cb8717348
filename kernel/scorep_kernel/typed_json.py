"""Parsed JSON checked against TypedDicts: the manifest's types (``manifest``) are also
what its reader checks, so the two cannot disagree. Standard library only.

Each type becomes a check once (``_checker``), so a read costs about what parsing the JSON
does. A check answers None, or where (the key's path) and what is wrong. Keys a TypedDict
does not declare are not checked: the formats grow by new keys.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Union, cast, get_args, get_origin, get_type_hints, is_typeddict

_Check = Callable[[object], "tuple[str, str] | None"]
_JSON_NAMES: dict[object, str] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _kind_of(expected: object) -> str:
    """The JSON word for a type: "a string", "an array", "null" ..."""
    origin = get_origin(expected)
    if origin is list:
        return "an array"
    if origin is dict or is_typeddict(expected):
        return "an object"
    return _JSON_NAMES.get(expected, str(expected))


def check(value: object, expected: object) -> str | None:
    """None when ``value`` (parsed JSON) has type ``expected``, else the key's path and
    what is wrong ("'cells'[2].'code' is an integer, not a string"). Keys a TypedDict does
    not declare are not checked: the format grows by new keys."""
    wrong = _checker(expected)(value)
    return None if wrong is None else f"{wrong[0].lstrip('.')} {wrong[1]}"


@functools.cache
def _checker(expected: object) -> _Check:
    if is_typeddict(expected):
        fields = [
            (key, f".{key!r}", _checker(hint))
            for key, hint in get_type_hints(cast(type, expected)).items()
        ]

        def check_object(value: object) -> tuple[str, str] | None:
            if not isinstance(value, dict):
                return "", f"is {_json_kind(value)}, not an object"
            for key, label, check in fields:
                if key in value:
                    wrong = check(value[key])
                    if wrong is not None:
                        return label + wrong[0], wrong[1]
            return None

        return check_object
    origin, args = get_origin(expected), get_args(expected)
    if origin in (Union, types.UnionType):
        options = [(_kind_of(o), _checker(o)) for o in args]

        def check_union(value: object) -> tuple[str, str] | None:
            wrongs = []
            for _, check in options:
                wrong = check(value)
                if wrong is None:
                    return None
                wrongs.append(wrong)
            # the mismatch inside the one option of the same kind, if any (an array)
            kind = _json_kind(value)
            for (option_kind, _), wrong in zip(options, wrongs):
                if option_kind == kind:
                    return wrong
            return "", f"is {kind}, not {' or '.join(k for k, _ in options)}"

        return check_union
    if origin is list or origin is dict:
        item = _checker(args[-1])
        container = list if origin is list else dict

        def check_container(value: object) -> tuple[str, str] | None:
            if not isinstance(value, container):
                return "", f"is {_json_kind(value)}, not {_kind_of(expected)}"
            pairs = enumerate(value) if isinstance(value, list) else value.items()
            for at, v in pairs:
                wrong = item(v)
                if wrong is not None:
                    return f"[{at!r}]" + wrong[0], wrong[1]
            return None

        return check_container
    if expected is object:
        return lambda value: None
    if expected is float:
        ok: Callable[[object], bool] = lambda v: isinstance(v, (int, float))
    elif expected is type(None):
        ok = lambda v: v is None
    elif isinstance(expected, type):  # str, int, bool: what the TypedDicts above use
        ok = lambda v: isinstance(v, expected)
    else:
        raise TypeError(f"no check for {expected!r}")
    kind = _kind_of(expected)

    def check_value(value: object) -> tuple[str, str] | None:
        if ok(value) and (expected is bool or not isinstance(value, bool)):
            return None
        return "", f"is {_json_kind(value)}, not {kind}"

    return check_value
