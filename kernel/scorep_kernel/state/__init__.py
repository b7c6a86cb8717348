"""State persistence between the kernel and a worker process.

A profiled cell runs in a fresh worker process. The kernel packs its user namespace, the
worker unpacks and applies it, runs the cell, packs its namespace, and the kernel applies
that: afterwards the kernel is as if the cell had run in it.

    kernel                                   worker
    p = pack(user_ns)            header ->   u = unpack(header)           # then ack
    (on ack) p.release()                     apply(ns, u, bind_placeholders=True)
                                             ... run the cell ...
    u = unpack(header)           <- header   q = pack(ns)
    (ack) apply(user_ns, u, previous_names=p.names)           (on ack) q.release()

What travels: every user name except dunder names and IPython/ipykernel bookkeeping (In,
Out, _, __, ___, _<n>, _i*, _ih, _oh, _dh, _exit_code, get_ipython, exit, quit, IPython's
open); see names.py. All names go through ONE pickler (shared memo), so aliasing survives.
Functions, lambdas and classes defined in the notebook travel by value (cloudpickle) and
their functions see the receiving namespace as globals; modules travel by name; buffers of
1 MiB and more (numpy arrays, pandas through numpy, bytearray, memoryview, top-level bytes)
go out of band (see transport.py). What cannot be pickled is skipped and reported, and the
worker binds a placeholder for it that explains itself when used.
"""

from .apply import Changes, apply
from .errors import StateTransferError
from .names import is_bookkeeping
from .packet import OUT_OF_BAND_MIN, Packet, Unpacked, pack, unpack
from .placeholder import NotTransferredError, placeholder_for
from .transport import allow_reader, choose_transport

__all__ = [
    "OUT_OF_BAND_MIN",
    "Changes",
    "NotTransferredError",
    "Packet",
    "StateTransferError",
    "Unpacked",
    "allow_reader",
    "apply",
    "choose_transport",
    "is_bookkeeping",
    "pack",
    "placeholder_for",
    "unpack",
]
