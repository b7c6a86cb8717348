"""The kernel's Score-P runs (cells under ``python -m scorep``: the same code as the builtin
run, a thread and a user region, recording off, a 2M-buffer flush, rusage metrics) read by
the server's native scanner give what libotf2's callbacks give, with no location left to
the callbacks. Skipped, with the kernel's reason, where Score-P is not installed."""

from __future__ import annotations

import numpy as np
import pytest
from scorep_cells import SCOREP

from jupyterlab_scorep.trace import otf2_read, otf2_scan
from scorep_kernel import experiment as ex

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(not SCOREP["available"], reason=SCOREP["message"]),
    pytest.mark.skipif(not otf2_scan.available(), reason="libotf2_scan.so is not built"),
]
FIELDS = ("times", "signed_regions", "metric_times", "metric_members", "metric_values")


@pytest.mark.parametrize("name", ["scorep", "threads", "off", "flush", "rusage"])
def test_kernel_runs_read_the_same_natively(runs, name, caplog):
    _, exps = runs
    anchor = str(exps[name] / ex.OTF2_ANCHOR)
    with caplog.at_level("INFO", logger="jupyterlab_scorep.trace.otf2_fast"):
        _defs, fast = otf2_read.read_trace(anchor, decoder="auto")
    assert not [r.getMessage() for r in caplog.records if "callbacks" in r.getMessage()]
    _defs, slow = otf2_read.read_trace(anchor, decoder="callbacks")
    assert len(fast) == len(slow) and sum(e.times.size for e in fast) > 0
    for a, b in zip(fast, slow):
        for field in FIELDS:
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
        assert (a.program_begin, a.synthetic) == (b.program_begin, b.synthetic)
    if name in ("off", "flush"):
        assert sum(e.synthetic for e in fast) > 0
    if name == "rusage":
        assert sum(e.metric_times.size for e in fast) > 0
