"""What the handlers ask for, done off the event loop: parsing in a worker process (libotf2
or pycubexr on a damaged file may crash or hang; the server must not), lookups on loaded
indexes in threads. Every failure comes back as an ``ApiError`` with a 4xx status."""

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

from . import calltree, index_store
from .api_error import ApiError
from .index_build import source_files
from .index_store import IndexCache, LoadedIndex
from .otf2_read import TraceReadError
from .parse_worker import ParseWorker, WorkerCrashed, WorkerTimeout
from .paths import Roots, archive_files, experiment_file

log = logging.getLogger(__name__)


class Service:
    def __init__(
        self,
        server_root: str,
        experiment_roots=(),
        *,
        build_timeout: float = 600,
        cache_size: int = 8,
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
        self._failed: dict[tuple, tuple[Any, ApiError]] = {}
        # ("cubex", path) -> ((mtime_ns, size), CallTree), least recently used first
        self._profiles: OrderedDict[tuple, tuple[tuple, calltree.CallTree]] = OrderedDict()

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

    async def in_worker(self, what: str, fn: Callable, *args) -> Any:
        call = functools.partial(self._worker.call, fn, *args, timeout=self.build_timeout)
        # A crash may come from an earlier job's damage, and a stop from an overloaded
        # machine: transient, not remembered against the file, the next request tries again.
        try:
            return await asyncio.get_running_loop().run_in_executor(self._waiters, call)
        except WorkerCrashed:
            raise ApiError(
                422,
                f"the reader crashed on {what}: the file is damaged. Re-run "
                "the cell to record it again.",
                "Unreadable file",
                transient=True,
            ) from None
        except WorkerTimeout:
            raise ApiError(
                422,
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
        except ApiError as e:
            if e.status == 422 and not e.transient:
                self._failed[key] = (signature, e)
            raise
        self._failed.pop(key, None)
        return result

    # -- experiment parts ------------------------------------------------------------

    async def manifest(self, exp: Path) -> dict[str, Any]:
        try:
            return await self.in_thread(ex.read_manifest, exp)
        except ex.ExperimentError as e:
            raise ApiError(
                422,
                f"{e}. The kernel writes manifest.json; re-run the cell or remove the directory.",
                "Unreadable manifest",
            ) from None

    def trace_status(self, exp: Path, manifest: dict[str, Any]) -> None:
        """Raise unless the trace can be read now."""
        anchor = experiment_file(exp, ex.OTF2_ANCHOR)  # may refuse a symlink (403) first
        if manifest.get("files_status") == "pending":
            raise ApiError(
                409, "the trace is still being written; try again in a moment", "Not ready"
            )
        if anchor is None:
            raise ApiError(
                404,
                "this experiment has no OTF2 trace (traces.otf2): it was recorded without tracing",
                "No trace",
            )

    def _lookup(self, exp: Path):
        """``(signature, loaded index or None)``, in one trip to a thread: the archive's
        files' identity, and the index if one as fresh as them is loaded or on disk."""
        archive_files(exp)  # libotf2 follows symlinks: refuse files linking out (403)
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

    async def index(self, exp: Path, manifest: dict[str, Any]) -> LoadedIndex:
        self.trace_status(exp, manifest)
        try:
            signature, loaded = await self.in_thread(self._lookup, exp)
            if loaded is not None:
                return loaded
        except (OSError, ValueError, KeyError) as e:
            raise ApiError(
                422,
                f"the trace index of this experiment is unreadable ({e}); "
                "delete its .index folder to rebuild it",
                "Unreadable index",
            ) from None
        directory = await self._once(("index", str(exp)), signature, lambda: self._build(exp))
        try:
            return await self.in_thread(self.indexes.get, directory)
        except (OSError, ValueError, KeyError) as e:
            raise ApiError(
                422,
                f"the trace index of this experiment is unreadable ({e}); "
                f"delete {directory} to rebuild it",
                "Unreadable index",
            ) from None

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
            raise ApiError(422, f"the OTF2 trace cannot be read: {e}", "Unreadable trace") from None
        except OSError as e:
            raise ApiError(
                422, f"the OTF2 trace cannot be read or indexed: {e}", "Unreadable trace"
            ) from None
        except ApiError:
            raise
        except Exception as e:  # anything else a damaged file provokes in the reader
            log.exception("indexing %s failed", exp)
            raise ApiError(
                422, f"the OTF2 trace cannot be read ({type(e).__name__}: {e})", "Unreadable trace"
            ) from None

    @staticmethod
    def _fresh_index_dir(exp: Path) -> str | None:
        parent = index_store.index_parent(exp)
        if index_store.is_fresh(index_store.read_meta(parent), exp):
            return str(parent / index_store.INDEX_NAME)
        return None

    async def profile(self, exp: Path, manifest: dict[str, Any]) -> calltree.CallTree:
        """The call tree from profile.cubex, else from the trace."""
        cubex = experiment_file(exp, ex.CUBEX)
        if cubex is None or manifest.get("files_status") == "pending":
            index = await self.index(exp, manifest)
            return await self.in_thread(index.cached, "calltree", calltree.from_index)
        st = os.stat(cubex)
        signature = (st.st_mtime_ns, st.st_size)
        key = ("cubex", str(cubex))
        cached = self._profiles.get(key)
        if cached is not None and cached[0] == signature:
            self._profiles.move_to_end(key)
            return cached[1]

        async def parse():
            try:
                return await self.in_worker("profile.cubex", calltree.from_cubex, str(cubex))
            except calltree.ProfileReadError as e:
                raise ApiError(422, str(e), "Unreadable profile") from None
            except ApiError:
                raise
            except Exception as e:
                raise ApiError(
                    422,
                    f"profile.cubex cannot be read ({type(e).__name__}: {e})",
                    "Unreadable profile",
                ) from None

        tree = await self._once(key, signature, parse)
        self._profiles[key] = (signature, tree)
        while len(self._profiles) > 8:
            self._profiles.popitem(last=False)
        return tree

    async def metrics(self, exp: Path):
        """``(schema, t_ns, values)``, or None when the run has no metric samples."""
        if experiment_file(exp, ex.METRICS_SCHEMA) is None:
            return None
        experiment_file(exp, ex.METRICS_DATA)  # refuses a symlink out of the experiment
        try:
            return await self.in_thread(ex.read_metrics, exp)
        except ex.ExperimentError as e:
            raise ApiError(
                422, f"{e}. Re-run the cell to sample them again.", "Unreadable metrics"
            ) from None
