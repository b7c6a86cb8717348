"""Indexing a large trace happens off the event loop: the server answers other requests
while a first timeline request waits for its index."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(180)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


async def test_server_answers_while_a_trace_is_indexed(api, jp_root_dir):
    from _server_tracegen import write_experiment

    exp = write_experiment(Path(jp_root_dir) / "scorep-experiments" / "big", 400_000)
    started = time.perf_counter()
    timeline = asyncio.ensure_future(api("timeline", path=str(exp), width=800))
    quick = []
    while not timeline.done():
        t = time.perf_counter()
        code, _ = await api("version")
        assert code == 200
        quick.append(time.perf_counter() - t)
        await asyncio.sleep(0.05)
    code, body = await timeline
    total = time.perf_counter() - started
    assert code == 200 and body["locations"]
    assert len(quick) >= 3, f"indexing took {total:.2f} s; too short to observe"
    # each answer took a small fraction of the build, so the loop was never held
    assert max(quick) < total / 3
