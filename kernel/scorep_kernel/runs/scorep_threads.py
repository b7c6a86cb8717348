"""Score-P's thread locations named as the builtin tracer names its threads.

Score-P calls a thread it did not see created "Orphan thread N" (or "Pthread thread N"),
where the builtin tracer says "Thread N (heartbeat)". Each such location's first event is
a THREAD_BEGIN whose attribute ``ThreadId`` is the thread's native id; the worker noted
every Python thread's native id and name (worker.scorep_session). After Score-P wrote
its files the kernel maps one to the other, renames the locations in profile.cubex (its
``anchor.xml``, what Cube shows) and records the mapping in the manifest
(``thread_names``: {Score-P's name: ours}) for the server, which shows the same names for
the trace (OTF2's definitions are left as Score-P wrote them).

Under MPI every rank has its "Orphan thread 1", so an MPI run's ranks are named each in
its own location group (``name_group_threads``: each rank's worker noted its threads, the
kernel gathered them by rank): the manifest's ``group_thread_names`` ({"MPI Rank r":
{Score-P's name: ours}}), profile.cubex renamed inside each ``<locationgroup>``.
"""

from __future__ import annotations

import io
import logging
import os
import re
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from xml.sax.saxutils import escape, unescape

from ..region_words import thread_location_name

log = logging.getLogger("scorep_kernel")

MASTER = "Master thread"
THREAD_ID = "ThreadId"
ANCHOR = "anchor.xml"


def location_thread_ids(anchor: Path) -> dict[str, int]:
    """{location name: native thread id} of the trace's thread locations other than the
    master, from their THREAD_BEGIN (one process: the names are unique)."""
    return {name: tid for (_group, name), tid in group_thread_ids(anchor).items()}


def group_thread_ids(anchor: Path) -> dict[tuple[str, str], int]:
    """{(location group, location name): native thread id} of the trace's thread locations
    other than the master, from their THREAD_BEGIN (one reader per location: only its
    first event)."""
    import otf2

    with otf2.reader.open(str(anchor)) as trace:
        count = sum(
            1
            for loc in trace.definitions.locations
            if loc.name != MASTER and str(loc.type).endswith("CPU_THREAD")
        )
    out = {}
    for index in range(count):
        with otf2.reader.open(str(anchor)) as trace:
            location = [
                loc
                for loc in trace.definitions.locations
                if loc.name != MASTER and str(loc.type).endswith("CPU_THREAD")
            ][index]
            for _loc, event in trace.events([location]):
                if type(event).__name__ == "ThreadBegin":
                    attrs = {a.name: v for a, v in (event.attributes or {}).items()}
                    if isinstance(attrs.get(THREAD_ID), int):
                        out[(location.group.name, location.name)] = int(attrs[THREAD_ID])
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
    if names:
        _rewrite_anchor(cubex, lambda text: _renamed(text, names))


def rename_in_cube_groups(cubex: Path, names: dict[str, dict[str, str]]) -> None:
    """Rename the locations of each ``<locationgroup>`` by its name's mapping."""
    if any(names.values()):
        _rewrite_anchor(cubex, lambda text: _renamed_in_groups(text, names))


def _rewrite_anchor(cubex: Path, rewrite: Callable[[str], str]) -> None:
    fd, tmp = tempfile.mkstemp(dir=cubex.parent, prefix=".profile-", suffix=".cubex")
    os.close(fd)
    try:
        with tarfile.open(cubex) as src, tarfile.open(tmp, "w") as dst:
            for member in src.getmembers():
                data = src.extractfile(member)
                if member.name == ANCHOR and data is not None:
                    text = _xml(data.read(), rewrite)
                    member.size = len(text)
                    dst.addfile(member, io.BytesIO(text))
                else:
                    dst.addfile(member, data)
        os.replace(tmp, cubex)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _xml(xml: bytes, rewrite: Callable[[str], str]) -> bytes:
    if xml[:2] == b"\x1f\x8b":  # a gzipped anchor
        import gzip

        return gzip.compress(_xml(gzip.decompress(xml), rewrite))
    return rewrite(xml.decode("utf-8")).encode("utf-8")


def _renamed(text: str, names: dict[str, str]) -> str:
    for old, new in names.items():
        text = text.replace(f"<name>{escape(old)}</name>", f"<name>{escape(new)}</name>")
    return text


_GROUP = re.compile(r"(<locationgroup\b[^>]*>\s*<name>)([^<]*)(</name>.*?</locationgroup>)", re.S)


def _renamed_in_groups(text: str, names: dict[str, dict[str, str]]) -> str:
    def group(m: re.Match[str]) -> str:
        mapping = names.get(unescape(m.group(2)), {})
        return m.group(1) + m.group(2) + _renamed(m.group(3), mapping)

    return _GROUP.sub(group, text)


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


def name_group_threads(
    exp_dir: Path, python_names: dict[str, dict[str, str]]
) -> dict[str, dict[str, str]]:
    """An MPI run's: ``python_names`` per location group ("MPI Rank r": its rank's
    {native id: Python name}); map each group's locations, rename them in profile.cubex
    inside their group; the manifest's ``group_thread_names`` ({} when none)."""
    anchor = exp_dir / "traces.otf2"
    if not any(python_names.values()) or not anchor.exists():
        return {}
    try:
        by_group: dict[str, dict[str, int]] = {}
        for (group, name), tid in group_thread_ids(anchor).items():
            by_group.setdefault(group, {})[name] = tid
        names = {
            group: shown
            for group, ids in by_group.items()
            if (shown := shown_names(ids, python_names.get(group, {})))
        }
        if (exp_dir / "profile.cubex").exists():
            rename_in_cube_groups(exp_dir / "profile.cubex", names)
    except Exception:  # the run stands with Score-P's own names
        log.warning("could not name Score-P's threads in %s", exp_dir, exc_info=True)
        return {}
    return names
