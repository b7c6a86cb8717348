"""An experiment's parts as the routes read them, off the event loop: the manifest, the
trace index, the call tree, the metric samples. Parsing runs in one worker process
(libotf2 or pycubexr on a damaged file may crash or hang; the server must not), once for
concurrent requests, failures remembered until the files change; file access and lookups
on loaded indexes run in threads. Every failure comes back as a domain error
(``..domain_errors``; http/error_status.py gives its status code)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf

from ..analysis import metric_series
from ..domain_errors import NoTrace, NotReady, ScorePError, Unprocessable, Unreadable
from ..paths import Roots, experiment_file, refuse_links_out
from ..trace import calltree, index_store
from ..trace.calltree import CallTree
from ..trace.index_build import source_files
from ..trace.index_store import IndexCache, LoadedIndex
from ..trace.otf2_read import TraceReadError
from ..trace.parse_worker import ParseWorker, WorkerCrashed, WorkerTimeout
from . import tools

# the logger the server has always logged these under (its messages as before the split)
log = logging.getLogger("jupyterlab_scorep.http.service")

Samples = tuple[dict[str, Any], Any, Any]  # (schema, t_ns, values), as ex.read_metrics


def _quiet(future: asyncio.Future) -> None:
    """Take a discarded future's exception, so asyncio does not log it as never retrieved."""
    if not future.cancelled():
        future.exception()


class ExperimentReads:
    """Reads an experiment's parts for the routes (one object, held by ``Service``): the
    roots it may serve, the parse worker, the loaded indexes and the parsed profiles."""

    def __init__(
        self, server_root: str, experiment_roots=(), *, build_timeout: float, cache_size: int
    ):
        self.roots = Roots(server_root, experiment_roots)
        self.build_timeout = build_timeout
        self.indexes = IndexCache(cache_size)
        self._worker = ParseWorker()
        # Threads that wait on the worker, apart from the default pool that handlers use
        # for quick work, so queued parses never starve other requests.
        self._waiters = concurrent.futures.ThreadPoolExecutor(4, "scorep-worker-wait")
        self._inflight: dict[tuple, asyncio.Future] = {}
        # Failures keyed by the files' identity: a broken file is not re-parsed per request.
        self._failed: dict[tuple, tuple[Any, ScorePError]] = {}
        # ("cubex", path) -> ((mtime_ns, size), CallTree), least recently used first
        self._profiles: OrderedDict[tuple, tuple[tuple, CallTree]] = OrderedDict()

    # -- execution -------------------------------------------------------------------

    def warm_up(self) -> None:
        """Start the worker now, so the first profiled cell's timeline does not wait for
        its start-up and imports."""
        self._waiters.submit(self._worker.start)

    def shutdown(self) -> None:
        self._worker.stop()
        self._waiters.shutdown(wait=False, cancel_futures=True)

    async def in_thread(self, fn: Callable, *args) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args))

    async def compute(self, what: str, fn: Callable, *args) -> Any:
        """Run a pure function over a file's contents in a thread; whatever a damaged file
        makes it raise becomes ``Unreadable`` (a 422), never a 500."""
        try:
            return await self.in_thread(fn, *args)
        except ScorePError:
            raise
        except Exception as e:
            log.warning("scorep: %s failed: %s", what, e, exc_info=True)
            raise Unreadable(
                f"{what} failed on this experiment's files "
                f"({type(e).__name__}: {e}); they are damaged or of an "
                "unknown version",
                "Unreadable file",
            ) from None

    async def in_waiters(self, fn: Callable, *args) -> Any:
        """Run ``fn`` (a blocking call that waits on a child process: the worker,
        scorep-score) in the threads kept for waiting, not the default pool."""
        return await asyncio.get_running_loop().run_in_executor(
            self._waiters, functools.partial(fn, *args)
        )

    async def in_worker(self, what: str, fn: Callable, *args) -> Any:
        call = functools.partial(self._worker.call, fn, *args, timeout=self.build_timeout)
        # A crash may come from an earlier job's damage, and a stop from an overloaded
        # machine: transient, not remembered against the file, the next request tries again.
        try:
            return await asyncio.get_running_loop().run_in_executor(self._waiters, call)
        except WorkerCrashed:
            raise Unreadable(
                f"the reader crashed on {what}: the file is damaged. Re-run "
                "the cell to record it again.",
                "Unreadable file",
                transient=True,
            ) from None
        except WorkerTimeout:
            raise Unreadable(
                f"reading {what} took longer than {self.build_timeout:.0f} "
                "s and was stopped; raise c.ScorePExtension.build_timeout "
                "for very large traces",
                "Unreadable file",
                transient=True,
            ) from None

    async def _once(self, key: tuple, signature: Any, make: Callable) -> Any:
        """Run ``make()`` once for concurrent callers with the same key; remember failures
        until the files (``signature``) change."""
        failed = self._failed.get(key)
        if failed is not None and failed[0] == signature:
            raise failed[1]
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(make())
            self._inflight[key] = task
            task.add_done_callback(lambda _t: self._inflight.pop(key, None))
        try:
            result = await asyncio.shield(task)
        except ScorePError as e:
            if isinstance(e, Unprocessable) and not e.transient:
                self._failed[key] = (signature, e)
            raise
        self._failed.pop(key, None)
        return result

    async def once_kept(
        self, cache: OrderedDict, key: tuple, signature: Any, make: Callable
    ) -> Any:
        """``_once``, its result kept in ``cache`` (the 8 used last) while the files
        (``signature``) stay as they are."""
        cached = cache.get(key)
        if cached is not None and cached[0] == signature:
            cache.move_to_end(key)
            return cached[1]
        value = await self._once(key, signature, make)
        cache[key] = (signature, value)
        while len(cache) > 8:
            cache.popitem(last=False)
        return value

    # -- experiment parts ------------------------------------------------------------

    async def open(self, path: str | None) -> tuple[Path, mf.Manifest]:
        """The experiment a ``path`` parameter names, if it may be served, and its
        manifest (one trip to a thread: both touch the file system). The manifest is read
        again on every request, each timeline window included: it is small, and a run
        still being written changes it (files_status)."""
        exp = await self.in_thread(self.roots.experiment, path)
        return exp, await self.manifest(exp)

    async def manifest(self, exp: Path) -> mf.Manifest:
        try:
            return await self.in_thread(mf.read_manifest, exp)
        except ex.ExperimentError as e:
            raise Unreadable(
                f"{e}. The kernel writes manifest.json; re-run the cell or remove the directory.",
                "Unreadable manifest",
            ) from None

    @staticmethod
    def available(exp: Path) -> tuple[dict[str, bool], dict[str, str | None]]:
        """Which of the experiment's files exist, and the viewers on PATH."""
        available = {
            "otf2": experiment_file(exp, ex.OTF2_ANCHOR) is not None,
            "cubex": experiment_file(exp, ex.CUBEX) is not None,
            "metrics": experiment_file(exp, ex.METRICS_SCHEMA) is not None
            and experiment_file(exp, ex.METRICS_DATA) is not None,
        }
        return available, tools.tool_paths()

    def trace_status(self, exp: Path, manifest: mf.Manifest) -> None:
        """Raise unless the trace can be read now (touches the file system)."""
        anchor = experiment_file(exp, ex.OTF2_ANCHOR)  # may refuse a symlink (403) first
        if manifest.get("files_status") == mf.FILES_PENDING:
            raise NotReady("the trace is still being written; try again in a moment", "Not ready")
        if anchor is None:
            raise NoTrace(
                "this experiment has no OTF2 trace (traces.otf2): it was recorded without tracing",
                "No trace",
            )

    def _lookup(self, exp: Path, manifest: mf.Manifest):
        """``(signature, loaded index or None)``, in one trip to a thread: whether the trace
        may be read, the archive's files' identity, and the index if one as fresh as them
        is loaded or on disk."""
        self.trace_status(exp, manifest)
        refuse_links_out(exp)  # libotf2 follows symlinks: refuse files linking out (403)
        signature = source_files(exp)
        parent = index_store.index_parent(exp)
        directory = str(parent / index_store.INDEX_NAME)
        loaded = self.indexes.peek(directory)
        if loaded is not None and loaded.meta.get("sources") == signature:
            return signature, loaded
        meta = index_store.read_meta(parent)
        if meta is not None and meta.get("sources") == signature:
            return signature, self.indexes.get(directory)
        return signature, None

    async def index(self, exp: Path, manifest: mf.Manifest) -> LoadedIndex:
        try:
            signature, loaded = await self.in_thread(self._lookup, exp, manifest)
            if loaded is not None:
                return loaded
        except (OSError, ValueError, KeyError) as e:
            raise Unreadable(
                f"the trace index of this experiment is unreadable ({e}); "
                f"delete its {ex.INDEX_DIR} folder to rebuild it",
                "Unreadable index",
            ) from None
        directory = await self._once(("index", str(exp)), signature, lambda: self._build(exp))
        try:
            return await self.in_thread(self.indexes.get, directory)
        except (OSError, ValueError, KeyError) as e:
            raise Unreadable(
                f"the trace index of this experiment is unreadable ({e}); "
                f"delete {directory} to rebuild it",
                "Unreadable index",
            ) from None

    async def on_index(self, what: str, exp: Path, manifest: mf.Manifest, fn: Callable) -> Any:
        """``fn(index)`` (as ``compute``) on the experiment's fresh index. Whether the index
        is fresh takes a stat of every archive file (~10 ms for 1,024 ranks' files, on every
        timeline window); meanwhile ``fn`` already runs on the index loaded last, and its
        answer stands when that index is the fresh one; else (the archive changed, or it
        raised) ``fn`` runs again on the fresh one."""
        early = asyncio.ensure_future(self.in_thread(self._on_loaded, exp, fn))
        try:
            index = await self.index(exp, manifest)
        except BaseException:
            early.add_done_callback(_quiet)  # its answer is not wanted
            raise
        guess, answer, failed = await early
        if guess is index and not failed:
            return answer
        return await self.compute(what, fn, index)

    def _on_loaded(self, exp: Path, fn: Callable) -> tuple[LoadedIndex | None, Any, bool]:
        """``(index loaded last, fn(it), whether fn raised)``; (None, None, False) if none."""
        directory = str(index_store.index_parent(exp) / index_store.INDEX_NAME)
        guess = self.indexes.peek(directory)
        if guess is None:
            return None, None, False
        try:
            return guess, fn(guess), False
        except Exception:  # told again by the run on the fresh index, if it still fails
            return guess, None, True

    async def _build(self, exp: Path) -> str:
        """Build the index unless it is fresh on disk by now. The check repeats here, inside
        the single flight: a request whose lookup ran while another request's build was
        finishing saw a stale index, but joins too late to share that build; it must find
        the new index, not build it a second time."""
        try:
            directory = await self.in_thread(self._fresh_index_dir, exp)
        except OSError:
            directory = None
        if directory is not None:
            return directory
        try:
            return await self.in_worker("the OTF2 trace", index_store.ensure_index, str(exp))
        except TraceReadError as e:
            raise Unreadable(f"the OTF2 trace cannot be read: {e}", "Unreadable trace") from None
        except OSError as e:
            raise Unreadable(
                f"the OTF2 trace cannot be read or indexed: {e}", "Unreadable trace"
            ) from None
        except ScorePError:
            raise
        except Exception as e:  # anything else a damaged file provokes in the reader
            log.exception("indexing %s failed", exp)
            raise Unreadable(
                f"the OTF2 trace cannot be read ({type(e).__name__}: {e})", "Unreadable trace"
            ) from None

    @staticmethod
    def _fresh_index_dir(exp: Path) -> str | None:
        parent = index_store.index_parent(exp)
        if index_store.is_fresh(index_store.read_meta(parent), exp):
            return str(parent / index_store.INDEX_NAME)
        return None

    @staticmethod
    def cubex_identity(exp: Path) -> tuple[Path, tuple[int, int]] | None:
        """profile.cubex's real path and (mtime_ns, size), or None without one."""
        cubex = experiment_file(exp, ex.CUBEX)
        if cubex is None:
            return None
        st = os.stat(cubex)
        return cubex, (st.st_mtime_ns, st.st_size)

    def forget(self, exp: Path) -> None:
        """Drop what is kept of the experiment at ``exp`` (deleted): its parsed profiles."""
        for key in [k for k in self._profiles if str(k[1]).startswith(f"{exp}{os.sep}")]:
            del self._profiles[key]

    async def profile(self, exp: Path, manifest: mf.Manifest) -> CallTree:
        """The call tree from profile.cubex, else from the trace."""
        found = await self.in_thread(self.cubex_identity, exp)
        if found is None or manifest.get("files_status") == mf.FILES_PENDING:
            index = await self.index(exp, manifest)
            return await self.in_thread(index.cached, "calltree", calltree.from_index)
        cubex, signature = found

        async def parse():
            try:
                return await self.in_worker("profile.cubex", calltree.from_cubex, str(cubex))
            except calltree.ProfileReadError as e:
                raise Unreadable(str(e), "Unreadable profile") from None
            except ScorePError:
                raise
            except Exception as e:
                raise Unreadable(
                    f"profile.cubex cannot be read ({type(e).__name__}: {e})",
                    "Unreadable profile",
                ) from None

        return await self.once_kept(self._profiles, ("cubex", str(cubex)), signature, parse)

    @staticmethod
    def _read_metric_samples(exp: Path) -> Samples | None:
        if experiment_file(exp, ex.METRICS_SCHEMA) is None:
            return None
        experiment_file(exp, ex.METRICS_DATA)  # refuses a symlink out of the experiment
        try:
            return ex.read_metrics(exp)
        except ex.ExperimentError as e:
            raise Unreadable(
                f"{e}. Re-run the cell to sample them again.", "Unreadable metrics"
            ) from None

    async def metric_samples(self, exp: Path) -> Samples | None:
        """``(schema, t_ns, values)`` of metrics.json + .npz, or None when the run has
        none."""
        return await self.in_thread(self._read_metric_samples, exp)

    async def trace_metric_samples(self, exp: Path, manifest: mf.Manifest) -> Samples | None:
        """The trace's metric events as samples (times already relative to the run's
        start), or None without a trace or without metric events in it."""
        if await self.in_thread(experiment_file, exp, ex.OTF2_ANCHOR) is None:
            return None
        index = await self.index(exp, manifest)
        return await self.compute(
            "reading the trace's metric events", index.cached, "metrics", metric_series.from_trace
        )

    async def origin(self, exp: Path, manifest: mf.Manifest) -> int:
        """The epoch ns that response times count from: the trace's start (OTF2 global
        offset) when there is a readable trace that carries the wall clock; for one that
        does not (Score-P's: it starts at the first cell's region), when the kernel saw
        that region begin (the first cell's start_ns); else the manifest's start."""
        if await self.in_thread(experiment_file, exp, ex.OTF2_ANCHOR) is not None:
            try:
                index = await self.index(exp, manifest)
                if index.meta.get("origin_epoch_ns"):
                    return int(index.meta["origin_epoch_ns"])
            except ScorePError:
                pass
        cells = manifest.get("cells")
        first = cells[0] if isinstance(cells, list) and cells and isinstance(cells[0], dict) else {}
        if isinstance(first.get("start_ns"), int) and manifest.get("backend") == "scorep":
            return int(first["start_ns"])
        return int(manifest.get("start_ns") or 0)
