"""THREAD_BEGIN / THREAD_END of the threads other than the master, as Score-P 8.4's pthread
adapter writes them (``python -m scorep --thread=pthread``, the kernel's Score-P worker):

- definitions: PARADIGM PTHREAD "Pthread" (class THREAD_CREATE_WAIT); GROUP "PTHREAD"
  (COMM_LOCATIONS, paradigm PTHREAD) of every CPU thread location, the master's included;
  GROUP "SCOREP_GROUP_PTHREAD" (COMM_GROUP) of the same locations by rank; COMM "" of
  that group (the thread contingent); ATTRIBUTE "ThreadId" ("Thread identifier", UINT64);
- events: on each thread location but the master's, THREAD_BEGIN first (contingent = that
  COMM, sequence count undefined, attribute ThreadId = the thread's native id) and
  THREAD_END last (same contingent and sequence count, no attribute). The master thread
  has neither (Score-P gives it PROGRAM_BEGIN / _END, which the builtin trace does not
  write).

Only a Recording with a thread that has a ``span`` gets these definitions. An MPI run's
archive (``define_ranks``, as ``python -m scorep --mpp=mpi --thread=pthread`` writes it):
one GROUP "PTHREAD" of every rank's CPU thread locations, and per rank its own GROUP
"SCOREP_GROUP_PTHREAD" (its locations, as indices into "PTHREAD") and COMM "".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from otf2.enums import CommFlag, GroupFlag, GroupType, Paradigm, ParadigmClass, Type

from . import _otf2_encode
from .recording import Recording, ThreadEvents

UNDEFINED_SEQUENCE = 2**64 - 1  # OTF2_UNDEFINED_UINT64, as Score-P writes it
PARADIGM_NAME = "Pthread"
LOCATIONS_GROUP = "PTHREAD"
COMM_GROUP = "SCOREP_GROUP_PTHREAD"
ATTRIBUTE_NAME = "ThreadId"
ATTRIBUTE_DESCRIPTION = "Thread identifier"


@dataclass(frozen=True)
class ThreadDefinitions:
    comm: Any  # the otf2 Comm of the thread contingent (the otf2 package has no types)
    attribute: Any  # the otf2 Attribute ThreadId


def define(defs: Any, recording: Recording, locations: list) -> ThreadDefinitions | None:
    """The definitions, where a thread of ``recording`` has a span (``locations``: the
    CPU thread locations, in the recording's order)."""
    if not any(t.span is not None for t in recording.threads):
        return None
    comm_locations(defs, locations)
    comm = _contingent(defs, locations)
    return ThreadDefinitions(comm, _attribute(defs))


def define_ranks(defs: Any, ranks: list[tuple[list, bool]]) -> list[ThreadDefinitions | None]:
    """An MPI run's definitions: ``ranks`` is, per rank in the archive's location order,
    its CPU thread locations and whether a thread of it has a span; per rank its
    definitions (all None when no rank has a span). Score-P gives every rank its group
    and COMM, one with only its master thread too."""
    if not any(spanned for _locations, spanned in ranks):
        return [None] * len(ranks)
    comm_locations(defs, [loc for locations, _spanned in ranks for loc in locations])
    comms = []
    first = 0
    for locations, _spanned in ranks:
        members = list(range(first, first + len(locations)))  # indices into "PTHREAD"
        comms.append(_contingent(defs, members))
        first += len(locations)
    attribute = _attribute(defs)
    return [ThreadDefinitions(c, attribute) for c in comms]


def comm_locations(defs: Any, locations: list) -> None:
    """PARADIGM PTHREAD and GROUP "PTHREAD" of these locations (all of the archive's)."""
    defs.paradigm(Paradigm.PTHREAD, PARADIGM_NAME, ParadigmClass.THREAD_CREATE_WAIT)
    defs.group(
        LOCATIONS_GROUP,
        group_type=GroupType.COMM_LOCATIONS,
        paradigm=Paradigm.PTHREAD,
        group_flags=GroupFlag.NONE,
        members=locations,
    )


def _attribute(defs: Any) -> Any:
    return defs.attribute(ATTRIBUTE_NAME, ATTRIBUTE_DESCRIPTION, Type.UINT64)


def _contingent(defs: Any, members: list) -> Any:
    """A process's GROUP "SCOREP_GROUP_PTHREAD" (COMM_GROUP) and its COMM "" (returned)."""
    group = defs.group(
        COMM_GROUP,
        group_type=GroupType.COMM_GROUP,
        paradigm=Paradigm.PTHREAD,
        group_flags=GroupFlag.NONE,
        members=members,
    )
    return defs.comm("", group=group, parent=None, flags=CommFlag.NONE)


def records(
    t: ThreadEvents, defs: ThreadDefinitions | None, clock_offset_ns: int
) -> _otf2_encode.ThreadRecords | None:
    """Thread ``t``'s records in epoch ticks (None: it has none), the begin never after
    its first event and the end never before its last."""
    if t.span is None or defs is None:
        return None
    begin, end = t.span.begin_ns, t.span.end_ns
    if len(t):
        begin, end = min(begin, int(t.times[0])), max(end, int(t.times[-1]))
    return _otf2_encode.ThreadRecords(
        begin=begin + clock_offset_ns,
        end=max(end, begin) + clock_offset_ns,
        contingent=int(defs.comm._ref),  # private: the definition's OTF2 id
        attribute=int(defs.attribute._ref),
        thread_id=max(int(t.thread_id), 0),
    )


def around(
    writer: Any,
    rec: _otf2_encode.ThreadRecords | None,
    defs: ThreadDefinitions | None,
    write_events: Callable[[], int],
) -> int:
    """``write_events()`` (which returns how many events it wrote) between the thread's
    THREAD_BEGIN and THREAD_END, both through the package's public event writer (libotf2
    writes them); the number of events written."""
    if rec is None or defs is None:
        return write_events()
    writer.thread_begin(
        rec.begin, defs.comm, UNDEFINED_SEQUENCE, attributes={defs.attribute: rec.thread_id}
    )
    n = write_events()
    writer.thread_end(rec.end, defs.comm, UNDEFINED_SEQUENCE)
    return n + 2
