"""The pickler and unpickler that carry a user namespace between processes.

Built on cloudpickle (functions, lambdas and classes defined in the notebook travel by value)
with protocol 5 (large buffers out of band), plus:

* Modules travel by name and are imported again on the other side; a module that cannot be
  imported there becomes a placeholder instead of failing the whole transfer.
* Functions whose globals are the travelling namespace are rebuilt with *the receiving
  namespace* as their globals (a reference to `NAMESPACE_GLOBALS` that the unpickler resolves
  to the dict it was given), so ``def f(): return x`` sees later changes of ``x`` on both sides.
  cloudpickle alone would give them a fresh private dict holding copies of the globals they
  used at pickling time.
* Placeholders for objects the other side holds refuse to be pickled, so they can never travel
  back and overwrite real objects (those for objects that are gone travel as themselves).
* Threads that finished (or never started) travel as such (threads.py).
* bytearray / memoryview (and large top-level bytes, see `LargeBytes`) go out of band too.
"""

from __future__ import annotations

import functools
import importlib
import io
import pickle
import sys
import threading
import types

import cloudpickle
import numpy as np
from cloudpickle import cloudpickle as _cp

from .arrays import covering_arrays, reduce_array
from .placeholder import NotTransferredError, Placeholder, placeholder_for, stands_for_object
from .threads import reduce_thread
from .torch_support import TorchReducer

PROTOCOL = 5


class _NamespaceGlobals(dict):
    """Marker for "the globals of the namespace this is unpickled into". Never mutated."""

    def __reduce__(self):  # only reached if a plain pickler meets it
        return "NAMESPACE_GLOBALS"


NAMESPACE_GLOBALS = _NamespaceGlobals()


def import_module_or_placeholder(name: str):
    """Unpickling side of a module: import it, or stand in with a placeholder saying why not."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    try:
        return importlib.import_module(name)
    except Exception as exc:
        return placeholder_for(
            name, f"a module that cannot be imported here: {type(exc).__name__}: {exc}"
        )


def _rebuild_memoryview(buffer, fmt: str, shape: tuple):
    view = memoryview(buffer)
    try:
        # typeshed lists literal formats only; fmt is the format of the sending side's memoryview
        if fmt != "B" or len(shape) != 1:
            return view.cast("B").cast(fmt, shape)  # type: ignore[call-overload]
        return view
    except (TypeError, ValueError):
        return view


class LargeBytes:
    """Wraps a large ``bytes`` or ``bytearray`` value so that it goes out of band.

    The C pickler writes bytes and bytearray itself without asking reducer_override, so pack()
    wraps large top-level values in this. Nested ones travel in band (still correctly): a
    persistent_id hook would catch them too but slows pickling of small objects ~5x.
    """

    __slots__ = ("data",)

    def __init__(self, data: bytes | bytearray):
        self.data = data

    def __reduce_ex__(self, protocol):
        return type(self.data), (pickle.PickleBuffer(self.data),)


# Open files: cloudpickle would ship a file open for reading as a StringIO of its content,
# which silently changes what the object is. They stay behind like sockets and locks.
_FILE_TYPES = (io.TextIOWrapper, io.BufferedReader, io.BufferedWriter, io.BufferedRandom, io.FileIO)


def _rebuild_lru_cache(function, maxsize, typed):
    return functools.lru_cache(maxsize=maxsize, typed=typed)(function)


_LRU_CACHE_WRAPPER = type(functools.lru_cache()(lambda: None))


class NamespacePickler(cloudpickle.Pickler):
    """cloudpickle.Pickler that knows which dict is the travelling namespace."""

    def __init__(self, file, namespace: dict, *, buffer_callback, out_of_band_min: int):
        super().__init__(file, protocol=PROTOCOL, buffer_callback=buffer_callback)
        self._namespace = namespace
        self._oob_min = out_of_band_min
        self._covering = covering_arrays(namespace.values())
        torch = sys.modules.get("torch")
        self._torch = (
            TorchReducer(torch) if torch is not None and hasattr(torch, "storage") else None
        )

    def reducer_override(self, obj):
        kind = type(obj)
        if kind is np.ndarray:
            reduced = reduce_array(obj, self._covering)
            if reduced is not NotImplemented:
                return reduced
        elif kind is types.ModuleType:
            name = getattr(obj, "__name__", None)
            if isinstance(name, str) and sys.modules.get(name) is obj:
                return import_module_or_placeholder, (name,)
        elif kind is Placeholder:
            if stands_for_object(obj):
                raise NotTransferredError(f"cannot pickle Placeholder {obj!r}")
            return obj.__reduce_ex__(PROTOCOL)  # one for an object that is gone
        elif kind is _NamespaceGlobals:
            return "NAMESPACE_GLOBALS"
        elif kind in _FILE_TYPES:
            raise pickle.PicklingError(
                f"cannot pickle an open file ({kind.__name__} {getattr(obj, 'name', '')!r})"
            )
        elif kind is memoryview:
            if obj.c_contiguous:
                return _rebuild_memoryview, (pickle.PickleBuffer(obj), obj.format, obj.shape)
            return _rebuild_memoryview, (obj.tobytes(), obj.format, obj.shape)
        elif (
            kind is _LRU_CACHE_WRAPPER
            and getattr(obj.__wrapped__, "__globals__", None) is self._namespace
        ):
            # @functools.cache / lru_cache in the notebook: pickles itself by name, which the other
            # side cannot look up. Rebuild the wrapper around the function (the cache starts empty).
            parameters = obj.cache_parameters()
            return _rebuild_lru_cache, (obj.__wrapped__, parameters["maxsize"], parameters["typed"])
        elif isinstance(obj, threading.Thread):  # finished or never started: threads.py
            return reduce_thread(obj)
        elif self._torch is not None and kind is self._torch.typed_storage:
            reduced = self._torch.reduce_typed_storage(obj)
            if reduced is not NotImplemented:
                return reduced
        return super().reducer_override(obj)

    def _dynamic_function_reduce(self, func):
        if func.__globals__ is not self._namespace:
            return super()._dynamic_function_reduce(func)
        # A function defined in the namespace: its globals are the namespace it lands in.
        code = func.__code__
        closure = None
        if func.__closure__ is not None:
            closure = tuple(_cp._make_empty_cell() for _ in range(len(code.co_freevars)))
        state, slotstate = _cp._function_getstate(func)
        # The receiving namespace supplies the globals; shipping them here would pin copies
        # (and drag along globals that cannot travel).
        slotstate["__globals__"] = {}
        newargs = (code, NAMESPACE_GLOBALS, None, None, closure)
        return _cp._make_function, newargs, (state, slotstate), None, None, _cp._function_setstate


class NamespaceUnpickler(pickle.Unpickler):
    """Resolves NAMESPACE_GLOBALS to the dict the functions should live in."""

    def __init__(self, file, *, buffers, globals_dict: dict):
        super().__init__(file, buffers=buffers)
        self._globals_dict = globals_dict

    def find_class(self, module, name):
        if name == "NAMESPACE_GLOBALS" and module == __name__:
            return self._globals_dict
        return super().find_class(module, name)
