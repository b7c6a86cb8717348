"""A profiled cell under real Score-P: runs only where Score-P and its Python bindings are
installed (skipped here otherwise, with the reason the kernel itself gives)."""

from __future__ import annotations

import time
from pathlib import Path

import otf2
import pytest
from test_kernel_harness import KernelHandle

from scorep_kernel.measure.detect import detect_scorep

SCOREP = detect_scorep()
pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not SCOREP["available"], reason=SCOREP["message"]),
]

CELL = """
def f():
    return sum(range(1000))

def g():
    return [f() for _ in range(3)]

result = g()
"""


def test_cell_under_scorep_writes_a_trace_with_its_functions(tmp_path: Path):
    kernel = KernelHandle(tmp_path)
    try:
        meta = {"scorep": {"profile": True, "backend": "scorep", "isolation": "subprocess"}}
        # Score-P's own tracing switch; the experiment directory is the kernel's.
        env = kernel.run("%%scorep_env\nSCOREP_ENABLE_TRACING=true\nSCOREP_ENABLE_PROFILING=true")
        assert env.status == "ok"
        cell = kernel.run(CELL, metadata=meta, timeout=240)
        assert cell.status == "ok", cell.messages
        assert kernel.value("len(result)") == 3
        exp = Path(cell.bundle()["path"])
        deadline = time.monotonic() + 60  # Score-P writes its files when the worker exits
        while not (exp / "traces.otf2").exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert cell.manifest()["backend"] == "scorep"
        with otf2.reader.open(str(exp / "traces.otf2")) as trace:
            names = {r.name for r in trace.definitions.regions}
            enters = sum(1 for _, e in trace.events if isinstance(e, otf2.events.Enter))
        assert any(n.endswith(":f") for n in names) and any(n.endswith(":g") for n in names)
        assert enters >= 4
    finally:
        kernel.shutdown()
