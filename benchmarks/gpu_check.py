"""The accelerators on a real NVIDIA GPU: one small training step (a model, a DataLoader,
an optimizer) profiled in the "Python 3 (Score-P)" kernel with the builtin backend, and
what the panel would show checked against what happened. Sized for one run of under 10
minutes on an H200 (PyTorch with CUDA, CUPTI, nvidia-ml-py); on a machine without CUDA it
runs what it can (operators, overhead) and says what it skipped.

Checks (each a RESULT line; exit status 1 when one fails):

1. kernel lanes: the experiment has device locations named CUDA[<device>:<stream>];
2. launch links: every kernel, copy and set Kineto linked to a launch (correlation id) is
   linked in the analysis (GET device's ``linked``), and each launch is a runtime call on
   the host thread;
3. copies: the bytes copied host to device equal the bytes of the batches moved with
   ``.to(device)``, device to host the 4 bytes of each ``loss.item()``;
4. idle share: the analysis's idle share over the span of device work against HTA's
   temporal breakdown (``holistictraceanalysis``) on the same Kineto trace, within 2
   points;
5. overhead: the step's wall time profiled (Python tracer + operators + device) against
   torch.profiler alone around the same step, and against the step unprofiled; medians
   with ranges over interleaved rounds.

    python benchmarks/gpu_check.py [--steps 40] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _kernel_client import Kernel  # noqa: E402
from _report import report  # noqa: E402

MIME = "application/vnd.scorep.experiment+json"
IDLE_POINTS = 2.0

SETUP = """
import time, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
BATCH, FEATURES, CLASSES = 64, 1024, 10
data = TensorDataset(torch.randn(64 * BATCH, FEATURES), torch.randint(0, CLASSES, (64 * BATCH,)))
loader = DataLoader(data, batch_size=BATCH, shuffle=True, num_workers=0)
model = nn.Sequential(nn.Linear(FEATURES, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                      nn.Linear(2048, CLASSES)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
moved = {"htod": 0, "dtoh": 0}

def train(steps):
    it = iter(loader)
    for _ in range(steps):
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
        x, y = x.to(device), y.to(device)
        moved["htod"] += x.nbytes + y.nbytes
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()
        moved["dtoh"] += 4
    if device == "cuda":
        torch.cuda.synchronize()

def timed(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0

train(3)  # CUDA context, cuBLAS handles, allocator: not the step's
"""

TORCH_ALONE = """
from torch.profiler import profile, ProfilerActivity
acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
t0 = time.perf_counter()
with profile(activities=acts) as prof:
    train({steps})
prof.export_chrome_trace({trace!r})
t_alone = time.perf_counter() - t0
"""


def _exp(result) -> Path:
    bundle = result.mime(MIME)
    if not bundle:
        raise RuntimeError(
            f"the profiled cell showed no experiment: {result.error or result.outputs}"
        )
    return Path(bundle["path"])


def _wait_ready(exp: Path, timeout: float = 300) -> dict:
    import time

    deadline = time.monotonic() + timeout
    while True:
        manifest = json.loads((exp / "manifest.json").read_text())
        if manifest["files_status"] != "pending" or time.monotonic() > deadline:
            return manifest
        time.sleep(0.2)


def _analysis(exp: Path) -> dict | None:
    from jupyterlab_scorep.analysis import device_analysis
    from jupyterlab_scorep.trace.device_read import read_device_records
    from jupyterlab_scorep.trace.index_store import LoadedIndex, ensure_index

    index = LoadedIndex(ensure_index(str(exp)))
    return device_analysis.analyze(index, read_device_records(str(exp / "traces.otf2")))


def _hta_idle(trace: Path) -> float:
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "rank0.pt.trace.json").write_bytes(trace.read_bytes())
        logging.disable(logging.WARNING)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = TraceAnalysis(trace_dir=d).get_temporal_breakdown(visualize=False)
        logging.disable(logging.NOTSET)
    return float(df.iloc[0]["idle_time_pctg"])


def _spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f} s, range {min(values):.3f}-{max(values):.3f} s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=40, help="training steps per profiled cell")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the overhead")
    args = ap.parse_args()
    failed: list[str] = []
    skipped: list[str] = []

    def check(name: str, ok: bool, value: float, unit: str, note: str, **kw) -> None:
        report(f"gpu_check: {name}", value, unit, met=ok, note=note, **kw)
        if not ok:
            failed.append(f"{name}: {note}")

    work = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    kernel = Kernel("scorep-python", cwd=str(work))
    try:
        r = kernel.run(SETUP)
        if r.status != "ok":
            print(f"the setup cell failed: {r.error}", file=sys.stderr)
            return 2
        cuda = kernel.run("print(device)").stdout.strip() == "cuda"
        print(f"device: {'CUDA' if cuda else 'CPU only'}")
        meta = {"scorep": {"profile": True, "backend": "builtin", "isolation": "inprocess"}}
        kernel.run('moved["htod"] = moved["dtoh"] = 0')
        r = kernel.run(f"train({args.steps})", meta)
        if r.status != "ok":
            print(f"the profiled cell failed: {r.error}", file=sys.stderr)
            return 2
        exp = _exp(r)
        manifest = _wait_ready(exp)
        moved = json.loads(kernel.run("import json; print(json.dumps(moved))").stdout)
        accel = manifest["measurement"].get("accelerator") or {}
        check("operators recorded", accel.get("operators", 0) > 0, accel.get("operators", 0),
              "operators", f"torch.profiler: {accel.get('activities')}")  # fmt: skip
        if not cuda:
            skipped += ["kernel lanes", "launch links", "copied bytes", "idle share against HTA"]
        else:
            a = _analysis(exp)
            lanes = [s["name"] for s in (a or {}).get("streams", [])]
            check("kernel lanes", bool(lanes) and all(n.startswith("CUDA[") for n in lanes),
                  len(lanes), "streams", ", ".join(lanes))  # fmt: skip
            trace = json.loads((exp / "torch.pt.trace.json").read_text())
            cats = ("kernel", "gpu_memcpy", "gpu_memset")
            kineto_linked = sum(
                1 for e in trace["traceEvents"]
                if e.get("ph") == "X" and str(e.get("cat", "")).lower() in cats
                and (e.get("args") or {}).get("correlation", -1) >= 0
            )  # fmt: skip
            linked = (a or {}).get("linked", 0)
            check("launch links", linked == kineto_linked and linked > 0, linked, "activities",
                  f"{linked} linked of {kineto_linked} Kineto links, {a and a['kernels']} kernels")  # fmt: skip
            htod = ((a or {}).get("memcpy") or {}).get("HtoD", {}).get("bytes", 0)
            dtoh = ((a or {}).get("memcpy") or {}).get("DtoH", {}).get("bytes", 0)
            check("copied bytes to the device", htod == moved["htod"], htod, "bytes",
                  f"the batches moved: {moved['htod']} bytes")  # fmt: skip
            check("copied bytes to the host", dtoh == moved["dtoh"], dtoh, "bytes",
                  f"loss.item() x steps: {moved['dtoh']} bytes")  # fmt: skip
            try:
                hta = _hta_idle(exp / "torch.pt.trace.json")
                ours = a["idle_pct_of_span"] if a else float("nan")
                check("idle share against HTA", abs(ours - hta) <= IDLE_POINTS, ours, "%",
                      f"HTA {hta:.2f} %, {ours - hta:+.2f} points (limit {IDLE_POINTS})",
                      peer="HTA temporal breakdown", peer_value=hta)  # fmt: skip
            except ImportError:
                skipped.append("idle share against HTA (holistictraceanalysis is not installed)")
            if a:
                print("verdict:", a["verdict"]["text"])

        # overhead, interleaved rounds: plain, torch.profiler alone, profiled (accelerators
        # on), profiled (accelerators off: the Python tracer alone)
        off = {"scorep": {**meta["scorep"], "accelerators": False}}
        plain, alone, ours, tracer_only = [], [], [], []
        for i in range(args.rounds):
            plain.append(float(kernel.run(f"print(timed(train, {args.steps}))").stdout))
            trace = str(work / f"alone-{i}.json")
            kernel.run(TORCH_ALONE.format(steps=args.steps, trace=trace))
            alone.append(float(kernel.run("print(t_alone)").stdout))
            for target, m in ((ours, meta), (tracer_only, off)):
                r = kernel.run(f"train({args.steps})", m)
                _wait_ready(_exp(r))
                target.append(r.seconds)
        med = statistics.median
        report("gpu_check: step unprofiled", med(plain), "s", note=_spread(plain))
        report("gpu_check: step under torch.profiler alone", med(alone), "s", note=_spread(alone))
        report("gpu_check: step profiled (tracer + operators + device)", med(ours), "s",
               peer="torch.profiler alone", peer_value=med(alone), note=_spread(ours))  # fmt: skip
        report("gpu_check: step profiled, accelerators off (tracer only)", med(tracer_only), "s",
               note=_spread(tracer_only))  # fmt: skip
        report("gpu_check: operator + device recording's cost", med(ours) - med(tracer_only), "s",
               peer="torch.profiler's own cost", peer_value=med(alone) - med(plain),
               note="profiled minus tracer-only, against torch.profiler minus unprofiled")  # fmt: skip
    finally:
        kernel.close()
    for s in skipped:
        print(f"SKIPPED (no CUDA here or no HTA): {s}")
    for f in failed:
        print(f"FAILED: {f}")
    print(f"gpu_check: {len(failed)} failed, {len(skipped)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
