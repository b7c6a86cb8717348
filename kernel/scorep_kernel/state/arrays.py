"""numpy arrays: identity, in-place changes and views across the transfer.

numpy's own pickling rebuilds every array as a new object over a copy of its data, so

* a view (``v = a[2:5]``) comes back as an independent array, and ``v[0] = 1`` no longer
  changes ``a``: here a view of an array that is itself a name of the namespace is sent as
  (that array, offset, shape, strides), and rebuilt as a view of it on the other side;
* an array that went to the worker and came back is a new object: here, when its memory comes
  back into the original array (see pull.py), the original array object itself is returned
  (same dtype, shape and layout), so every reference to it sees the cell's in-place changes.
"""

from __future__ import annotations

import pickle

import numpy as np


def rebuild_array(buffer, dtype, shape, order):
    if type(buffer) is pickle.PickleBuffer:  # the original memory of an array lent from here
        original = buffer.raw().obj
        if (
            type(original) is np.ndarray
            and original.dtype == dtype
            and original.shape == shape
            and (original.flags.c_contiguous if order == "C" else original.flags.f_contiguous)
        ):
            return original
    return np.frombuffer(buffer, dtype=dtype).reshape(shape, order=order)


def rebuild_view(base, offset, shape, strides, dtype, writeable):
    view = np.ndarray(shape, dtype, buffer=base, offset=offset, strides=strides)
    if not writeable:
        view.flags.writeable = False
    return view


def _root(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def covering_arrays(namespace_values) -> dict[int, np.ndarray]:
    """id(root memory owner) -> a contiguous top-level array covering all of its memory."""
    found: dict[int, np.ndarray] = {}
    for value in namespace_values:
        if (
            type(value) is not np.ndarray
            or value.dtype.hasobject
            or not (value.flags.c_contiguous or value.flags.f_contiguous)
        ):
            continue
        root = _root(value)
        covers_root = value is root or (
            _address(value) == _address(root) and value.nbytes == root.nbytes
        )
        if covers_root and (id(root) not in found or value is root):
            found[id(root)] = value
    return found


def reduce_array(array: np.ndarray, covering: dict[int, np.ndarray]):
    """The reduction of an exact np.ndarray, or NotImplemented for numpy's own."""
    if array.dtype.hasobject or array.size == 0 or array.dtype.itemsize == 0:
        return NotImplemented
    if array.base is not None:
        target = covering.get(id(_root(array)))
        if target is not None and target is not array:
            offset = _address(array) - _address(target)
            return rebuild_view, (
                target,
                offset,
                array.shape,
                array.strides,
                array.dtype,
                bool(array.flags.writeable),
            )
    if array.flags.c_contiguous:
        order = "C"
    elif array.flags.f_contiguous:
        order = "F"
    else:
        return NotImplemented  # numpy copies it in band
    # numpy's stubs declare ndarray.__buffer__ only for Python >= 3.12; it is a buffer everywhere
    buffer = pickle.PickleBuffer(array)  # type: ignore[arg-type]
    return rebuild_array, (buffer, array.dtype, array.shape, order)
