"""Score-P's thread locations named as the builtin tracer names its threads.

Score-P calls a thread it did not see created "Orphan thread N" (or "Pthread thread N"),
where the builtin tracer says "Thread N (heartbeat)". Each such location's first event is
a THREAD_BEGIN whose attribute ``ThreadId`` is the thread's native id; the worker noted
every Python thread's native id and name (worker.scorep_session). After Score-P wrote
its files the kernel maps one to the other, renames the locations in profile.cubex (its
``anchor.xml``, what Cube shows) and records the mapping in the manifest
(``thread_names``: {Score-P's name: ours}) for the server, which shows the same names for
the trace (OTF2's definitions are left as Score-P wrote them).
"""

from __future__ import annotations

import io
import logging
import os
import re
import tarfile
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

from ..region_words import thread_location_name

log = logging.getLogger("scorep_kernel")

MASTER = "Master thread"
THREAD_ID = "ThreadId"
ANCHOR = "anchor.xml"


def location_thread_ids(anchor: Path) -> dict[str, int]:
    """{location name: native thread id} of the trace's thread locations other than the
    master, from their THREAD_BEGIN (one reader per location: only its first event)."""
    import otf2

    with otf2.reader.open(str(anchor)) as trace:
        names = [
            loc.name
            for loc in trace.definitions.locations
            if loc.name != MASTER and str(loc.type).endswith("CPU_THREAD")
        ]
    out = {}
    for name in names:
        with otf2.reader.open(str(anchor)) as trace:
            location = next(loc for loc in trace.definitions.locations if loc.name == name)
            for _loc, event in trace.events([location]):
                if type(event).__name__ == "ThreadBegin":
                    attrs = {a.name: v for a, v in (event.attributes or {}).items()}
                    if isinstance(attrs.get(THREAD_ID), int):
                        out[name] = int(attrs[THREAD_ID])
                break
    return out


def shown_names(ids: dict[str, int], python_names: dict[str, str]) -> dict[str, str]:
    """{Score-P's location name: "Thread N (python name)"}, N as Score-P numbered it."""
    out = {}
    for count, (name, tid) in enumerate(sorted(ids.items(), key=_number), start=1):
        label = python_names.get(str(tid))
        if not label:
            continue
        number = re.search(r"(\d+)\s*$", name)
        out[name] = thread_location_name(int(number.group(1)) if number else count, label)
    return out


def _number(item: tuple[str, int]) -> tuple[int, str]:
    found = re.search(r"(\d+)\s*$", item[0])
    return (int(found.group(1)) if found else 0, item[0])


def rename_in_cube(cubex: Path, names: dict[str, str]) -> None:
    """Rename the locations in profile.cubex's anchor.xml (the other members unchanged)."""
    if not names:
        return
    fd, tmp = tempfile.mkstemp(dir=cubex.parent, prefix=".profile-", suffix=".cubex")
    os.close(fd)
    try:
        with tarfile.open(cubex) as src, tarfile.open(tmp, "w") as dst:
            for member in src.getmembers():
                data = src.extractfile(member)
                if member.name == ANCHOR and data is not None:
                    text = _renamed(data.read(), names)
                    member.size = len(text)
                    dst.addfile(member, io.BytesIO(text))
                else:
                    dst.addfile(member, data)
        os.replace(tmp, cubex)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _renamed(xml: bytes, names: dict[str, str]) -> bytes:
    if xml[:2] == b"\x1f\x8b":  # a gzipped anchor
        import gzip

        return gzip.compress(_renamed(gzip.decompress(xml), names))
    text = xml.decode("utf-8")
    for old, new in names.items():
        text = text.replace(f"<name>{escape(old)}</name>", f"<name>{escape(new)}</name>")
    return text.encode("utf-8")


def name_threads(exp_dir: Path, python_names: dict[str, str]) -> dict[str, str]:
    """Map, rename in profile.cubex; the manifest's ``thread_names`` ({} when none)."""
    anchor = exp_dir / "traces.otf2"
    if not python_names or not anchor.exists():
        return {}
    try:
        names = shown_names(location_thread_ids(anchor), python_names)
        if (exp_dir / "profile.cubex").exists():
            rename_in_cube(exp_dir / "profile.cubex", names)
    except Exception:  # the run stands with Score-P's own names
        log.warning("could not name Score-P's threads in %s", exp_dir, exc_info=True)
        return {}
    return names
