"""The clock shift between torch.profiler's clock and ours (accel.host_merge): the shift
found from where operators fall among the Python calls, and the nesting it gives, for
disagreements larger than the gap between two calls, either way."""

from __future__ import annotations

import numpy as np
import pytest

from scorep_kernel.accel import host_merge
from scorep_kernel.formats.recording import ENTER, ThreadEvents

CELL, STEP = 0, 1
OPS = {2: "aten::empty", 3: "aten::matmul", 4: "aten::sum"}
STEP_LEN, GAP = 500, 10  # ns: three steps 10 ns apart


def _thread(steps: list[tuple[int, int]], cell: tuple[int, int] = (0, 10**9)) -> ThreadEvents:
    """A master thread: a cell around Python calls ``step``."""
    times = [cell[0]] + [t for pair in steps for t in pair] + [cell[1]]
    regions = [CELL] + [STEP] * (2 * len(steps)) + [CELL]
    kinds = [1] + [1, 0] * len(steps) + [0]
    return ThreadEvents("Master thread", 1, np.array(times), np.array(regions, np.int32),
                        np.array(kinds, np.int8))  # fmt: skip


def _step_ops(a: int) -> list[tuple[int, int, int]]:
    """A step's operators on a shared clock (step enters at ``a``): a short one 4 ns in,
    the matmul that takes most of the step (as on a real run), and a short sum that ends
    5 ns before the step returns."""
    return [(a + 4, a + 12, 2), (a + 15, a + 470, 3), (a + 475, a + 495, 4)]


def _ops_per_step(thread: ThreadEvents, ops: list[tuple[int, int, int]], shift: int):
    """Merge ``ops`` moved by ``shift``: (left out, the operators directly in each step)."""
    s, e, r = (np.array(x) for x in zip(*ops))
    new = host_merge.HostIntervals(s + shift, e + shift, r.astype(np.int32), np.full(len(s), -1))
    merged, dropped = host_merge.merge(thread, new)
    per: list[list[str]] = []
    stack: list[int] = []
    for reg, kind in zip(merged.regions.tolist(), merged.kinds.tolist()):
        if kind != ENTER:
            stack.pop()
            continue
        if reg == STEP:
            per.append([])
        elif stack[-1:] == [STEP]:
            per[-1].append(OPS[reg])
        stack.append(reg)
    return dropped, per


@pytest.mark.parametrize("late", [40, -40])
def test_a_disagreement_larger_than_the_gap_between_steps(late):
    """Operators read ``late`` ns early (or late, if negative) on our clock, four times the
    gap between steps: early, each step's first operator lands in the step before; late,
    its last in the step after. Judged only against the step it lands in, they outvoted
    the right shift (none was found, and the matmuls were left out or the sums nested in
    the wrong step). The shift lies within the range that nests them all, [36, 45] ns
    early, [-44, -35] late, and every step holds its own three operators."""
    starts = [100 + k * (STEP_LEN + GAP) for k in range(3)]
    thread = _thread([(a, a + STEP_LEN) for a in starts])
    ops = [(s - late, e - late, r) for a in starts for s, e, r in _step_ops(a)]
    s, e, _ = (np.array(x) for x in zip(*ops))
    shift = host_merge.find_shift([(thread, s, e)])
    assert (36 <= shift <= 45) if late > 0 else (-44 <= shift <= -35)
    dropped, per = _ops_per_step(thread, ops, shift)
    assert dropped == 0
    assert per == [["aten::empty", "aten::matmul", "aten::sum"]] * 3


def test_the_shift_is_the_middle_of_the_range_not_its_edge():
    """Matmul 40 ns early nests for shifts [25, 240]: the shift found leaves it room on
    both sides (the middle), where the smallest one put it on its step's enter."""
    starts = [100 + k * 1000 for k in range(3)]
    thread = _thread([(a, a + 500) for a in starts])
    ops = [(a + 15 - 40, a + 300 - 40, 3) for a in starts]
    windows = host_merge.nest_windows(thread, *(np.array(x) for x in list(zip(*ops))[:2]))
    assert host_merge.clock_shift(windows) == (25 + 240) // 2
