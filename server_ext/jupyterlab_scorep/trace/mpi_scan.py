"""A location's MPI records by the native scanner (otf2_scan.c's ``otf2_scan_mpi``): the
fields libotf2 hands its MpiSend, MpiIsend, MpiRecv, MpiIrecv and MpiCollectiveEnd
callbacks, as numpy arrays, in one C pass over the event file instead of a Python call per
record (the 100M-event benchmark archive's 14.7M MPI records took ~18 s that way).

The communicator is mapped by the location's local definitions (Score-P writes local
ids; ``LocalDefinitions.comm_map``), as libotf2 maps it. A file the scanner cannot read
exactly (damaged, foreign, a record shorter than its fields) gives the reason instead,
and ``mpi_read`` reads that location with libotf2's callbacks.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from . import otf2_scan
from .otf2_scan import SCAN_OK, LocalDefinitions

# record types (OTF2 3.0): point-to-point rows carry theirs
MPI_SEND, MPI_ISEND, MPI_RECV, MPI_IRECV = 14, 15, 18, 19

_P, _U64 = ctypes.c_void_p, ctypes.c_uint64


class _MpiIO(ctypes.Structure):
    """otf2_scan.c's otf2_scan_mpi_io, field for field."""

    _fields_ = [
        ("comm_map", _P),
        ("comm_map_size", _U64),
        ("capacity", _U64),
        ("p2p_type", _P),
        ("p2p_peer", _P),
        ("p2p_comm", _P),
        ("p2p_tag", _P),
        ("p2p_bytes", _P),
        ("n_p2p", _U64),
        ("coll_op", _P),
        ("coll_comm", _P),
        ("coll_root", _P),
        ("coll_sent", _P),
        ("coll_received", _P),
        ("n_coll", _U64),
    ]


@dataclass(frozen=True)
class PointToPoint:
    """One row per MpiSend / MpiIsend / MpiRecv / MpiIrecv record, in file order."""

    type: np.ndarray  # uint8: the record type (MPI_SEND ...)
    peer: np.ndarray  # uint32: receiver of a send, sender of a receive (rank in comm)
    comm: np.ndarray  # uint32: global communicator ref
    tag: np.ndarray  # uint32
    bytes: np.ndarray  # uint64: the message's length


@dataclass(frozen=True)
class Collectives:
    """One row per MpiCollectiveEnd record, in file order."""

    op: np.ndarray  # uint8: OTF2_CollectiveOp
    comm: np.ndarray  # uint32: global communicator ref
    root: np.ndarray  # uint32 (0xFFFFFFFF: none)
    sent: np.ndarray  # uint64: bytes sent
    received: np.ndarray  # uint64: bytes received


@dataclass(frozen=True)
class MpiRecords:
    p2p: PointToPoint
    collectives: Collectives


# bytes per row: type 1 + peer, comm, tag 4 each + bytes 8; op 1 + comm, root 4 + 8 + 8
_P2P_ROW, _COLL_ROW = 21, 25


def scan_mpi_or_reason(
    data: np.ndarray | bytes, chunk_size: int, local: LocalDefinitions | None = None
) -> MpiRecords | str:
    """The MPI records of one location's event file, or why the scanner leaves it to
    libotf2's callbacks. The library must be ``otf2_scan.available()``."""
    lib = otf2_scan._library()
    assert lib is not None, "mpi_scan without the library: check otf2_scan.available() first"
    buf = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray)) else data
    buf = np.ascontiguousarray(buf, dtype=np.uint8)
    n = len(buf)
    capacity = int(lib.otf2_scan_announced(buf.ctypes.data, n, chunk_size))
    if capacity < 0:
        return otf2_scan._REFUSED[capacity]
    comm_map = None if local is None else local.comm_map
    if comm_map is not None:
        comm_map = np.ascontiguousarray(comm_map, np.uint32)
    # one block, widest columns first (aligned); np.empty leaves unwritten pages untouched
    block = np.empty((_P2P_ROW + _COLL_ROW) * capacity, np.uint8)
    widths = {"p2p_bytes": 8, "coll_sent": 8, "coll_received": 8, "p2p_peer": 4,
              "p2p_comm": 4, "p2p_tag": 4, "coll_comm": 4, "coll_root": 4, "p2p_type": 1,
              "coll_op": 1}  # fmt: skip
    columns: dict[str, np.ndarray] = {}
    at = 0
    for name, width in widths.items():
        columns[name] = block[at : at + width * capacity].view(f"<u{width}")
        at += width * capacity
    io = _MpiIO(
        None if comm_map is None else comm_map.ctypes.data,
        0 if comm_map is None else len(comm_map),
        capacity,
        *(columns[f].ctypes.data for f in ("p2p_type", "p2p_peer", "p2p_comm", "p2p_tag")),
        columns["p2p_bytes"].ctypes.data,
        0,
        *(columns[f].ctypes.data for f in ("coll_op", "coll_comm", "coll_root")),
        columns["coll_sent"].ctypes.data,
        columns["coll_received"].ctypes.data,
        0,
    )
    status = lib.otf2_scan_mpi(buf.ctypes.data, n, chunk_size, ctypes.byref(io))
    if status != SCAN_OK:
        return "a record the scanner does not read exactly, or a damaged file"
    k, m = int(io.n_p2p), int(io.n_coll)
    c = columns
    return MpiRecords(
        PointToPoint(c["p2p_type"][:k], c["p2p_peer"][:k], c["p2p_comm"][:k],
                     c["p2p_tag"][:k], c["p2p_bytes"][:k]),
        Collectives(c["coll_op"][:m], c["coll_comm"][:m], c["coll_root"][:m],
                    c["coll_sent"][:m], c["coll_received"][:m]),
    )  # fmt: skip
