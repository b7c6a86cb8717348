"""A Recording's accelerator streams in its OTF2 archive, as Score-P's CUDA adapter
writes them, so that Vampir and otf2-print show them as they show Score-P's:

- per device a system tree node of class ``CUDA Device`` named by its number (domain
  ACCELERATOR_DEVICE) under the host's node, holding one location group ``CUDA Context
  <device>`` of type ACCELERATOR created by the process;
- per stream a location of type ACCELERATOR_STREAM named ``CUDA[<device>:<stream>]``;
- a kernel is an Enter/Leave of its region (paradigm CUDA, role KERNEL); a copy is an
  Enter/Leave of a DATA_TRANSFER region around an RmaGet (host to device, and device to
  device) or RmaPut (device to host) of its bytes at its start and an
  RmaOpCompleteBlocking at its end, on the window ``CUDA_WINDOW`` whose communicator
  holds the process's first thread (rank 0) and the streams, as the adapter writes a
  copy; a memset is an Enter/Leave (paradigm CUDA);
- the launch link: the adapter's "callsite id" parameter (ParameterUnsignedInt) right
  after the kernel's Enter on the stream and after the launching call's Enter on the host
  thread, with the same value (here CUPTI's correlation id).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from otf2.enums import (
    GroupFlag,
    GroupType,
    LocationGroupType,
    LocationType,
    Paradigm,
    ParameterType,
    RegionRole,
    SystemTreeDomain,
)

from .recording import (
    COPY_KINDS,
    ROLE_KERNEL,
    ROLE_MEMCPY,
    ROLE_MEMSET,
    ROLE_OPERATOR,
    ROLE_RUNTIME,
    Recording,
)

DEVICE_NODE_CLASS = "CUDA Device"
CONTEXT_NAME = "CUDA Context {device}"
WINDOW_NAME = "CUDA_WINDOW"
CALLSITE_PARAMETER = "callsite id"
MATCHING_ID = 42  # Score-P's adapter writes this constant for every copy

# recording role -> (OTF2 region role, paradigm), as Score-P's CUDA adapter.
DEVICE_REGION_ROLES = {
    ROLE_OPERATOR: (RegionRole.FUNCTION, Paradigm.USER),
    ROLE_RUNTIME: (RegionRole.WRAPPER, Paradigm.CUDA),
    ROLE_KERNEL: (RegionRole.KERNEL, Paradigm.CUDA),
    ROLE_MEMCPY: (RegionRole.DATA_TRANSFER, Paradigm.CUDA),
    ROLE_MEMSET: (RegionRole.FUNCTION, Paradigm.CUDA),
}
PARADIGM_NAME = "cuda"
_GETS = {COPY_KINDS.index("HtoD"), COPY_KINDS.index("DtoD"), COPY_KINDS.index("PtoP")}
_PUT = COPY_KINDS.index("DtoH")


@dataclass
class DeviceDefinitions:
    stream_locations: list = field(default_factory=list)
    parameter: Any = None
    window: Any = None
    stream_ranks: list[int] = field(default_factory=list)


def define(
    defs: Any, recording: Recording, node: Any, process: Any, threads: list
) -> DeviceDefinitions:
    """The device nodes, contexts, stream locations, the callsite parameter and the copy
    window; nothing without device streams or launches."""
    out = DeviceDefinitions()
    has_launches = any(t.callsites is not None for t in recording.threads)
    if not recording.devices and not has_launches:
        return out
    out.parameter = defs.parameter(CALLSITE_PARAMETER, parameter_type=ParameterType.UINT64)
    contexts: dict[int, Any] = {}
    for s in recording.devices:
        if s.device not in contexts:
            dev = defs.system_tree_node(str(s.device), class_name=DEVICE_NODE_CLASS, parent=node)
            defs.system_tree_node_domain(dev, SystemTreeDomain.ACCELERATOR_DEVICE)
            contexts[s.device] = defs.location_group(
                CONTEXT_NAME.format(device=s.device),
                location_group_type=LocationGroupType.ACCELERATOR,
                system_tree_parent=dev,
                creating_location_group=process,
            )
        out.stream_locations.append(
            defs.location(s.name, type=LocationType.ACCELERATOR_STREAM, group=contexts[s.device])
        )
    if out.stream_locations and threads:
        members = [threads[0], *out.stream_locations]
        defs.group(
            "CUDA_LOCATIONS", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.CUDA,
            group_flags=GroupFlag.NONE, members=members,
        )  # fmt: skip
        group = defs.group(
            "CUDA_GROUP", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.CUDA,
            group_flags=GroupFlag.NONE, members=members,
        )  # fmt: skip
        comm = defs.comm("CUDA_COMM", group=group)
        out.window = defs.rma_win(WINDOW_NAME, comm=comm)
        out.stream_ranks = list(range(1, len(members)))
    return out


def write_streams(
    trace: Any, recording: Recording, dd: DeviceDefinitions, regions: list, offset: int
) -> int:
    """Every stream's events through the package's writer (device activity is thousands
    of records, not millions); the number of events written."""
    total = 0
    for s, location, rank in zip(
        recording.devices, dd.stream_locations, dd.stream_ranks or [0] * len(recording.devices)
    ):
        w = trace.event_writer_from_location(location)
        starts = (np.asarray(s.starts, np.int64) + offset).tolist()
        ends = (np.asarray(s.ends, np.int64) + offset).tolist()
        for t0, t1, r, corr, nbytes, copy in zip(
            starts, ends, np.asarray(s.regions).tolist(), np.asarray(s.correlation).tolist(),
            np.asarray(s.bytes).tolist(), np.asarray(s.copy).tolist(),
        ):  # fmt: skip
            region = regions[r]
            w.enter(t0, region)
            total += 1
            if corr >= 0:
                w.parameter_unsigned_int(t0, dd.parameter, int(corr))
                total += 1
            if copy >= 0 and dd.window is not None and copy in _GETS | {_PUT}:
                remote = rank if copy != COPY_KINDS.index("HtoD") else 0
                if copy == _PUT:
                    w.rma_put(t0, dd.window, 0, int(nbytes), MATCHING_ID)
                else:
                    w.rma_get(t0, dd.window, remote, int(nbytes), MATCHING_ID)
                w.rma_op_complete_blocking(t1, dd.window, MATCHING_ID)
                total += 2
            w.leave(t1, region)
            total += 1
    return total
