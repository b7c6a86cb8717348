"""Accelerators: a torch.profiler (Kineto) trace read, merged into a Recording and
written as Score-P's CUDA adapter writes device streams; checked with the otf2 reader,
otf2-print, cube_dump and pycubexr. The device traces are built in Kineto's format by
server_ext/tests/kineto_factory.py (no GPU here); the torch tests profile real cells
(torch's CPU build) and skip without torch."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import otf2
import pytest

sys.path.append(str(Path(__file__).resolve().parents[2] / "server_ext" / "tests"))
from kineto_factory import GEMM, LOADER, TrainingStep

from scorep_kernel.accel import host_merge, kineto_trace
from scorep_kernel.accel.device_recording import add_to_recording
from scorep_kernel.accel.import_trace import import_trace
from scorep_kernel.formats.cube_devices import write_cubex_with_devices
from scorep_kernel.formats.otf2_writer import write_otf2
from scorep_kernel.formats.recording import (
    ENTER,
    ROLE_CELL,
    ROLE_FUNCTION,
    ROLE_OPERATOR,
    Recording,
    Region,
    ThreadEvents,
)

CUBE_DUMP = shutil.which("cube_dump") or "/opt/scorep/bin/cube_dump"


def _recording(ts: TrainingStep) -> Recording:
    """A run whose master thread (the trace's tid) has a cell and a Python function
    around the whole training loop; clock offset = the trace's base."""
    t0 = int(ts.start_us * 1000) - 1000
    t1 = int(ts.end_us * 1000) + 1000
    regions = [Region("cell [1]", "cell", "<cell 1>", 0, ROLE_CELL),
               Region("__main__:train", "__main__", "<cell 1>", 1, ROLE_FUNCTION)]  # fmt: skip
    thread = ThreadEvents("Master thread", ts.tid, np.array([t0, t0 + 10, t1 - 10, t1]),
                          np.array([0, 1, 1, 0], np.int32), np.array([1, 1, 0, 0], np.int8))  # fmt: skip
    return Recording(regions, [thread], clock_offset_ns=ts.base_ns, start_ns=t0, end_ns=t1,
                     hostname="node1", pid=ts.pid)  # fmt: skip


@pytest.fixture
def step_trace():
    ts = TrainingStep()
    doc = ts.build()
    return ts, doc


def test_kineto_trace_parse(step_trace, tmp_path):
    ts, doc = step_trace
    trace = kineto_trace.parse(doc)
    kernels = [a for a in trace.device if a.kind == kineto_trace.DEVICE_KERNEL]
    copies = [a for a in trace.device if a.kind == kineto_trace.DEVICE_MEMCPY]
    assert len(kernels) == ts.kernel_count
    assert sorted((a.copy, a.bytes) for a in copies) == sorted(ts.copies)
    assert {a.stream for a in trace.device} == {ts.stream}
    launches = [h for h in trace.host if h.kind == kineto_trace.HOST_RUNTIME and h.correlation >= 0]
    assert {a.correlation for a in trace.device} <= {h.correlation for h in launches}
    # epoch ns: the base plus µs
    assert trace.span_ns[0] == ts.base_ns + round(ts.start_us * 1000)
    assert trace.devices[0].name == "NVIDIA H200"
    # the categories older Kineto wrote capitalised read alike, gzip too
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["cat"] = "Kernel"
    path = tmp_path / "old.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert len([a for a in kineto_trace.load(path).device if a.kind == "kernel"]) == ts.kernel_count


def test_kineto_trace_refuses_other_files(tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text('{"cells": []}')
    with pytest.raises(kineto_trace.KinetoTraceError, match="traceEvents"):
        kineto_trace.load(bad)
    bad.write_text("not json")
    with pytest.raises(kineto_trace.KinetoTraceError, match="not JSON"):
        kineto_trace.load(bad)


def _nesting(thread: ThreadEvents, regions) -> dict[str, str]:
    """Each region's name -> the name of the region it was first entered under."""
    parent: dict[str, str] = {}
    stack: list[str] = []
    for r, k in zip(thread.regions.tolist(), thread.kinds.tolist()):
        if k == ENTER:
            name = regions[r].name
            parent.setdefault(name, stack[-1] if stack else "")
            stack.append(name)
        else:
            stack.pop()
    return parent


def test_operators_nest_under_the_python_function(step_trace):
    ts, doc = step_trace
    rec = _recording(ts)
    notes = add_to_recording(rec, kineto_trace.parse(doc))
    assert notes["left_out_not_nested"] == 0
    parents = _nesting(rec.threads[0], rec.regions)
    assert parents["aten::linear"] == "ProfilerStep#0"
    assert parents["ProfilerStep#0"] == "__main__:train"
    assert parents["aten::addmm"] == "aten::linear"
    assert parents["cudaLaunchKernel"] in ("aten::addmm", "aten::clamp_min", "aten::mm")
    # every launch carries its correlation id
    cs = rec.threads[0].callsites
    assert (
        cs is not None
        and len(cs.ids) == len({a.correlation for a in kineto_trace.parse(doc).device}) + ts.steps
    )
    assert rec.devices[0].name == f"CUDA[{ts.device}:{ts.stream}]"
    assert notes["clock_shift_ns"] == 0  # the clocks agree: nothing moves


def test_operator_crossing_its_caller_is_cut_and_a_crossing_hook_left_out():
    """An operator the profiler's clock ends 300 ns after its caller returned is cut at
    the caller's end; one that overlaps a Python call without nesting is left out, and
    the Python call stays."""
    regions = [Region("__main__:f", "__main__"), Region("__main__:hook", "__main__"),
               Region("aten::mm", "aten", role=ROLE_OPERATOR), Region("aten::add", "aten", role=ROLE_OPERATOR)]  # fmt: skip
    # f [100, 1000], hook [2000, 3000]
    thread = ThreadEvents("Master thread", 1, np.array([100, 1000, 2000, 3000]),
                          np.array([0, 0, 1, 1], np.int32), np.array([1, 0, 1, 0], np.int8))  # fmt: skip
    new = host_merge.HostIntervals(
        starts=np.array([200, 1500]), ends=np.array([1300, 2500]),
        regions=np.array([2, 3], np.int32), callsite=np.array([-1, -1]),
    )  # fmt: skip
    merged, dropped = host_merge.merge(thread, new)
    assert dropped == 1
    events = [
        (int(t), regions[r].name, int(k))
        for t, r, k in zip(merged.times, merged.regions, merged.kinds)
    ]
    assert events == [(100, "__main__:f", 1), (200, "aten::mm", 1), (1000, "aten::mm", 0),
                      (1000, "__main__:f", 0), (2000, "__main__:hook", 1), (3000, "__main__:hook", 0)]  # fmt: skip


def _steps(step_ns: list[tuple[int, int]]) -> ThreadEvents:
    """A master thread: a cell [0, 10^9] around Python calls ``__main__:step``."""
    times = [0] + [t for pair in step_ns for t in pair] + [10**9]
    regions = [0] + [1] * (2 * len(step_ns)) + [0]
    kinds = [1] + [1, 0] * len(step_ns) + [0]
    return ThreadEvents("Master thread", 1, np.array(times), np.array(regions, np.int32),
                        np.array(kinds, np.int8))  # fmt: skip


STEP_REGIONS = [Region("cell [1]", "cell", role=ROLE_CELL), Region("__main__:step", "__main__"),
                Region("aten::matmul", "aten", role=ROLE_OPERATOR),
                Region("aten::mm", "aten", role=ROLE_OPERATOR)]  # fmt: skip


def _merged_nesting(thread, starts, ends, shift):
    """Merge matmul/mm pairs (alternating) moved by ``shift``: (left out, parents)."""
    regions = np.array([2, 3] * (len(starts) // 2), np.int32)
    new = host_merge.HostIntervals(np.array(starts) + shift, np.array(ends) + shift, regions,
                                   np.full(len(starts), -1))  # fmt: skip
    merged, dropped = host_merge.merge(thread, new)
    return dropped, _nesting(merged, STEP_REGIONS)


def test_operators_early_on_our_clock_get_a_shift_and_nest():
    """Kineto's clock 40 ns behind ours: each step's matmul (6 ns into it on a shared
    clock) starts before the step's enter and was left out; the shift that nests the most
    (the middle of the range that does) puts all three back under their step."""
    steps = [(100 + k * 1000, 600 + k * 1000) for k in range(3)]
    thread = _steps(steps)
    starts, ends = [], []
    for a, _ in steps:  # matmul [a+6, a+400] around mm [a+50, a+350], 40 ns early
        starts += [a + 6 - 40, a + 50 - 40]
        ends += [a + 400 - 40, a + 350 - 40]
    dropped, _ = _merged_nesting(thread, starts, ends, 0)
    assert dropped == 3  # as before the shift: every matmul crossed its step
    windows = host_merge.nest_windows(thread, np.array(starts), np.array(ends))
    shift = host_merge.clock_shift(windows)
    assert shift == (34 + 140) // 2  # matmul nests from its start on the step's enter (34)
    # to its end on the step's return (140): the middle leaves it room either side
    dropped, parents = _merged_nesting(thread, starts, ends, shift)
    assert dropped == 0
    assert parents["aten::matmul"] == "__main__:step" and parents["aten::mm"] == "aten::matmul"


def test_a_single_stray_gets_no_shift_and_is_left_out():
    """One operator crossing its step's enter, the others nested: no shift (it would
    nest one more, not two), and the stray is left out as before."""
    steps = [(100 + k * 1000, 600 + k * 1000) for k in range(3)]
    thread = _steps(steps)
    starts, ends = [90, 150], [400, 350]  # the stray matmul 10 ns before step 1
    for a, _ in steps[1:]:
        starts += [a + 6, a + 50]
        ends += [a + 400, a + 350]
    windows = host_merge.nest_windows(thread, np.array(starts), np.array(ends))
    assert host_merge.clock_shift(windows) == 0
    dropped, parents = _merged_nesting(thread, starts, ends, 0)
    assert dropped == 1 and parents["aten::matmul"] == "__main__:step"


def test_a_trace_on_a_disagreeing_clock_moves_host_and_device_alike():
    """The factory's trace under a Python call per step that begins 6 ns before the step's
    first operator, read 40 ns early (the clock offset 40 ns too large): each step's
    DataLoader annotation crosses its Python call unless the trace moves, device streams
    with it."""
    ts = TrainingStep(profiler_steps=False)
    trace = kineto_trace.parse(ts.build())
    loads = sorted(e.start_ns - ts.base_ns for e in trace.host if e.name == LOADER)
    last = trace.span_ns[1] - ts.base_ns
    late = 40
    rec = _recording(ts)
    rec.clock_offset_ns += late
    steps = [(a - 6, b - 1000) for a, b in zip(loads, loads[1:] + [last + 2000])]
    rec.threads = [replace(_steps(steps), thread_id=ts.tid)]
    rec.regions = list(STEP_REGIONS[:2])
    notes = add_to_recording(rec, trace)
    assert notes["clock_shift_ns"] >= late - 6  # at least: the annotation on its step's enter
    assert notes["left_out_not_nested"] == 0
    parents = _nesting(rec.threads[0], rec.regions)
    assert parents[LOADER] == "__main__:step"
    first = min(a.start_ns for a in trace.device)
    assert rec.devices[0].starts[0] == first - rec.clock_offset_ns + notes["clock_shift_ns"]


def test_device_streams_in_otf2_as_scoreps_cuda_adapter(step_trace, tmp_path):
    ts, doc = step_trace
    rec = _recording(ts)
    add_to_recording(rec, kineto_trace.parse(doc))
    write_otf2(rec, tmp_path)
    with otf2.reader.open(str(tmp_path / "traces.otf2")) as trace:
        defs = trace.definitions
        stream = next(loc for loc in defs.locations if loc.name == "CUDA[0:7]")
        assert "ACCELERATOR_STREAM" in str(stream.type) or "GPU" in str(stream.type)
        assert stream.group.name == "CUDA Context 0"
        assert "ACCELERATOR" in str(stream.group.location_group_type)
        assert stream.group.system_tree_parent.class_name == "CUDA Device"
        kernels, params, gets, puts = 0, {}, [], []
        for loc, event in trace.events:
            kind = type(event).__name__
            if (
                kind == "Enter"
                and loc.name == stream.name
                and "KERNEL" in str(event.region.region_role)
            ):
                kernels += 1
            elif kind == "ParameterUnsignedInt":
                params.setdefault(event.value, []).append(loc.name)
            elif kind == "RmaGet":
                gets.append(event.bytes)
            elif kind == "RmaPut":
                puts.append(event.bytes)
    assert kernels == ts.kernel_count
    # every device activity's callsite id is also on the host thread's launch
    device_side = {v for v, locs in params.items() if "CUDA[0:7]" in locs}
    assert device_side and all("Master thread" in params[v] for v in device_side)
    assert sum(gets) == sum(b for d, b in ts.copies if d == "HtoD")
    assert sum(puts) == sum(b for d, b in ts.copies if d == "DtoH")
    if shutil.which("otf2-print"):
        out = subprocess.run(["otf2-print", str(tmp_path / "traces.otf2")], capture_output=True,
                             text=True, check=True).stdout  # fmt: skip
        assert "RMA_GET" in out and "PARAMETER_UINT64" in out and GEMM in out


def test_device_streams_in_cube4(step_trace, tmp_path):
    from pycubexr import CubexParser

    ts, doc = step_trace
    rec = _recording(ts)
    add_to_recording(rec, kineto_trace.parse(doc))
    path = tmp_path / "profile.cubex"
    write_cubex_with_devices(rec, path)
    with CubexParser(str(path)) as cube:
        locs = [(loc.name, loc.type) for loc in cube.get_locations()]
        assert ("CUDA[0:7]", "accelerator stream") in locs
        time = cube.get_metric_values(cube.get_metric_by_name("time"))
        visits = cube.get_metric_values(cube.get_metric_by_name("visits"))
        gemm = [c for c in cube.all_cnodes() if cube.get_region(c).name == GEMM]
        col = [name for name, _ in locs].index("CUDA[0:7]")
        assert sum(visits.cnode_values(c)[col] for c in gemm) == 3 * ts.steps
        got = sum(time.cnode_values(c)[col] for c in gemm)
        assert got == pytest.approx(3 * ts.steps * ts.gemm_us * 1e-6, rel=1e-6)
    if Path(CUBE_DUMP).exists():
        out = subprocess.run(
            [CUBE_DUMP, "-w", str(path)], capture_output=True, text=True, check=True
        ).stdout
        assert "CUDA Device" in out and "accelerator stream" in out


def test_import_a_trace_from_outside(tmp_path):
    ts = TrainingStep()
    trace = ts.write(tmp_path / "train.pt.trace.json")
    exp = import_trace(trace, tmp_path / "scorep-experiments")
    manifest = json.loads((exp / "manifest.json").read_text())
    assert manifest["files_status"] == "ready" and manifest["source"]["kind"] == "torch.profiler"
    assert (exp / "torch.pt.trace.json").read_bytes() == trace.read_bytes()
    assert (
        manifest["measurement"]["accelerator"]["device_activities"]
        == len(ts.copies) + ts.kernel_count + ts.steps
    )
    bad = tmp_path / "x.json"
    bad.write_text("[]")
    done = subprocess.run([sys.executable, "-m", "scorep_kernel.accel.import_trace", str(bad), str(tmp_path)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2 and "holds no operators" in done.stderr


def test_scorep_without_cuda_says_so():
    from scorep_kernel.accel import scorep_cuda

    if not shutil.which("scorep-info"):
        pytest.skip("Score-P's scorep-info is not on PATH")
    supported, words = scorep_cuda.cuda_support()
    env, choice = scorep_cuda.choose({}, True)
    if supported:
        assert env[scorep_cuda.VARIABLE] == scorep_cuda.FEATURES and choice["enabled"]
        return
    assert "CUDA support: no" in words
    assert scorep_cuda.VARIABLE not in env and not choice["enabled"]
    assert (
        "built without CUDA support" in choice["message"] and "builtin backend" in choice["message"]
    )
    # the user's own SCOREP_CUDA_ENABLE wins; the setting off says nothing
    assert scorep_cuda.choose({"SCOREP_CUDA_ENABLE": "kernel"}, True)[1]["value"] == "kernel"
    assert scorep_cuda.choose({}, False)[1]["message"] == ""


def test_torch_imported_but_unused_leaves_nothing(tmp_path):
    """torch imported (an earlier cell), a run that uses none of it: the profiler ran,
    but no trace file and no accelerator notes are left; one that does keeps both."""
    torch = pytest.importorskip("torch")
    from scorep_kernel.measure.measure_config import MeasureConfig
    from scorep_kernel.measure.session import Measurement

    def run(code: str, where: Path):
        m = Measurement(where, MeasureConfig())
        m.start()
        with m.cell("cell [1]"):
            exec(code, {"torch": torch})
        return m.stop()

    idle = run("x = sum(range(100))", tmp_path / "a")
    assert "accelerator" not in idle.notes and not (tmp_path / "a" / "torch.pt.trace.json").exists()
    used = run("y = torch.ones(4) + 1", tmp_path / "b")
    assert used.notes["accelerator"]["operators"] > 0
    assert (tmp_path / "b" / "torch.pt.trace.json").exists()


def test_the_profiler_starts_without_loading_inductor(tmp_path):
    """A run that imports torch starts torch.profiler without torch._inductor and
    torch._dynamo (hasattr(torch, "_inductor") in the profiler's start loaded 818 modules,
    2.2 s of CPU, inside the cell); its operators are recorded, and afterwards torch's lazy
    torch._inductor loads as before. A fresh interpreter: this one may hold them already."""
    pytest.importorskip("torch")
    script = f"""
import sys
from scorep_kernel.measure.measure_config import MeasureConfig
from scorep_kernel.measure.session import Measurement
m = Measurement({str(tmp_path)!r}, MeasureConfig())
m.start()
with m.cell("cell [1]"):
    exec("import torch\\ny = torch.ones(4) + 1", {{}})
recording = m.stop()
print(recording.notes["accelerator"]["operators"] > 0)
print("torch._inductor" in sys.modules, "torch._dynamo" in sys.modules)
import torch
print(torch._inductor.__name__)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, check=True).stdout.split("\n")  # fmt: skip
    assert out[:3] == ["True", "False False", "torch._inductor"], out


def test_a_process_ending_with_torch_profiled_exits_cleanly(tmp_path):
    """A script that ends (here by an error) while a Measurement with torch.profiler runs:
    torch's profiler is stopped at exit, else its state crashes the process with SIGSEGV
    in C++'s exit handlers (the exit status was -11 before)."""
    pytest.importorskip("torch")
    script = tmp_path / "ends.py"
    script.write_text(
        "import sys\n"
        "from scorep_kernel.measure.session import Measurement\n"
        f"m = Measurement({str(tmp_path / 'exp')!r})\n"
        "m.start()\n"
        "with m.cell('c'):\n"
        "    import torch\n"
        "    torch.ones(4).sum()\n"
        "    assert m._torch._profile is not None, 'torch.profiler runs'\n"
        "    raise SystemExit(3)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr[-2000:]
