"""Helpers for the tracer tests (no tests here): run code as a cell and read the Recording
back as calls."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from scorep_kernel.formats.recording import ENTER, LEAVE

_counter = itertools.count()


@dataclass
class Call:
    thread: str
    depth: int  # 0 = outermost on its thread
    name: str
    role: str
    start: int
    end: int
    parent: str | None

    @property
    def seconds(self) -> float:
        return (self.end - self.start) / 1e9


def calls(recording) -> list[Call]:
    """Pair enters and leaves with a stack, checking they nest and times never decrease."""
    out: list[Call] = []
    for thread in recording.threads:
        assert (thread.times[1:] >= thread.times[:-1]).all(), f"{thread.name}: time goes back"
        stack: list[tuple[int, int, int]] = []
        for t, r, k in zip(thread.times.tolist(), thread.regions.tolist(), thread.kinds.tolist()):
            if k == ENTER:
                stack.append((r, t, len(out)))
                out.append(None)  # placeholder, filled at the leave
            else:
                assert k == LEAVE
                assert stack, (
                    f"{thread.name}: leave of {recording.regions[r].name} with nothing open"
                )
                r0, t0, slot = stack.pop()
                assert r0 == r, (
                    f"{thread.name}: leave of {recording.regions[r].name} while "
                    f"{recording.regions[r0].name} is open"
                )
                parent = recording.regions[stack[-1][0]].name if stack else None
                region = recording.regions[r]
                out[slot] = Call(thread.name, len(stack), region.name, region.role, t0, t, parent)
        assert not stack, f"{thread.name}: {len(stack)} regions left open"
    return out


def names(recording) -> set[str]:
    return {c.name for c in calls(recording)}


def compile_cell(source: str, filename: str | None = None):
    """Compile ``source`` as ipykernel compiles a cell: a file name of its own."""
    filename = filename or f"/tmp/ipykernel_test/cell_{next(_counter)}.py"
    return compile(source, filename, "exec"), filename


def run_cell(measurement, label: str, source: str, namespace: dict | None = None, *, restrict=True):
    code, filename = compile_cell(source)
    namespace = {"__name__": "__main__"} if namespace is None else namespace
    with measurement.cell(label, code_filename=filename if restrict else None):
        exec(code, namespace)
    return namespace, filename


def test_a_marker_of_the_same_clock_tick_stays_inside_its_region():
    """A region begun, marked and ended within one clock tick (the shim's error_region):
    the marker goes between its enter and leave, never after the leave."""
    from scorep_kernel.formats.recording import ENTER, LEAVE
    from scorep_kernel.measure.build import _place

    times = np.array([5, 10, 10, 10, 20], np.int64)
    kinds = np.array([ENTER, LEAVE, ENTER, LEAVE, ENTER], np.int8)
    # tick 10: LEAVE a, ENTER er, LEAVE er -> after the ENTER (index 2); tick 7, 25: plain
    assert _place(times, kinds, np.array([7, 10, 25], np.int64)).tolist() == [0, 2, 4]
    same = np.array([10, 10], np.int64)
    assert _place(same, np.array([ENTER, LEAVE], np.int8), np.array([10])).tolist() == [0]
    # the marker's tick holds only its region's leave (enter one tick before): before it
    two = np.array([9, 10], np.int64)
    assert _place(two, np.array([ENTER, LEAVE], np.int8), np.array([10])).tolist() == [0]
    # the marker's tick holds only an enter: after it
    assert _place(two, np.array([LEAVE, ENTER], np.int8), np.array([10])).tolist() == [1]
