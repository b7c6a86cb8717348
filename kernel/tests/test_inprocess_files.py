"""An in-process run's files are written by a process of their own after the reply
(runs.files_process): nothing of the measurement shares the kernel's interpreter with the
next cell, and the files are whole."""

from __future__ import annotations

from pathlib import Path

import otf2
import pytest
from test_kernel_harness import PROFILE_IN, wait_files

pytestmark = pytest.mark.timeout(180)


def test_files_come_from_another_process_and_cells_go_on_meanwhile(kernel):
    kernel_pid = kernel.value("__import__('os').getpid()")
    code = "def f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\nr = f(18)"
    first = kernel.run(code, PROFILE_IN)
    second = kernel.run("s = r + 1", PROFILE_IN)  # back to back, while the first is written
    assert first.status == "ok" and second.status == "ok"
    assert kernel.value("s") == 2585
    for result, called in ((first, ":f"), (second, None)):
        path = Path(result.bundle()["path"])
        manifest = wait_files(path)
        assert manifest["files_status"] == "ready", manifest.get("errors")
        writer = manifest["measurement"]["written_by_pid"]
        assert writer != kernel_pid
        with otf2.reader.open(str(path / "traces.otf2")) as trace:
            names = {region.name for region in trace.definitions.regions}
        assert called is None or any(name.endswith(called) for name in names), names
    # the writers were reaped: no zombie children of the kernel are left
    zombies = "[c.pid for c in __import__('psutil').Process().children() if c.status() == 'zombie']"
    assert kernel.value(zombies) == []
