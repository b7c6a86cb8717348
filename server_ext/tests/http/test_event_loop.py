"""No request waits on another request's work: reading files, indexing traces, building
call trees and answering queries run off the event loop (in threads or the parse
worker), so the server keeps answering while a trace is indexed.

Both tests are deterministic, with no timing in them. The first holds an index build in
progress until the server has answered other requests: were the build on the event loop,
those answers could not come while it is held. The second records the thread every piece
of blocking work runs on, and requires that none is the event loop's.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from pathlib import Path

import pytest
from experiment_factory import write_experiment
from synthetic_trace import write_experiment as write_synthetic

from jupyterlab_scorep.analysis import metric_series, summary
from jupyterlab_scorep.http import experiment_reads, export, service
from jupyterlab_scorep.http import tools as tools_mod
from jupyterlab_scorep.paths import Roots
from jupyterlab_scorep.trace import calltree, index_store, timeline
from jupyterlab_scorep.trace.index_store import IndexCache
from jupyterlab_scorep.trace.parse_worker import ParseWorker
from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf

pytestmark = pytest.mark.timeout(180)

# Bounds a *deadlock* (the loop blocked by the held build), not a speed: a healthy run
# releases the build as soon as the other answers are in.
HOLD_LIMIT_S = 120


def _service(jp_serverapp) -> service.Service:
    return jp_serverapp.web_app.settings["scorep_service"]


async def test_server_answers_while_a_trace_is_indexed(api, jp_serverapp, jp_root_dir):
    root = Path(jp_root_dir) / "scorep-experiments"
    big = write_synthetic(root / "big", 50_000, metrics=True)
    other = write_experiment(root / "other")
    assert (await api("timeline", path=str(other)))[0] == 200  # indexed before the hold

    svc = _service(jp_serverapp)
    loop = asyncio.get_running_loop()
    building, released = asyncio.Event(), threading.Event()
    blocked = []
    real_call = svc.reads._worker.call

    def held_call(fn, *args, **kw):
        # Runs in a waiter thread: hold the index build until the test has its answers.
        if fn is index_store.ensure_index:
            loop.call_soon_threadsafe(building.set)
            if not released.wait(HOLD_LIMIT_S):
                blocked.append(fn.__name__)
                raise RuntimeError("nothing was answered while the index build was held")
        return real_call(fn, *args, **kw)

    svc.reads._worker.call = held_call
    try:
        first = asyncio.ensure_future(api("timeline", path=str(big), width=800))
        await asyncio.wait_for(building.wait(), HOLD_LIMIT_S)
        for route, params in (
            ("version", {}),
            ("experiments", {}),
            ("experiment", {"path": str(other)}),
            ("timeline", {"path": str(other), "width": 300}),
            ("metrics", {"path": str(other), "width": 50}),
        ):
            code, body = await api(route, **params)
            assert code == 200, (route, body)
        # The build is still held, so every answer above came while it was in progress.
        assert not first.done(), f"the build ended before it was released: {first.result()}"
        released.set()
        code, body = await first
    finally:
        released.set()
        svc.reads._worker.call = real_call
    assert not blocked
    assert code == 200 and body["locations"]


@pytest.fixture
def on_which_thread(monkeypatch):
    """Wraps the functions that read files or compute over their contents so each call
    records whether it ran on the event loop's thread. Returns (names of the calls made on
    the loop, names of those made elsewhere, all names spied on)."""
    loop_thread = threading.get_ident()  # fixtures and tests run on the loop's thread
    on_loop: list[str] = []
    off_loop: set[str] = set()
    spied: set[str] = set()

    def record(name: str) -> None:
        if threading.get_ident() == loop_thread:
            on_loop.append(name)
        else:
            off_loop.add(name)

    def spy(owner, attr: str, name: str) -> None:
        real = getattr(owner, attr)
        spied.add(name)

        @functools.wraps(real)
        def wrapper(*args, **kw):
            record(name)
            return real(*args, **kw)

        monkeypatch.setattr(owner, attr, wrapper)

    def spy_stream(owner, attr: str) -> None:
        # A download's chunks are produced one ``next`` at a time: check each step.
        real = getattr(owner, attr)
        spied.add(f"export.{attr} chunk")

        def wrapper(*args, **kw):
            for chunk in real(*args, **kw):
                record(f"export.{attr} chunk")
                yield chunk
            record(f"export.{attr} chunk")

        monkeypatch.setattr(owner, attr, wrapper)

    for owner, attr, name in (
        (mf, "read_manifest", "manifest.read_manifest"),
        (ex, "read_metrics", "experiment.read_metrics"),
        (Roots, "experiment", "Roots.experiment"),
        (Roots, "resolve", "Roots.resolve"),
        (service, "experiment_file", "paths.experiment_file"),
        (export, "archive_files", "paths.archive_files"),
        (experiment_reads, "experiment_file", "paths.experiment_file"),
        (experiment_reads, "refuse_links_out", "paths.refuse_links_out"),
        (service, "list_experiments", "paths.list_experiments"),
        (experiment_reads, "source_files", "index_build.source_files"),
        (index_store, "index_parent", "index_store.index_parent"),
        (index_store, "read_meta", "index_store.read_meta"),
        (IndexCache, "get", "IndexCache.get"),
        (ParseWorker, "call", "ParseWorker.call"),
        (timeline, "query", "timeline.query"),
        (calltree, "to_json", "calltree.to_json"),
        (calltree, "from_index", "calltree.from_index"),
        (metric_series, "downsample", "metrics.downsample"),
        (metric_series, "from_trace", "metrics.from_trace"),
        (summary, "summarize", "summary.summarize"),
        (tools_mod, "scorep_status", "tools.scorep_status"),
        (tools_mod, "tool_paths", "tools.tool_paths"),
    ):
        spy(owner, attr, name)
    for attr in ("zip_stream", "file_stream", "perfetto_stream"):
        spy_stream(export, attr)
    return on_loop, off_loop, spied


async def test_blocking_work_runs_off_the_event_loop(api, jp_root_dir, on_which_thread):
    on_loop, off_loop, spied = on_which_thread
    root = Path(jp_root_dir) / "scorep-experiments"
    full = write_experiment(root / "full")  # trace, profile.cubex, metrics files
    bare = write_experiment(root / "bare", cubex=False)  # call tree and metrics from the trace
    (bare / ex.METRICS_SCHEMA).unlink()
    (bare / ex.METRICS_DATA).unlink()
    calls = [("version", {}), ("experiments", {}), ("experiments", {"dir": "."})]
    for exp in (full, bare):
        p = str(exp)
        calls += [
            ("experiment", {"path": p}),
            ("timeline", {"path": p, "width": 400}),
            ("calltree", {"path": p}),
            ("calltree", {"path": p, "location": 0}),
            ("metrics", {"path": p, "width": 50}),
            ("summary", {"path": p}),
        ]
    for what in ("otf2", "cubex", "perfetto"):
        calls.append(("download", {"path": str(full), "what": what, "raw": True}))
    for route, params in calls:
        code, body = await api(route, **params)
        assert code == 200, (route, params, body)
    assert not on_loop, f"blocking work ran on the event loop: {sorted(set(on_loop))}"
    # Every spied function was reached, so the check above covered it.
    assert spied <= off_loop, f"never called: {sorted(spied - off_loop)}"
