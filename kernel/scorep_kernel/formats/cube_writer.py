"""Write a Recording's call-path profile as a CUBE4 ``.cubex``, laid out as Score-P does.

A ``.cubex`` is a tar archive of ``anchor.xml`` (definitions) plus ``<metric id>.index``
and ``<metric id>.data`` per metric. The metrics are Score-P's for Python:

==  =========  =========  =========  ====  ====================================
id  uniq_name  type       dtype      uom   value per (cnode, location)
==  =========  =========  =========  ====  ====================================
0   visits     EXCLUSIVE  UINT64     occ   calls of exactly this call path
1   time       INCLUSIVE  DOUBLE     sec   inclusive time, summed over calls
2   min_time   EXCLUSIVE  MINDOUBLE  sec   shortest inclusive time of one call
3   max_time   EXCLUSIVE  MAXDOUBLE  sec   longest inclusive time of one call
==  =========  =========  =========  ====  ====================================

(min_time and max_time are EXCLUSIVE, as Score-P's cube4 writer declares them.) Where a
location never visited a cnode, all four values are 0, as readers of Score-P profiles
expect (pycubexr treats 0 as "no value" for min/max).

Layout facts (see /work/shared/FORMATS.md; checked against pycubexr 2.1):

- exactly one root cnode and one root system tree node: ``machine Linux`` -> ``node
  <hostname>`` -> location group ``Process`` -> one location per thread, ids in depth-first
  order. A profile with several top-level call paths gets the synthetic root of
  ``callpath.build_profile`` (named ``root_name``, role "artificial");
- cnode ids are depth-first pre-order. Index files are *sparse* (pycubexr cannot read
  dense ones) and list row positions in a per-metric enumeration of the cnodes: pre-order
  for EXCLUSIVE metrics, CubeW's "wide search" order for INCLUSIVE ones; rows where every
  location is 0 are left out (at least one row is always written);
- data files are ``CUBEX.DATA`` followed by rows x locations, little-endian.

Regions: ``name``, ``mangled_name`` (= name), ``mod`` = source file, ``begin`` = line,
``end`` = -1, ``paradigm`` "user:<module>" (Score-P's "<paradigm>:<region group>"; plain
"user" without a module, "measurement" for artificial regions), ``role`` Score-P's region
type string ("function", "user", "code" for cells, "artificial"), ``descr`` = the
recording's role (function / user / cell / import / artificial), which the server reads.
"""

from __future__ import annotations

import io
import os
import re
import struct
import tarfile
import tempfile
import time
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from . import CREATOR
from .callpath import CallpathProfile, build_profile, writer_role
from .recording import (
    ROLE_ARTIFICIAL,
    ROLE_CELL,
    ROLE_FUNCTION,
    ROLE_IMPORT,
    ROLE_KERNEL,
    ROLE_MEMCPY,
    ROLE_MEMSET,
    ROLE_OPERATOR,
    ROLE_RUNTIME,
    ROLE_USER,
    Recording,
)

CUBE_VERSION = "4.4"
INDEX_HEADER = b"CUBEX.INDEX"
DATA_HEADER = b"CUBEX.DATA"
INDEX_FORMAT_SPARSE = 1

# Score-P's region type strings (scorep_region_type_to_string).
CUBE_ROLES = {
    ROLE_FUNCTION: "function",
    ROLE_USER: "user",
    ROLE_IMPORT: "function",
    ROLE_CELL: "code",
    ROLE_ARTIFICIAL: "artificial",
    ROLE_OPERATOR: "function",
    ROLE_RUNTIME: "wrapper",
    ROLE_KERNEL: "kernel",
    ROLE_MEMCPY: "data_transfer",
    ROLE_MEMSET: "function",
}
# Regions of Score-P's CUDA paradigm (its CUDA adapter's API calls and device activity).
CUDA_ROLES = (ROLE_RUNTIME, ROLE_KERNEL, ROLE_MEMCPY, ROLE_MEMSET)

# (id, uniq_name, disp_name, type, dtype, uom, url, descr)
METRICS = (
    (
        0,
        "visits",
        "Visits",
        "EXCLUSIVE",
        "UINT64",
        "occ",
        "@mirror@scorep_metrics.html#visits",
        "Number of visits",
    ),
    (
        1,
        "time",
        "Time",
        "INCLUSIVE",
        "DOUBLE",
        "sec",
        "@mirror@scorep_metrics.html#time",
        "Total CPU allocation time",
    ),
    (
        2,
        "min_time",
        "Minimum Inclusive Time",
        "EXCLUSIVE",
        "MINDOUBLE",
        "sec",
        "@mirror@scorep_metrics.html#time_min_incl",
        "Minimum inclusive CPU allocation time",
    ),
    (
        3,
        "max_time",
        "Maximum Inclusive Time",
        "EXCLUSIVE",
        "MAXDOUBLE",
        "sec",
        "@mirror@scorep_metrics.html#time_max_incl",
        "Maximum inclusive CPU allocation time",
    ),
)

# Written where the recording read the threads' clocks (CallpathProfile.run_ns): how much
# of ``time`` the thread ran on a CPU, and how much it was runnable but queued for one (the
# machine's load); the rest of ``time`` it waited (sleep, lock, I/O, device, MPI).
SPLIT_METRICS = (
    (
        4,
        "cpu_time",
        "Running Time",
        "INCLUSIVE",
        "DOUBLE",
        "sec",
        "",
        "Of the inclusive time, how long the thread ran on a CPU (Linux schedstat)",
    ),
    (
        5,
        "queue_time",
        "Queued Time",
        "INCLUSIVE",
        "DOUBLE",
        "sec",
        "",
        "Of the inclusive time, how long the thread was runnable but waited for a CPU",
    ),
)

# Characters XML 1.0 cannot hold at all (even escaped).
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _text(value) -> str:
    return escape(_XML_INVALID.sub("\ufffd", str(value)))


def _attr(value) -> str:
    return quoteattr(_XML_INVALID.sub("\ufffd", str(value)))


def _region_xml(index: int, region) -> str:
    if region.role == ROLE_ARTIFICIAL:
        paradigm = "measurement"
    elif region.role in CUDA_ROLES:
        paradigm = "cuda"
    else:
        paradigm = f"user:{region.group}" if region.group else "user"
    role = writer_role(CUBE_ROLES, index, region)
    return (
        f'  <region id="{index}" mod={_attr(region.file)} begin="{int(region.line)}" end="-1">\n'
        f"   <name>{_text(region.name)}</name>\n"
        f"   <mangled_name>{_text(region.name)}</mangled_name>\n"
        f"   <paradigm>{_text(paradigm)}</paradigm>\n"
        f"   <role>{role}</role>\n"
        f"   <url></url>\n"
        f"   <descr>{_text(region.role)}</descr>\n"
        f"  </region>\n"
    )


def _cnodes_xml(profile: CallpathProfile) -> str:
    """Nested <cnode> elements; ids are pre-order, so nesting follows the depths."""
    parts = []
    depth = profile.depth().tolist()
    regions = profile.region.tolist()
    open_depth = -1
    for cnode, (d, region) in enumerate(zip(depth, regions)):
        while open_depth >= d:
            parts.append(" " * (open_depth + 2) + "</cnode>\n")
            open_depth -= 1
        parts.append(" " * (d + 2) + f'<cnode id="{cnode}" calleeId="{region}">\n')
        open_depth = d
    while open_depth >= 0:
        parts.append(" " * (open_depth + 2) + "</cnode>\n")
        open_depth -= 1
    return "".join(parts)


def _system_xml(hostname: str, locations: list[str]) -> str:
    lines = [
        " <system>\n",
        '  <systemtreenode Id="0">\n',
        "   <name>Linux</name>\n",
        "   <class>machine</class>\n",
        '   <systemtreenode Id="1">\n',
        f"    <name>{_text(hostname)}</name>\n",
        "    <class>node</class>\n",
        '    <locationgroup Id="0">\n',
        "     <name>Process</name>\n",
        "     <rank>0</rank>\n",
        "     <type>process</type>\n",
    ]
    for i, name in enumerate(locations):
        lines.append(
            f'     <location Id="{i}">\n'
            f"      <name>{_text(name)}</name>\n"
            f"      <rank>{i}</rank>\n"
            f"      <type>thread</type>\n"
            f"     </location>\n"
        )
    lines += [
        "    </locationgroup>\n",
        "   </systemtreenode>\n",
        "  </systemtreenode>\n",
        " </system>\n",
    ]
    return "".join(lines)


def anchor_xml(profile: CallpathProfile, hostname: str, system: str | None = None) -> bytes:
    """The definitions; ``system`` replaces the one-process system tree (an MPI run's
    processes, see mpi.otf2_ranks.cube_system_xml)."""
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>\n\n',
        f'<cube version="{CUBE_VERSION}">\n',
        f' <attr key="Creator" value={_attr(CREATOR)}/>\n',
        ' <attr key="CUBE_CT_AGGR" value="SUM"/>\n',
        " <metrics>\n",
    ]
    for mid, uniq, disp, mtype, dtype, uom, url, descr in _metrics(profile):
        parts.append(
            f'  <metric id="{mid}" type="{mtype}">\n'
            f"   <disp_name>{disp}</disp_name>\n"
            f"   <uniq_name>{uniq}</uniq_name>\n"
            f"   <dtype>{dtype}</dtype>\n"
            f"   <uom>{uom}</uom>\n"
            f"   <url>{url}</url>\n"
            f"   <descr>{descr}</descr>\n"
            f"  </metric>\n"
        )
    parts.append(" </metrics>\n <program>\n")
    parts.extend(_region_xml(i, r) for i, r in enumerate(profile.regions))
    parts.append(_cnodes_xml(profile))
    parts.append(" </program>\n")
    parts.append(system or _system_xml(hostname or "localhost", profile.locations))
    parts.append("</cube>\n")
    return "".join(parts).encode("utf-8")


def _metrics(profile: CallpathProfile) -> tuple:
    return METRICS + SPLIT_METRICS if profile.run_ns is not None else METRICS


def _metric_files(values: np.ndarray, order: np.ndarray, dtype: str) -> tuple[bytes, bytes]:
    """Sparse index + data for ``values`` [C, L] (indexed by cnode id) stored in the
    enumeration ``order`` (position -> cnode id)."""
    rows = values[order]
    keep = np.flatnonzero(rows.any(axis=1)) if rows.size else np.zeros(0, np.int64)
    if keep.size == 0:
        keep = np.zeros(1, dtype=np.int64)  # pycubexr needs at least one row
    index = (
        INDEX_HEADER
        + struct.pack("<IHBI", 1, 0, INDEX_FORMAT_SPARSE, keep.size)
        + keep.astype("<u4").tobytes()
    )
    data = DATA_HEADER + np.ascontiguousarray(rows[keep], dtype=dtype).tobytes()
    return index, data


def cubex_members(
    profile: CallpathProfile, hostname: str, system: str | None = None
) -> dict[str, bytes]:
    """The archive's members by name: anchor.xml, then index and data per metric."""
    preorder = np.arange(profile.num_cnodes, dtype=np.int64)
    wide = profile.wide_order()
    orders = {"EXCLUSIVE": preorder, "INCLUSIVE": wide}
    values = {
        "visits": (profile.visits, "<u8"),
        "time": (profile.incl_ns / 1e9, "<f8"),
        "min_time": (profile.min_ns / 1e9, "<f8"),
        "max_time": (profile.max_ns / 1e9, "<f8"),
    }
    if profile.run_ns is not None and profile.queue_ns is not None:
        values["cpu_time"] = (profile.run_ns / 1e9, "<f8")
        values["queue_time"] = (profile.queue_ns / 1e9, "<f8")
    members = {"anchor.xml": anchor_xml(profile, hostname, system)}
    for mid, uniq, _disp, mtype, _dtype, *_ in _metrics(profile):
        array, dtype = values[uniq]
        index, data = _metric_files(array, orders[mtype], dtype)
        members[f"{mid}.index"] = index
        members[f"{mid}.data"] = data
    return members


def _write_tar(path: Path, members: dict[str, bytes]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".profile-", suffix=".cubex.tmp", dir=path.parent)
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar,
        ):
            now = int(time.time())
            for name, payload in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(payload)
                info.mtime = now
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(payload))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_cubex(
    recording: Recording,
    path,
    *,
    root_name: str | None = None,
    profile: CallpathProfile | None = None,
    system: str | None = None,
) -> dict:
    """Write the call-path profile of ``recording`` to ``path`` (a ``.cubex``), atomically.

    ``root_name`` names the synthetic root when the profile has several top-level call
    paths (see ``callpath.build_profile``); pass ``profile`` if it is already built, and
    ``system`` for a system tree of several processes (its locations in the profile's
    column order, depth first).
    Returns ``{"cnodes", "locations", "regions", "synthetic_root", "seconds", "path"}``.
    """
    started = time.perf_counter()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if profile is None:
        profile = build_profile(recording, root_name=root_name)
    _write_tar(path, cubex_members(profile, recording.hostname, system))
    return {
        "cnodes": profile.num_cnodes,
        "locations": len(profile.locations),
        "regions": len(profile.regions),
        "synthetic_root": profile.synthetic_root,
        "seconds": time.perf_counter() - started,
        "path": str(path),
    }
