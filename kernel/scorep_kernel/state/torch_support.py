"""torch CPU tensors out of band, with storage sharing kept.

torch pickles a tensor as (storage, offset, size, stride, ...) and a storage as the bytes of
torch.save (in band, one copy per tensor object). Here a CPU storage travels as one protocol-5
buffer instead (zero copy on this side, out of band when large), and all tensors over the
same storage in one pack refer to one holder object, so the pickler's memo sends the bytes
once and the receiving side rebuilds one storage: views and tied weights stay shared.
Only used when torch is already imported; torch is never imported by this package.
"""

from __future__ import annotations

import pickle
from typing import Any


def rebuild_untyped_storage(buffer):
    import torch

    memory = memoryview(buffer)
    if memory.nbytes == 0:
        return torch.UntypedStorage(0)
    if memory.readonly:  # in-band small storages arrive as bytes: torch needs writable memory
        memory = memoryview(bytearray(memory))
    return torch.frombuffer(memory, dtype=torch.uint8).untyped_storage()


def rebuild_typed_storage(untyped, dtype):
    import torch

    return torch.storage.TypedStorage(wrap_storage=untyped, dtype=dtype, _internal=True)


class _StorageBytes:
    """One CPU storage's bytes; pickled once per pack however many tensors share it."""

    __slots__ = ("array",)

    def __init__(self, untyped):
        import torch

        # a uint8 tensor over the whole storage, as numpy: no copy
        # (Any: numpy declares the buffer protocol only for 3.12+, and torch is optional)
        self.array: Any = torch.empty(0, dtype=torch.uint8).set_(untyped).numpy()

    def __reduce_ex__(self, protocol):
        return rebuild_untyped_storage, (pickle.PickleBuffer(self.array),)


class TorchReducer:
    """reducer_override's helper for torch.storage.TypedStorage; one per pickler."""

    def __init__(self, torch_module):
        self.typed_storage = torch_module.storage.TypedStorage
        self._holders: dict[tuple[int, int], _StorageBytes] = {}

    def reduce_typed_storage(self, storage):
        untyped = storage._untyped_storage
        if untyped.device.type != "cpu":
            return NotImplemented
        key = (untyped.data_ptr(), untyped.nbytes())
        holder = self._holders.get(key)
        if holder is None:
            holder = self._holders[key] = _StorageBytes(untyped)
        return rebuild_typed_storage, (holder, storage.dtype)
