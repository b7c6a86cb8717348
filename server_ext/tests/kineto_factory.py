"""torch.profiler (Kineto) traces of a training step on a CUDA device, built in Kineto's
documented Chrome trace format (libkineto's ChromeTraceLogger, as HTA's parser reads it):
the device lanes and their analysis are tested on these where no GPU is at hand.

``TrainingStep`` lays out what a small training loop does per step, on one host thread
and one CUDA stream, with every number chosen so the expected figures follow by hand:

    DataLoader __next__ (input_ms)       GPU idle: waiting for the input pipeline
    aten::to -> cudaMemcpyAsync          Memcpy HtoD, batch_bytes
    aten::linear -> aten::addmm -> cudaLaunchKernel       sgemm kernel, gemm_us
    aten::relu -> aten::clamp_min -> cudaLaunchKernel     elementwise kernel, relu_us
    aten::zero_ -> cudaMemsetAsync       Memset (Device)
    backward: two kernels                gemm_us each
    Optimizer.step#SGD.step -> cudaLaunchKernel           multi_tensor_apply, opt_us
    aten::item -> cudaMemcpyAsync + cudaStreamSynchronize Memcpy DtoH 4 bytes; the host
                                         waits (sync), then the GPU idles until the next
                                         step's input arrives

Times are µs from ``base`` (epoch ns), as Kineto writes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

GEMM = "volta_sgemm_128x64_nn"
RELU = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::"
    "{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >"
    "(int, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, "
    "c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() "
    "const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)"
)
OPT = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<float>"
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


@dataclass
class TrainingStep:
    pid: int = 4242
    tid: int = 4242
    device: int = 0
    stream: int = 7
    base_ns: int = 1_790_000_000_000_000_000
    start_us: float = 1000.0  # first event, µs after base
    steps: int = 3
    profiler_steps: bool = True  # ProfilerStep#n annotations (HTA leaves the last step out)
    input_ms: float = 4.0
    batch_bytes: int = 64 * 1024 * 4  # a 64 x 1024 float32 batch
    htod_us: float = 40.0
    gemm_us: float = 300.0
    relu_us: float = 20.0
    memset_us: float = 5.0
    opt_us: float = 60.0
    launch_us: float = 8.0  # a cudaLaunchKernel call on the host
    gap_us: float = 2.0  # host time between calls
    host_ms: float = 0.0  # host Python between the relu's launch and the next one
    after_sync_ms: float = 0.0  # host Python after loss.item() (the sync) ends a step
    events: list[dict] = field(default_factory=list)
    _corr: int = 0
    kernel_count: int = 0
    copies: list[tuple[str, int]] = field(default_factory=list)  # (direction, bytes)

    # --- the Chrome trace events -----------------------------------------------------
    def _x(self, cat: str, name: str, ts: float, dur: float, pid=None, tid=None, **args) -> dict:
        e = {"ph": "X", "cat": cat, "name": name, "pid": self.pid if pid is None else pid,
             "tid": self.tid if tid is None else tid, "ts": round(ts, 3), "dur": round(dur, 3),
             "args": args}  # fmt: skip
        self.events.append(e)
        return e

    def _device(self, cat, name, ts, dur, corr, **args) -> None:
        self._x(cat, name, ts, dur, pid=self.device, tid=self.stream, device=self.device,
                context=1, stream=self.stream, correlation=corr, **args)  # fmt: skip
        if cat == "kernel":
            self.kernel_count += 1

    def _flow(self, corr: int, host_ts: float, dev_ts: float) -> None:
        self.events.append({"ph": "s", "id": corr, "pid": self.pid, "tid": self.tid,
                            "ts": host_ts, "cat": "ac2g", "name": "ac2g"})  # fmt: skip
        self.events.append({"ph": "f", "id": corr, "pid": self.device, "tid": self.stream,
                            "ts": dev_ts, "cat": "ac2g", "name": "ac2g", "bp": "e"})  # fmt: skip

    def _launch(
        self,
        t: float,
        gpu_free: float,
        name: str,
        dur: float,
        api="cudaLaunchKernel",
        cat="kernel",
        **dev_args,
    ) -> tuple[float, float]:
        """A runtime call at host time t starting device work of ``dur`` when the stream is
        free; returns (host time after the call, device time the work ends)."""
        self._corr += 1
        corr = self._corr
        self._x("cuda_runtime", api, t, self.launch_us, correlation=corr, cbid=211)
        start = max(t + self.launch_us / 2, gpu_free)
        self._device(cat, name, start, dur, corr, **dev_args)
        self._flow(corr, t, start)
        return t + self.launch_us + self.gap_us, start + dur

    def _op(self, name: str, t: float, body) -> tuple[float, float]:
        """An operator around ``body(t) -> (t_end, gpu_free)``."""
        e = self._x("cpu_op", name, t, 0.0, **{"External id": len(self.events)})
        t_end, gpu = body(t + self.gap_us)
        e["dur"] = round(t_end - t, 3)
        return t_end + self.gap_us, gpu

    def build(self) -> dict:
        t = self.start_us
        gpu = t
        for step in range(self.steps):
            step_start = t
            self._x("user_annotation", LOADER, t, self.input_ms * 1000)
            t += self.input_ms * 1000 + self.gap_us

            def htod(t0, gpu=gpu):
                self.copies.append(("HtoD", self.batch_bytes))
                return self._launch(t0, gpu, "Memcpy HtoD (Pageable -> Device)", self.htod_us,
                                    api="cudaMemcpyAsync", cat="gpu_memcpy",
                                    bytes=self.batch_bytes)  # fmt: skip

            t, gpu = self._op("aten::to", t, lambda t0: self._op("aten::copy_", t0, htod))

            def addmm(t0, gpu=gpu):
                return self._op(
                    "aten::addmm", t0, lambda t1: self._launch(t1, gpu, GEMM, self.gemm_us)
                )

            t, gpu = self._op("aten::linear", t, addmm)

            def relu(t0, gpu=gpu):
                return self._op(
                    "aten::clamp_min", t0, lambda t1: self._launch(t1, gpu, RELU, self.relu_us)
                )

            t, gpu = self._op("aten::relu", t, relu)
            t += self.host_ms * 1000

            def zero(t0, gpu=gpu):
                return self._launch(t0, gpu, "Memset (Device)", self.memset_us,
                                    api="cudaMemsetAsync", cat="gpu_memset", bytes=4096)  # fmt: skip

            t, gpu = self._op("aten::zero_", t, zero)
            for _ in range(2):

                def back(t0, gpu=gpu):
                    return self._op(
                        "aten::mm", t0, lambda t1: self._launch(t1, gpu, GEMM, self.gemm_us)
                    )

                t, gpu = self._op("autograd::engine::evaluate_function: AddmmBackward0", t, back)

            def opt(t0, gpu=gpu):
                return self._launch(t0, gpu, OPT, self.opt_us)

            t, gpu = self._op("Optimizer.step#SGD.step", t, opt)

            def item(t0, gpu=gpu):
                self.copies.append(("DtoH", 4))
                t1, g = self._launch(t0, gpu, "Memcpy DtoH (Device -> Pageable)", 2.0,
                                     api="cudaMemcpyAsync", cat="gpu_memcpy", bytes=4)  # fmt: skip
                # the host waits for the device: cudaStreamSynchronize until the copy ends
                self._corr += 1
                wait = max(g - t1, 1.0)
                self._x("cuda_runtime", "cudaStreamSynchronize", t1, wait, correlation=self._corr)
                return t1 + wait + self.gap_us, g

            t, gpu = self._op(
                "aten::item", t, lambda t0: self._op("aten::_local_scalar_dense", t0, item)
            )
            t += self.after_sync_ms * 1000
            if self.profiler_steps:
                self._x("user_annotation", f"ProfilerStep#{step}", step_start, t - step_start)
        self.end_us = t
        meta = [
            {"ph": "M", "name": "process_name", "pid": self.pid, "tid": 0, "args": {"name": "python"}},
            {"ph": "M", "name": "thread_name", "pid": self.pid, "tid": self.tid,
             "args": {"name": f"thread {self.tid} (python)"}},
            {"ph": "M", "name": "process_name", "pid": self.device, "tid": 0, "args": {"name": "python"}},
            {"ph": "M", "name": "thread_name", "pid": self.device, "tid": self.stream,
             "args": {"name": f"stream {self.stream}"}},
        ]  # fmt: skip
        return {
            "schemaVersion": 1,
            "deviceProperties": [{"id": self.device, "name": "NVIDIA H200", "totalGlobalMem": 150_000_000_000,
                                  "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
            "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
            "traceEvents": meta + self.events,
            "traceName": "training_step.pt.trace.json",
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": self.base_ns,
        }  # fmt: skip

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.build()))
        return path
