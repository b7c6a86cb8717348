"""pack() and unpack(): a namespace as one small header plus out-of-band buffers.

Header layout (bytes, version 1)::

    b"SKST" + u8 version + u64 meta length + meta (plain pickle) + payload

`meta` holds the process state, the skipped names (and which of them were placeholders,
``stayed``: the receiver holds those objects), the buffer descriptors (see transport.py)
and one entry per travelling name: (name, start, end, first buffer, buffer count) into
`payload`. The payload is a sequence of pickles written by ONE NamespacePickler, one dump per
name; the pickler's memo spans the dumps, so objects shared between names (``b = a``) are
written once and come back as one object. The per-name split is what lets pack() name the
culprit when something cannot be pickled, and lets unpack() skip one name that cannot be
rebuilt (say, an instance of a class whose module is missing here) without losing the rest.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import sys
from collections.abc import Iterable

import numpy as np

from .names import travelling_names
from .pickler import LargeBytes, NamespacePickler, NamespaceUnpickler
from .placeholder import describe_unpicklable, known_unpicklable, stands_for_object
from .transport import Exporter, StateTransferError, choose_transport, import_buffers

__all__ = ["OUT_OF_BAND_MIN", "Packet", "Unpacked", "capture_process_state", "pack", "unpack"]

MAGIC = b"SKST"
VERSION = 1
_PREFIX = struct.Struct("<4sBQ")

#: Buffers at least this large go out of band (shared memory / pulled); smaller ones in band.
OUT_OF_BAND_MIN = 1 << 20


def capture_process_state() -> dict:
    return {"environ": dict(os.environ), "sys_path": list(sys.path), "cwd": os.getcwd()}


class Packet:
    """A packed namespace. Send `header`; keep the Packet until the receiver's unpack() returned."""

    def __init__(
        self,
        header: bytes,
        skipped: dict[str, str],
        nbytes: int,
        names: tuple[str, ...],
        exporter: Exporter,
        transport: str,
        stayed: frozenset[str] = frozenset(),
    ):
        self.header = header
        self.skipped = skipped
        #: the skipped names that were placeholders: the other side holds their objects
        self.stayed = stayed
        self.nbytes = nbytes
        #: the names that travelled (pass them as apply(previous_names=...) when the answer comes)
        self.names = names
        self.transport = transport
        self._exporter = exporter

    def release(self) -> None:
        """Free the shared memory / let go of the buffers. Idempotent; also happens on GC."""
        self._exporter.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        return (
            f"<Packet {len(self.names)} names, {self.nbytes} bytes ({len(self.header)} in the header), "
            f"{len(self.skipped)} skipped, transport={self.transport}>"
        )


class _NullSink:
    def write(self, data):
        return len(data)


def _probe(namespace: dict, value: object, oob_min: int) -> BaseException | None:
    """Pickle `value` alone into nothing; the exception if it cannot be pickled."""
    pickler = NamespacePickler(
        _NullSink(), namespace, buffer_callback=lambda b: False, out_of_band_min=oob_min
    )
    try:
        pickler.dump(value)
    except Exception as exc:
        return exc
    return None


def _pickle_names(namespace: dict, names: list[str], skipped: dict[str, str], oob_min: int):
    """Pickle the names (one pickler, one dump each); unpicklable names go to `skipped`."""
    pending = list(names)
    while True:
        out = io.BytesIO()
        buffers: list[pickle.PickleBuffer] = []

        def keep_large(buffer: pickle.PickleBuffer, buffers=buffers) -> bool:
            if buffer.raw().nbytes < oob_min:
                return True  # in band
            buffers.append(buffer)
            return False

        pickler = NamespacePickler(
            out, namespace, buffer_callback=keep_large, out_of_band_min=oob_min
        )
        wrapped_bytes: dict[int, LargeBytes] = {}
        entries = []
        failure: tuple[int, str, Exception] | None = None
        for position, name in enumerate(pending):
            value = namespace[name]
            if type(value) in (bytes, bytearray) and len(value) >= oob_min:
                value = wrapped_bytes.setdefault(id(value), LargeBytes(value))
            start, first = out.tell(), len(buffers)
            try:
                pickler.dump(value)
            except Exception as exc:
                failure = (position, name, exc)
                break
            entries.append((name, start, out.tell(), first, len(buffers) - first))
        if failure is None:
            return out.getvalue(), entries, buffers
        # The stream and the pickler's memo are now inconsistent: note the culprit, probe the
        # names not tried yet one by one (cheap: large buffers are not copied), start again.
        position, name, cause = failure
        skipped[name] = describe_unpicklable(namespace[name], cause)
        for other in pending[position + 1 :]:
            error = _probe(namespace, namespace[other], oob_min)
            if error is not None:
                skipped[other] = describe_unpicklable(namespace[other], error)
        pending = [n for n in pending if n not in skipped]


def pack(
    namespace: dict,
    *,
    process_state: bool = True,
    skip: Iterable[str] = (),
    transport: str | None = None,
    out_of_band_min: int = OUT_OF_BAND_MIN,
) -> Packet:
    """Serialise the user names of `namespace` (see names.py for those that never travel).

    Never fails because of a value: what cannot be pickled is left out and reported in
    Packet.skipped ({name: reason}). `transport`: "pull" | "shm" | None (automatic, see
    transport.py). Keep the Packet until the receiver's unpack() has returned, then release().
    """
    transport = choose_transport(transport)
    names, left_out = travelling_names(namespace, skip)
    skipped: dict[str, str] = {name: "left out on request" for name in left_out}
    candidates = []
    stayed = set()
    for name in names:
        value = namespace[name]
        if stands_for_object(value):  # the receiver holds the object itself
            skipped[name] = describe_unpicklable(value)
            stayed.add(name)
            continue
        reason = known_unpicklable(value)
        if reason is not None:
            skipped[name] = reason
            continue
        candidates.append(name)
    payload, entries, buffers = _pickle_names(namespace, candidates, skipped, out_of_band_min)

    # plain numpy arrays bound to names (np.memmap and other subclasses excluded: never write
    # back into a file) may take their data back in place, see pull.py
    returnable = {id(namespace[n]) for n in candidates if type(namespace[n]) is np.ndarray}
    exporter = Exporter(transport, returnable)
    raws = [buffer.raw() for buffer in buffers]
    try:
        descriptors = [exporter.export(raw) for raw in raws]
        exporter.seal()
    except OSError as exc:
        exporter.release()
        total = sum(raw.nbytes for raw in raws)
        raise StateTransferError(
            f"could not put {total} bytes of arrays into shared memory ({exc.strerror or exc}): free "
            "memory (or space in /dev/shm), or let the transport be chosen automatically"
        ) from exc
    except BaseException:
        exporter.release()
        raise
    meta = {
        "version": VERSION,
        "transport": transport,
        "entries": entries,
        "buffers": descriptors,
        "skipped": dict(skipped),
        "stayed": sorted(stayed),
        "process_state": capture_process_state() if process_state else None,
    }
    meta_bytes = pickle.dumps(meta, protocol=5)
    header = b"".join([_PREFIX.pack(MAGIC, VERSION, len(meta_bytes)), meta_bytes, payload])
    nbytes = len(header) + sum(raw.nbytes for raw in raws)
    names_sent = tuple(e[0] for e in entries)
    return Packet(header, skipped, nbytes, names_sent, exporter, transport, frozenset(stayed))


class _BufferCursor:
    """The out-of-band buffers for the unpickler, repositionable after a failed name."""

    def __init__(self, buffers: list):
        self.buffers = buffers
        self.index = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.index >= len(self.buffers):
            raise StopIteration
        buffer = self.buffers[self.index]
        self.index += 1
        return buffer


class Unpacked:
    """The receiving side of a Packet. Buffers are already local; objects are built lazily.

    The objects are rebuilt on first access of `namespace`, or by apply(target, ...), which
    rebuilds them with `target` as the globals of the notebook's functions. apply() also sets
    the process state first, so modules found through sys.path / the cwd import correctly.
    """

    def __init__(self, meta: dict, payload: bytes, buffers: list):
        self.process_state: dict | None = meta["process_state"]
        self.skipped: dict[str, str] = dict(meta["skipped"])
        #: skipped names that were placeholders on the sending side: this side has them
        self.stayed: frozenset[str] = frozenset(meta.get("stayed", ()))
        self.transport: str = meta["transport"]
        self.names: tuple[str, ...] = tuple(e[0] for e in meta["entries"])
        self._entries = meta["entries"]
        self._payload = payload
        self._buffers = buffers
        self._namespace: dict | None = None
        self._globals: dict | None = None

    @property
    def namespace(self) -> dict:
        """The names that travelled (and could be rebuilt here)."""
        if self._namespace is None:
            namespace: dict = {}
            self._load(namespace, namespace)
        assert self._namespace is not None  # _load binds it
        return self._namespace

    def _load(self, into: dict, globals_dict: dict) -> None:
        file = io.BytesIO(self._payload)
        cursor = _BufferCursor(self._buffers)
        unpickler = NamespaceUnpickler(file, buffers=cursor, globals_dict=globals_dict)
        for name, start, _end, first, _count in self._entries:
            file.seek(start)
            cursor.index = first
            try:
                into[name] = unpickler.load()
            except Exception as exc:
                self.skipped[name] = f"could not be rebuilt here ({type(exc).__name__}: {exc})"[
                    :200
                ]
                memo = unpickler.memo.copy()
                unpickler = NamespaceUnpickler(file, buffers=cursor, globals_dict=globals_dict)
                unpickler.memo = memo
        self._namespace = into
        self._globals = globals_dict
        self._buffers = []  # the objects own them now

    def __repr__(self):
        return f"<Unpacked {len(self.names)} names, {len(self.skipped)} skipped, transport={self.transport}>"


def unpack(header: bytes) -> Unpacked:
    """Read a Packet's header: copies/maps the out-of-band buffers now, so that the sender may
    release its Packet as soon as this returns."""
    view = memoryview(header)
    if len(view) < _PREFIX.size:
        raise StateTransferError(
            "state header too short: not produced by scorep_kernel.state.pack()"
        )
    magic, version, meta_length = _PREFIX.unpack_from(view)
    if magic != MAGIC:
        raise StateTransferError("not a scorep_kernel.state header (bad magic)")
    if version != VERSION:
        raise StateTransferError(
            f"state header version {version}, this side reads {VERSION}: "
            "the kernel and the worker run different versions of scorep_kernel"
        )
    meta_end = _PREFIX.size + meta_length
    meta = pickle.loads(view[_PREFIX.size : meta_end])
    buffers = import_buffers(meta["buffers"])
    return Unpacked(meta, bytes(view[meta_end:]), buffers)
