"""State persistence between the kernel and a worker process.

A profiled cell runs in a worker process. The kernel packs its user namespace, the worker
unpacks and applies it, runs the cell, packs its namespace, and the kernel applies that:
afterwards the kernel is as if the cell had run in it.

    kernel                                   worker
    p = pack(user_ns)            header ->   u = unpack(header)           # then ack
    (on ack) p.release()                     apply(ns, u, bind_placeholders=True)
                                             ... run the cell ...
    u = unpack(header)           <- header   q = pack(ns)
    (ack) apply(user_ns, u, previous_names=p.names)           (on ack) q.release()

The sender keeps its Packet until the receiver's unpack() has returned (the ack).

What travels: every user name except dunder names and IPython/ipykernel bookkeeping (In,
Out, _, __, ___, _<n>, _i*, _ih, _oh, _dh, _exit_code, get_ipython, exit, quit, IPython's
open); see names.py. All names go through ONE pickler (shared memo), so aliasing survives.
Functions, lambdas and classes defined in the notebook travel by value (cloudpickle); their
functions get the receiving namespace as globals; classes keep their identity over a round
trip; modules travel by name. Buffers of 1 MiB and more (numpy arrays, pandas through numpy,
torch CPU storages, bytearray, memoryview, top-level bytes) go out of band (transport.py):
by default the receiver copies them straight out of the sender's memory (pull.py), and a
numpy array bound to a name that comes back is written into the original array, which is
handed back itself (arrays.py): ``arr += 1`` in a profiled cell changes the kernel's ``arr``
object, as it would unprofiled. Views of such arrays stay views. What cannot be pickled is
skipped and reported (Packet.skipped), and the worker binds a placeholder that explains
itself when used; placeholders never travel back.

Under Yama ptrace_scope=1 (Ubuntu's default) call allow_reader(<other pid>) in each process
(the kernel with the worker's pid, the worker with os.getppid()) so that both directions use
the fast transport; otherwise the sender falls back to shared memory (shm.py).
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
