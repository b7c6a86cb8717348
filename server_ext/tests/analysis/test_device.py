"""The accelerators' analysis and routes, on training steps in Kineto's format
(kineto_factory) turned into experiments by the kernel's importer: busy and idle share,
idle by cause, top kernels and operators, copies each way, the launch links; HTA on the
same Kineto trace where it is installed; GET device, GET link, GET summary's verdict,
POST import."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest
from kineto_factory import GEMM, LOADER, TrainingStep

from jupyterlab_scorep.analysis import device_analysis
from jupyterlab_scorep.trace.device_read import read_device_records
from jupyterlab_scorep.trace.index_store import LoadedIndex, ensure_index
from scorep_kernel.accel.import_trace import import_trace

pytestmark = pytest.mark.timeout(180)


def _analyze(tmp_path: Path, ts: TrainingStep) -> tuple[dict, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    trace = ts.write(tmp_path / "train.pt.trace.json")
    exp = import_trace(trace, tmp_path / "scorep-experiments")
    index = LoadedIndex(ensure_index(str(exp)))
    records = read_device_records(str(exp / "traces.otf2"))
    analysis = device_analysis.analyze(index, records)
    assert analysis is not None
    return analysis, exp


def _device_work(ts: TrainingStep) -> list[tuple[float, float]]:
    return sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in ts.events
        if e.get("ph") == "X" and e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")
    )


def test_busy_idle_and_the_input_pipeline(tmp_path):
    ts = TrainingStep()
    a, _exp = _analyze(tmp_path, ts)
    work = _device_work(ts)
    busy_us = sum(e - s for s, e in work)  # one stream: the activities do not overlap
    cell_us = ts.end_us - ts.start_us
    assert a["busy_s"] == pytest.approx(busy_us * 1e-6, rel=1e-6)
    assert a["cell_s"] == pytest.approx(cell_us * 1e-6, rel=1e-6)
    assert a["idle_pct"] == pytest.approx(100 * (1 - busy_us / cell_us), abs=0.01)
    # the DataLoader's __next__ is when the device waits for data
    assert a["input_pipeline_s"] == pytest.approx(ts.steps * ts.input_ms * 1e-3, rel=1e-6)
    assert a["idle_by_cause"]["input"] == pytest.approx(ts.steps * ts.input_ms * 1e-3, rel=1e-6)
    assert sum(a["idle_by_cause"].values()) == pytest.approx(a["idle_s"], rel=1e-6)
    assert a["verdict"]["level"] == "warning"
    assert a["verdict"]["text"].startswith(
        f"GPU idle {a['idle_pct']:.0f} % of the cell: waiting for the input pipeline"
    )
    assert "DataLoader's `__next__`" in a["verdict"]["text"]


def test_top_kernels_operators_and_copies(tmp_path):
    ts = TrainingStep()
    a, _exp = _analyze(tmp_path, ts)
    top = a["top_kernels"][0]
    assert top["name"] == GEMM and top["count"] == 3 * ts.steps
    assert top["device_s"] == pytest.approx(3 * ts.steps * ts.gemm_us * 1e-6, rel=1e-6)
    ops = {o["name"]: o for o in a["top_operators"]}
    # the backward's two aten::mm launches per step, the forward's addmm
    assert ops["aten::mm"]["device_s"] == pytest.approx(2 * ts.steps * ts.gemm_us * 1e-6, rel=1e-6)
    assert ops["aten::addmm"]["activities"] == ts.steps
    htod = a["memcpy"]["HtoD"]
    assert htod["bytes"] == sum(b for d, b in ts.copies if d == "HtoD")
    assert htod["rate_gb_s"] == pytest.approx(ts.batch_bytes / (ts.htod_us * 1000), rel=1e-3)
    assert a["memcpy"]["DtoH"]["bytes"] == 4 * ts.steps
    assert a["memset"]["count"] == ts.steps
    assert a["linked"] == len(_device_work(ts))


def test_causes_sync_and_host(tmp_path):
    """No input pipeline: after each step's loss.item() the host runs Python for 3 ms
    (the sync drained the queue: synchronisation); in another run it pauses 3 ms between
    two launches in the middle of the step (waiting for the host)."""
    after_sync = TrainingStep(input_ms=0.0, steps=3)
    after_sync.after_sync_ms = 3.0
    a, _ = _analyze(tmp_path / "a", after_sync)
    assert max(a["idle_by_cause"], key=a["idle_by_cause"].get) == "sync"
    assert "synchronisation" in a["verdict"]["text"]
    mid = TrainingStep(input_ms=0.0, steps=3)
    mid.host_ms = 3.0
    b, _ = _analyze(tmp_path / "b", mid)
    assert max(b["idle_by_cause"], key=b["idle_by_cause"].get) == "host"
    # each pause minus the work still queued on the device when it began (gemm + relu)
    assert 3 * (3.0 - 0.4) * 1e-3 <= b["idle_by_cause"]["host"] <= 3 * 3.0e-3 + 1e-4
    assert "waiting for the host" in b["verdict"]["text"]


def test_idle_share_agrees_with_hta(tmp_path):
    """HTA's temporal breakdown on the very Kineto trace the experiment was made from."""
    hta = pytest.importorskip(
        "hta.trace_analysis", reason="HTA (holistictraceanalysis) is not installed"
    )
    ts = TrainingStep(profiler_steps=False, steps=4, input_ms=1.5)
    a, exp = _analyze(tmp_path, ts)
    hta_dir = tmp_path / "hta"
    hta_dir.mkdir()
    (hta_dir / "rank0.pt.trace.json").write_bytes((exp / "torch.pt.trace.json").read_bytes())
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            analysis = hta.TraceAnalysis(trace_dir=str(hta_dir))
            temporal = analysis.get_temporal_breakdown(visualize=False).iloc[0]
            idle = analysis.get_idle_time_breakdown(visualize=False)[0]
    finally:
        logging.disable(logging.NOTSET)
    assert a["idle_pct_of_span"] == pytest.approx(float(temporal["idle_time_pctg"]), abs=0.5)
    host_wait = float(idle[idle["idle_category"] == "host_wait"]["idle_time"].sum())  # µs
    ours = a["idle_by_cause"]
    # HTA's host wait is input + sync + host (ours) within the span of device work
    assert host_wait > 0 and ours["other"] == 0


async def test_routes(api, jp_root_dir):
    ts = TrainingStep()
    trace = ts.write(Path(jp_root_dir) / "train.pt.trace.json")
    code, body = await api("import", method="POST", trace="train.pt.trace.json")
    assert code == 200, body
    path = body["path"]
    assert Path(path).parent == Path(jp_root_dir) / "scorep-experiments"
    code, device = await api("device", path=path)
    assert code == 200 and device["streams"][0]["name"] == f"CUDA[{ts.device}:{ts.stream}]"
    assert "_links" not in device
    code, exp = await api("experiment", path=path)
    locs = {loc["name"]: loc for loc in exp["trace"]["locations"]}
    assert locs["CUDA[0:7]"]["kind"] == "gpu"
    # the first copy's launch, and back
    code, tl = await api("timeline", path=path, width=20000)
    dev = next(loc for loc in tl["locations"] if loc["name"] == "CUDA[0:7]")
    first = dev["rows"][0]["start"][0]
    code, link = await api("link", path=path, location=locs["CUDA[0:7]"]["id"], start=first)
    assert code == 200 and link["links"][0]["kind"] == "launch"
    launch = link["links"][0]
    code, back = await api("link", path=path, location=launch["location"], start=launch["start"])
    assert [x["start"] for x in back["links"]] == [first]
    code, summary = await api("summary", path=path)
    assert (
        summary["verdicts"][0]["kind"] == "gpu"
        and "input pipeline" in summary["verdicts"][0]["text"]
    )
    assert summary["device"]["busy_pct"] == device["busy_pct"]
    assert trace.exists()


async def test_routes_refuse(api, jp_root_dir, experiments):
    (Path(jp_root_dir) / "notes.json").write_text('{"cells": []}')
    code, body = await api("import", method="POST", trace="notes.json")
    assert code == 422 and "traceEvents" in body["message"]
    code, body = await api("import", method="POST", trace="../outside.pt.trace.json")
    assert code == 403
    code, body = await api("import", method="POST", trace="missing.pt.trace.json")
    assert code == 404
    exp = experiments()  # a run of the host alone
    code, body = await api("device", path=str(exp))
    assert code == 404 and "no device streams" in body["message"]
    code, summary = await api("summary", path=str(exp))
    assert summary["device"] is None


def test_loader_name_is_the_input_pipeline():
    from jupyterlab_scorep.analysis.device_idle import INPUT_PIPELINE

    assert INPUT_PIPELINE.search(LOADER)
    assert INPUT_PIPELINE.search("torch.utils.data.dataloader._BaseDataLoaderIter:__next__")
    assert not INPUT_PIPELINE.search("__main__:next_batch")
