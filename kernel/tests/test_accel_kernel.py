"""A profiled cell that uses PyTorch, in the real kernel: torch.profiler starts and stops
with the cell under the builtin backend in both isolations, its operators become regions
nested under the calling Python function, it can be switched off, and a cell without
torch pays nothing (torch is not even imported). Under Score-P the manifest says whether
Score-P's CUDA adapter could record the device. Skips without torch (CI may lack it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import otf2
import pytest
from test_kernel_harness import MIME, KernelHandle, wait_files

pytestmark = pytest.mark.timeout(300)

BUILTIN = {
    "inprocess": {"scorep": {"profile": True, "backend": "builtin", "isolation": "inprocess"}},
    "subprocess": {"scorep": {"profile": True, "backend": "builtin", "isolation": "subprocess"}},
}
CELL = """
import torch
w = torch.randn(64, 64)
def step(x):
    return torch.relu(x @ w).sum()
for _ in range(3):
    loss = step(w)
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k = KernelHandle(tmp_path_factory.mktemp("accel"))
    yield k
    k.shutdown()


def _experiment(result) -> Path:
    bundle = next(c["data"][MIME] for c in result.of("display_data") if MIME in c["data"])
    return Path(bundle["path"])


def _parents(anchor: Path) -> dict[str, set[str]]:
    """Region name -> the names it was entered under, on the master thread."""
    out: dict[str, set[str]] = {}
    stack: list[str] = []
    with otf2.reader.open(str(anchor)) as trace:
        for loc, event in trace.events:
            if loc.name != "Master thread":
                continue
            if type(event).__name__ == "Enter":
                out.setdefault(event.region.name, set()).add(stack[-1] if stack else "")
                stack.append(event.region.name)
            elif type(event).__name__ == "Leave":
                stack.pop()
    return out


def test_a_cell_without_torch_pays_nothing(kernel):
    r = kernel.run("x = sum(range(1000))", BUILTIN["inprocess"])
    assert r.status == "ok"
    manifest = wait_files(_experiment(r))
    assert "accelerator" not in manifest["measurement"]
    probe = kernel.run("import sys\nprint('torch' in sys.modules)")
    assert probe.stdout().strip() == "False"


@pytest.mark.parametrize("isolation", ["inprocess", "subprocess"])
def test_operators_nested_under_the_python_function(kernel, isolation):
    pytest.importorskip("torch")
    r = kernel.run(CELL, BUILTIN[isolation], timeout=180)
    assert r.status == "ok", r.messages
    exp = _experiment(r)
    manifest = wait_files(exp)
    accel = manifest["measurement"]["accelerator"]
    assert accel["profiler"] == "torch.profiler" and accel["operators"] > 0, accel
    assert manifest["files"]["kineto"] == "torch.pt.trace.json"
    trace = json.loads((exp / "torch.pt.trace.json").read_text())
    assert any(e.get("name") == "aten::mm" for e in trace["traceEvents"])
    parents = _parents(exp / "traces.otf2")
    assert "__main__:step" in parents["aten::matmul"], parents.get("aten::matmul")
    assert "aten::matmul" in parents["aten::mm"]
    # no profiler announcement reached the cell's output
    assert "USDT" not in r.stdout() + r.stderr()


def test_accelerators_off(kernel):
    pytest.importorskip("torch")
    meta = {"scorep": {**BUILTIN["inprocess"]["scorep"], "accelerators": False}}
    r = kernel.run(CELL, meta, timeout=180)
    assert r.status == "ok"
    exp = _experiment(r)
    manifest = wait_files(exp)
    assert "accelerator" not in manifest["measurement"]
    assert "aten::mm" not in _parents(exp / "traces.otf2")


def test_scorep_backend_says_it_records_no_gpu(tmp_path):
    if not shutil.which("scorep-config"):
        pytest.skip("Score-P is not on PATH")
    from scorep_kernel.accel import scorep_cuda

    if scorep_cuda.cuda_support()[0]:
        pytest.skip("this Score-P has CUDA support")
    k = KernelHandle(tmp_path)
    try:
        r = k.run("x = 1", {"scorep": {"profile": True, "backend": "scorep"}}, timeout=240)
        assert r.status == "ok", r.messages
        manifest = wait_files(_experiment(r), timeout=120)
        cuda = manifest["measurement"]["cuda"]
        assert cuda["enabled"] is False and "without CUDA support" in cuda["message"]
        assert "SCOREP_CUDA_ENABLE" not in manifest["scorep_env"]
    finally:
        k.shutdown()
