"""Concurrent first requests build an experiment's index once; a changed trace is
re-indexed; a stale index from another build is replaced atomically."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from experiment_factory import write_experiment

from jupyterlab_scorep.domain_errors import Unreadable
from jupyterlab_scorep.http.error_status import status_of
from jupyterlab_scorep.http.service import Service
from jupyterlab_scorep.trace.index_build import INDEX_NAME

pytestmark = pytest.mark.timeout(120)


def test_concurrent_first_requests_build_once(tmp_path):
    exp = write_experiment(tmp_path / "scorep-experiments" / "run")
    svc = Service(str(tmp_path), version="test")
    submitted = []
    real_in_worker = svc.reads.in_worker

    async def counting(what, fn, *args):
        submitted.append(fn.__name__)
        return await real_in_worker(what, fn, *args)

    svc.reads.in_worker = counting

    async def many():
        manifest = await svc.reads.manifest(exp)
        return await asyncio.gather(*(svc.reads.index(exp, manifest) for _ in range(8)))

    try:
        indexes = asyncio.run(many())
        assert submitted == ["ensure_index"]
        assert len({id(i) for i in indexes}) == 1  # one loaded index, shared
        assert sorted(p.name for p in (exp / ".index").iterdir()) == [".lock", INDEX_NAME]
        meta = json.loads((exp / ".index" / INDEX_NAME / "meta.json").read_text())
        # a second round finds the fresh index on disk: no new build
        asyncio.run(many())
        assert submitted == ["ensure_index"]
        # touching an event file makes the index stale: rebuilt once, and the new one is served
        evt = next((exp / "traces").glob("*.evt"))
        os.utime(evt, ns=(evt.stat().st_atime_ns, evt.stat().st_mtime_ns + 10**9))
        again = asyncio.run(many())
        assert submitted == ["ensure_index", "ensure_index"]
        assert again[0].meta["sources"] != meta["sources"]
        assert sorted(p.name for p in (exp / ".index").iterdir()) == [".lock", INDEX_NAME]
    finally:
        svc.shutdown()


def test_an_earlier_versions_index_is_removed_when_this_one_is_built(tmp_path):
    from jupyterlab_scorep.trace import index_store
    from jupyterlab_scorep.trace.index_build import INDEX_VERSION

    exp = write_experiment(tmp_path / "scorep-experiments" / "run")
    older = exp / ".index" / f"trace-v{INDEX_VERSION - 1}"
    newer = exp / ".index" / f"trace-v{INDEX_VERSION + 1}"
    for d in (older, newer):
        d.mkdir(parents=True)
        (d / "meta.json").write_text("{}")
    index_store.ensure_index(str(exp))
    names = sorted(p.name for p in (exp / ".index").iterdir())
    assert names == sorted([".lock", INDEX_NAME, newer.name])


def test_read_only_experiment_is_indexed_in_the_user_cache(tmp_path, monkeypatch):
    from jupyterlab_scorep.trace import index_store

    exp = write_experiment(tmp_path / "shared" / "run")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # (the tests run as root, for whom every directory is writable)
    monkeypatch.setattr(index_store.os, "access", lambda path, mode: False)
    directory = index_store.ensure_index(str(exp))
    assert directory.startswith(str(tmp_path / "cache" / "jupyterlab-scorep"))
    assert not (exp / ".index").exists()
    index = index_store.LoadedIndex(directory)
    assert index.meta["events"] == 20


def test_a_worker_crash_is_not_remembered_against_the_file(tmp_path):
    exp = write_experiment(tmp_path / "scorep-experiments" / "run")
    svc = Service(str(tmp_path), version="test")
    real_in_worker = svc.reads.in_worker
    crashes = [True]

    async def crash_once(what, fn, *args):
        if crashes and crashes.pop():
            # the worker dies mid-build, as libotf2 would on a segfault
            return await real_in_worker(what, os._exit, 3)  # os._exit in the worker
        return await real_in_worker(what, fn, *args)

    svc.reads.in_worker = crash_once

    async def run():
        manifest = await svc.reads.manifest(exp)
        with pytest.raises(Unreadable) as crashed:
            await svc.reads.index(exp, manifest)
        assert status_of(crashed.value) == 422 and crashed.value.transient
        # same files, yet a fresh worker builds the index: the crash was not remembered
        index = await svc.reads.index(exp, manifest)
        return index.meta["events"]

    try:
        assert asyncio.run(run()) == 20
    finally:
        svc.shutdown()


def test_a_request_that_saw_the_stale_index_during_a_build_does_not_build_again(tmp_path):
    """The interleaving behind a CI failure, forced with events (no timing): request B looks
    the index up and sees it stale; only then does request A's build start; B asks for a
    build only after A has finished and left the single flight. B must get A's index, not
    build a second one."""
    exp = write_experiment(tmp_path / "scorep-experiments" / "run")
    svc = Service(str(tmp_path), version="test")
    submitted = []
    real_in_worker, real_in_thread = svc.reads.in_worker, svc.reads.in_thread
    b_looked_up, a_done = asyncio.Event(), asyncio.Event()
    b_task: list[asyncio.Task] = []
    b_lookup = []

    async def counting(what, fn, *args):
        await b_looked_up.wait()  # A builds only once B has seen the index stale
        submitted.append(fn.__name__)
        return await real_in_worker(what, fn, *args)

    async def b_waits_for_a(fn, *args):
        result = await real_in_thread(fn, *args)
        if fn == svc.reads._lookup and asyncio.current_task() is b_task[0]:
            b_lookup.append(result)
            b_looked_up.set()
            await a_done.wait()  # B's answer ("stale") arrives after A is done
        return result

    svc.reads.in_worker = counting
    svc.reads.in_thread = b_waits_for_a

    async def a_then_b():
        manifest = await svc.reads.manifest(exp)

        async def a():
            index = await svc.reads.index(exp, manifest)
            a_done.set()
            return index

        b_task.append(asyncio.ensure_future(svc.reads.index(exp, manifest)))
        return await asyncio.gather(a(), b_task[0])

    try:
        first, second = asyncio.run(a_then_b())
        assert b_lookup[0][1] is None  # B saw no fresh index
        assert submitted == ["ensure_index"]
        assert first is second
    finally:
        svc.shutdown()


def test_a_window_computed_on_a_stale_index_is_answered_from_the_new_one(tmp_path):
    """``on_index`` starts on the index loaded last while it checks freshness: once an
    event file changed, that early answer is dropped and the rebuilt index answers."""
    exp = write_experiment(tmp_path / "scorep-experiments" / "run")
    svc = Service(str(tmp_path), version="test")
    seen = []

    def sources(index):
        seen.append(index)
        return index.meta["sources"]

    async def ask():
        manifest = await svc.reads.manifest(exp)
        return await svc.reads.on_index("the test", exp, manifest, sources)

    try:
        first = asyncio.run(ask())
        assert len(seen) == 1  # nothing loaded yet: no early run
        assert asyncio.run(ask()) == first and len(seen) == 2 and seen[1] is seen[0]
        evt = next((exp / "traces").glob("*.evt"))
        os.utime(evt, ns=(evt.stat().st_atime_ns, evt.stat().st_mtime_ns + 10**9))
        again = asyncio.run(ask())
        # the early run on the stale index, then the answer from the rebuilt one
        assert len(seen) == 4 and seen[2] is seen[0] and seen[3] is not seen[0]
        assert again != first and again == seen[3].meta["sources"]
        name = f"traces/{evt.name}"
        assert again[name][0] == first[name][0] + 10**9
    finally:
        svc.shutdown()
