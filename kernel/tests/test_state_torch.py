"""torch through scorep_kernel.state (skipped where torch is not installed; never a dependency)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from test_state_roundtrip import kernel_ns, run_in_worker  # noqa: E402, F401 (torch first)

from scorep_kernel.state import apply, pack, unpack  # noqa: E402


def local_round_trip(namespace: dict) -> tuple[dict, int]:
    packet = pack(namespace, process_state=False)
    header_size = len(packet.header)
    target: dict = {"__name__": "__main__"}
    apply(target, unpack(packet.header))
    packet.release()
    return target, header_size


def test_large_tensor_out_of_band_and_views_share_storage():
    base = torch.arange(1_000_000, dtype=torch.float32)  # 4 MB
    ns = {"base": base, "view": base[10:20], "strided": base[::2], "half": base.to(torch.float16)}
    t, header_size = local_round_trip(ns)
    assert header_size < 16 * 1024, "the storages must travel out of band"
    assert torch.equal(t["base"], base) and torch.equal(t["strided"], base[::2])
    assert t["view"].untyped_storage().data_ptr() == t["base"].untyped_storage().data_ptr()
    assert t["strided"].untyped_storage().data_ptr() == t["base"].untyped_storage().data_ptr()
    t["base"][10] = -1
    assert t["view"][0] == -1
    assert t["half"].dtype == torch.float16 and torch.equal(t["half"], ns["half"])


def test_parameters_and_small_tensors():
    p = torch.nn.Parameter(torch.ones(3, 3))
    ns = {
        "p": p,
        "small": torch.tensor([1, 2, 3]),
        "empty": torch.empty(0),
        "b": torch.tensor([True, False]),
    }
    t, _ = local_round_trip(ns)
    assert isinstance(t["p"], torch.nn.Parameter) and t["p"].requires_grad
    assert (
        torch.equal(t["small"], ns["small"])
        and t["empty"].numel() == 0
        and torch.equal(t["b"], ns["b"])
    )
    t["small"] += 1  # writable even when it came in band
    assert t["small"].tolist() == [2, 3, 4]


MODEL = """
import torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(1000, 256)
        self.body = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))
        self.head = torch.nn.Linear(256, 1000, bias=False)
        self.head.weight = self.embed.weight  # tied weights
    def forward(self, x):
        return self.head(self.body(self.embed(x)))
torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randint(0, 1000, (8,))
"""

STEP = """
before = model(x).sum().item()
loss = model(x).pow(2).mean()
opt.zero_grad()
loss.backward()
opt.step()
after = model(x).pow(2).mean().item()
tied = model.head.weight is model.embed.weight
"""


def test_model_defined_in_the_notebook_trains_in_the_worker(kernel_ns):  # noqa: F811 - the fixture
    exec(MODEL, kernel_ns)
    initial = kernel_ns["model"].embed.weight.detach().clone()
    # the same training step, done here on a copy, is what the worker must bring back
    reference = {"__name__": "__main__"}
    exec(MODEL, reference)
    exec(STEP, reference)
    run_in_worker(kernel_ns, STEP)
    assert kernel_ns["before"] == pytest.approx(reference["before"], rel=1e-5)
    assert kernel_ns["tied"] and kernel_ns["model"].head.weight is kernel_ns["model"].embed.weight
    got, want = kernel_ns["model"].state_dict(), reference["model"].state_dict()
    assert got.keys() == want.keys()
    for key in want:
        assert torch.allclose(got[key], want[key], atol=1e-6), key
    assert not torch.equal(got["embed.weight"], initial), "the step in the worker did not come back"
    # the optimizer still drives the model's parameters in the kernel
    params = {id(p) for p in kernel_ns["model"].parameters()}
    assert {id(p) for group in kernel_ns["opt"].param_groups for p in group["params"]} == params
    assert isinstance(kernel_ns["model"], kernel_ns["Net"])
