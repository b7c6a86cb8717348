"""The server's core: one method per route (``describe``, ``timeline``, ``calltree``,
``metrics``, ``summary`` ...), called by the thin handlers in ``routes``, which only parse
parameters and write the answer as JSON. The contract is docs/API.md.

Below the route methods, work is done off the event loop: parsing in a worker process
(libotf2 or pycubexr on a damaged file may crash or hang; the server must not), file
access and lookups on loaded indexes in threads. Every failure comes back as an
``ApiError`` with a 4xx status."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scorep_kernel import experiment as ex

from . import (
    calltree,
    compare,
    compare_json,
    compare_noise,
    compare_verdict,
    export,
    history,
    index_store,
    metric_series,
    ranks,
    scorep_score,
    summary,
    timeline,
    tools,
)
from .api_error import ApiError
from .calltree import CallTree
from .index_build import source_files
from .index_store import IndexCache, LoadedIndex
from .otf2_read import TraceReadError
from .parse_worker import ParseWorker, WorkerCrashed, WorkerTimeout
from .paths import Roots, archive_files, experiment_file, list_experiments

log = logging.getLogger(__name__)

Samples = tuple[dict[str, Any], Any, Any]  # (schema, t_ns, values), as ex.read_metrics
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class Download:
    """A download to stream: its chunks (read in a thread, one ``next`` at a time), the
    file name the browser saves it under, its content type and, when known, its length."""

    chunks: Generator[bytes, None, None]
    filename: str
    content_type: str
    length: int | None = None


def _scorep_config(manifest: dict[str, Any]) -> dict[str, str]:
    """The SCOREP_* settings of a run: Score-P's own record (scorep.cfg, in the manifest's
    measurement) over the environment the kernel gave it."""
    measurement = manifest.get("measurement")
    written = measurement.get("scorep_config") if isinstance(measurement, dict) else None
    env = manifest.get("scorep_env")
    out = {k: str(v) for k, v in env.items()} if isinstance(env, dict) else {}
    if isinstance(written, dict):
        out.update({k: str(v) for k, v in written.items()})
    return out


def resolve_window(full: list[int], t0: int | None, t1: int | None) -> tuple[int, int]:
    """The timeline window: the trace's ``full`` range where a bound is not given; an
    empty window is refused, except for an empty trace (a one-nanosecond window)."""
    t0 = full[0] if t0 is None else t0
    t1 = full[1] if t1 is None else t1
    if t1 <= t0:
        if t1 == t0 == full[0] == full[1]:
            return t0, t0 + 1
        raise ApiError(400, f"the window [t0={t0}, t1={t1}] is empty: t1 must exceed t0")
    return t0, t1


class Service:
    def __init__(
        self,
        server_root: str,
        experiment_roots=(),
        *,
        build_timeout: float = 600,
        cache_size: int = 8,
        filter_heuristics: str = scorep_score.HEURISTICS,
    ):
        self.roots = Roots(server_root, experiment_roots)
        # what scorep-score -g filters (ScorePExtension.filter_heuristics): a bad value is
        # said in the log and Score-P's defaults used, rather than no extension at all
        try:
            self.filter_heuristics = scorep_score.check_heuristics(filter_heuristics)
        except ValueError as e:
            log.warning(
                "scorep: ScorePExtension.filter_heuristics=%r: %s; using scorep-score's "
                "defaults (%s)",
                filter_heuristics,
                e,
                scorep_score.HEURISTICS,
            )
            self.filter_heuristics = scorep_score.HEURISTICS
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
        self._profiles: OrderedDict[tuple, tuple[tuple, CallTree]] = OrderedDict()
        # ("score", cubex path) -> ((mtime_ns, size), scorep-score's report), LRU
        self._scores: OrderedDict[tuple, tuple[tuple, dict[str, Any]]] = OrderedDict()
        # (id(tree a), id(tree b), noise) -> (tree a, tree b, GET compare's comparison part);
        # the trees are held so that their ids stay theirs while the entry lives
        self._comparisons: OrderedDict[tuple, tuple[CallTree, CallTree, dict]] = OrderedDict()

    # -- routes (docs/API.md) ----------------------------------------------------------

    async def version(self) -> dict[str, Any]:
        from . import __version__

        status, paths = await self.in_thread(lambda: (tools.scorep_status(), tools.tool_paths()))
        return {"version": __version__, "scorep": status, "tools": paths}

    async def experiments(
        self, directory: str | None, notebook: str | None = None, cell: str | None = None
    ) -> dict[str, Any]:
        """The experiments under ``directory`` (relative to the server root), or under the
        server root and each configured experiment root. With ``notebook`` and/or ``cell``:
        that notebook's (cell's) runs, with their disk use (``history.runs``)."""
        if notebook or cell:
            return await self.in_thread(self._runs, directory, notebook or None, cell or None)
        found = await self.in_thread(self._list, directory)
        return {"experiments": [{"path": str(p), "manifest": m} for p, m in found]}

    def _runs(self, directory: str | None, notebook: str | None, cell: str | None):
        given = self.roots.resolve(directory, "dir") if directory else None
        parents = history.parents_for(self.roots, notebook, given)
        return history.runs(self.roots, parents, notebook, cell)

    async def compare(self, a: str | None, b: str | None) -> dict[str, Any]:
        """GET compare: run ``b`` against run ``a`` (the baseline; Δ = b - a), functions
        and call paths matched by name (``compare``), with the facts of both runs and
        where their cells begin (to align their timelines)."""
        if not a or not b:
            raise ApiError(400, "pass both runs to compare: a=<baseline path>&b=<path>")
        (exp_a, man_a), (exp_b, man_b) = await asyncio.gather(self.open(a), self.open(b))
        for man in (man_a, man_b):
            if man.get("files_status") == ex.FILES_PENDING:
                raise ApiError(
                    409, f"{man['id']} is still being written; try again in a moment", "Not ready"
                )
        (tree_a, facts_a), (tree_b, facts_b) = await self._compare_sides(
            (exp_a, man_a), (exp_b, man_b)
        )
        walls = await self.in_thread(history.same_source_walls, self.roots, exp_a, man_a)
        noise = compare_noise.noise_from_runs(walls)
        key = (id(tree_a), id(tree_b), noise)
        cached = self._comparisons.get(key)
        if cached is not None:
            self._comparisons.move_to_end(key)
            body = cached[2]
        else:

            def run() -> dict[str, Any]:
                c = compare.compare_trees(tree_a, tree_b, noise)
                return compare_json.comparison_json(c, compare_verdict.verdict(c))

            body = await self.compute("comparing the runs", run)
            self._comparisons[key] = (tree_a, tree_b, body)
            while len(self._comparisons) > 8:
                self._comparisons.popitem(last=False)
        same = [c.get("source_sha256") for c in man_a.get("cells") or []] == [
            c.get("source_sha256") for c in man_b.get("cells") or []
        ]
        return {"a": facts_a, "b": facts_b, "same_source": same, **body}

    async def _compare_sides(self, *sides: tuple[Path, dict[str, Any]]):
        """Each run's call tree and facts, both runs at once. Both trees come from the
        trace indexes when both runs have a trace (built once, memory-mapped: fast, and one
        source for both), else each from its profile (profile.cubex, else the trace)."""
        available = [await self.in_thread(self._available, exp) for exp, _m in sides]
        use_trace = all(av["otf2"] for av, _tools in available)

        async def side(exp: Path, manifest: dict[str, Any], av: dict[str, bool]):
            index = None
            if av["otf2"]:
                try:
                    index = await self.index(exp, manifest)
                except ApiError:
                    if use_trace:
                        raise
            if use_trace and index is not None:
                tree = await self.in_thread(index.cached, "calltree", calltree.from_index)
            else:
                tree = await self.profile(exp, manifest)
            span = None
            if index is not None:
                span = await self.compute(
                    "finding the cell in the trace", index.cached, "cell_span", history.cell_span
                )
            cells = [
                {k: c.get(k) for k in ("cell_id", "execution_count", "source_sha256")}
                for c in manifest.get("cells") or []
                if isinstance(c, dict)
            ]
            facts = {
                "path": str(exp),
                "id": manifest["id"],
                "backend": manifest.get("backend"),
                "isolation": manifest.get("isolation"),
                "status": manifest.get("status"),
                "start_ns": manifest.get("start_ns"),
                "wall_s": manifest.get("wall_s"),
                "notebook": manifest.get("notebook"),
                "cells": cells,
                "source": tree.source,
                "range": index.meta["range"] if index is not None else None,
                "cell_span": span,
                "metrics": av["metrics"],
            }
            return tree, facts

        return await asyncio.gather(
            *(side(exp, m, av) for (exp, m), (av, _tools) in zip(sides, available))
        )

    async def delete(self, path: str | None, expected_id: str | None) -> dict[str, Any]:
        """DELETE experiment: remove one experiment directory, asked for by path and
        confirmed by its id; refused for anything else (``history.deletable``)."""
        exp, manifest = await self.open(path)
        await self.in_thread(history.deletable, self.roots, exp, manifest, expected_id)
        try:
            freed = await self.in_thread(history.delete, exp)
        except OSError as e:
            raise ApiError(
                422, f"the experiment could not be deleted completely: {e}", "Not deleted"
            ) from None
        for key in [k for k in self._profiles if str(k[1]).startswith(f"{exp}{os.sep}")]:
            del self._profiles[key]
        return {"deleted": str(exp), "id": manifest["id"], "freed_bytes": freed}

    def _list(self, directory: str | None) -> list[tuple[str, dict[str, Any]]]:
        roots = self.roots
        parents: list[str | Path]
        if directory:
            given = roots.resolve(directory, "dir")
            parents = [given / ex.DEFAULT_PARENT, given]
        else:
            parents = [*(f"{p}/{ex.DEFAULT_PARENT}" for p in roots.all), *roots.extra]
        return list_experiments(roots, parents)

    async def describe(self, path: str | None) -> dict[str, Any]:
        """GET experiment: the manifest, which files there are, and the trace's outline."""
        exp, manifest = await self.open(path)
        available, tool_paths = await self.in_thread(self._available, exp)
        body: dict[str, Any] = {
            "path": str(exp),
            "manifest": manifest,
            "available": available,
            "tools": {k: v is not None for k, v in tool_paths.items()},
            "trace": None,
        }
        if not available["otf2"] or manifest.get("files_status") == ex.FILES_PENDING:
            return body
        try:
            index = await self.index(exp, manifest)
        except ApiError as e:
            if e.status != 422:
                raise
            body["trace_error"] = e.message
            return body
        meta = index.meta
        body["trace"] = {
            "range": meta["range"],
            "origin_epoch_ns": meta["origin_epoch_ns"],
            "events": meta["events"],
            "locations": [
                {k: loc[k] for k in ("id", "name", "group", "kind", "max_depth")}
                for loc in index.locations
            ],
            "notes": meta.get("notes", []),
        }
        return body

    async def timeline(
        self, path: str | None, t0: int | None, t1: int | None, width: int
    ) -> dict[str, Any]:
        exp, manifest = await self.open(path)
        index = await self.index(exp, manifest)
        t0, t1 = resolve_window(index.meta["range"], t0, t1)
        return await self.compute("the timeline query", timeline.query, index, t0, t1, width)

    async def calltree(self, path: str | None, location: int | None) -> dict[str, Any]:
        exp, manifest = await self.open(path)
        tree = await self.profile(exp, manifest)
        if location is not None:
            if not tree.locations:
                raise ApiError(400, "this profile has no locations")
            last = len(tree.locations) - 1
            if not 0 <= location <= last:
                raise ApiError(400, f"location={location} is out of range [0, {last}]")
        return await self.compute(
            "building the call tree", calltree.to_json, tree, location, manifest["id"]
        )

    async def metrics(
        self, path: str | None, t0: int | None, t1: int | None, width: int
    ) -> dict[str, Any]:
        """The metric samples of metrics.json + .npz and the trace's metric events (those
        the samples lack: Score-P's rusage, PAPI or plugin metrics), bucketed to ``width``;
        times relative to the run's start."""
        exp, manifest = await self.open(path)
        if t0 is not None and t1 is not None and t1 <= t0:
            raise ApiError(400, f"the window [t0={t0}, t1={t1}] is empty")
        samples = await self.metric_samples(exp)
        try:
            traced = await self.trace_metric_samples(exp, manifest)
        except ApiError:
            if samples is None:
                raise
            traced = None  # the samples stand without the trace (pending, unreadable)
        if samples is not None:
            origin = await self.origin(exp, manifest)
            if traced is not None:
                schema, t_ns, values = samples
                relative = (schema, t_ns - origin, values)
                samples = await self.compute(
                    "merging the trace's metrics", metric_series.merge, relative, traced
                )
                origin = 0
        else:
            samples, origin = traced, 0
        if samples is None:
            raise ApiError(
                404,
                "this experiment has no metric samples (no metrics.json + "
                "metrics.npz, no metric events in the trace): system "
                "metrics were off for the run",
                "No metrics",
            )
        return await self.compute(
            "bucketing the metric samples",
            metric_series.downsample,
            *samples,
            origin,
            t0,
            t1,
            width,
        )

    async def summary(self, path: str | None) -> dict[str, Any]:
        """Wall time, top regions and verdicts from whatever parts can be read; the parts
        that cannot become notes (only "not ready yet" fails the whole answer)."""
        exp, manifest = await self.open(path)
        tree, events, notes = None, None, []
        try:
            tree = await self.profile(exp, manifest)
        except ApiError as e:
            if e.status == 409:
                raise
            notes.append(f"No call tree: {e.message}")
        if await self.in_thread(experiment_file, exp, ex.OTF2_ANCHOR) is not None:
            try:
                index = await self.index(exp, manifest)
                events = index.meta["events"]
                notes += index.meta.get("notes", [])
            except ApiError as e:
                if e.status == 409:
                    raise
                notes.append(f"No trace: {e.message}")
        try:
            samples = await self.metric_samples(exp)
        except ApiError as e:
            samples = None
            notes.append(f"No metrics: {e.message}")
        body = await self.compute(
            "summarising",
            lambda: summary.summarize(manifest, tree, samples, events=events, trace_notes=notes),
        )
        if events is not None:  # an MPI run's imbalance and communication share (ranks.py)
            body["verdicts"] += await ranks.summary_verdicts(self, exp, manifest)
        return body

    async def ranks(self, path: str | None) -> dict[str, Any]:
        """GET ranks: an MPI run's processes and their communication (ranks.py)."""
        return await ranks.answer(self, path)

    async def download(self, path: str | None, what: str | None) -> Download:
        """What to stream for ``what`` = otf2 (a .zip), cubex or perfetto."""
        exp, manifest = await self.open(path)
        stem = _SAFE_NAME.sub("_", manifest["id"]) or "experiment"
        if what == "otf2":
            files = await self.in_thread(archive_files, exp)
            if not any(name == ex.OTF2_ANCHOR for name, _ in files):
                raise ApiError(404, "this experiment has no OTF2 trace to download")
            return Download(export.zip_stream(files, stem), f"{stem}-otf2.zip", "application/zip")
        if what == "cubex":
            cubex = await self.in_thread(self._cubex_identity, exp)
            if cubex is None:
                raise ApiError(404, "this experiment has no profile.cubex to download")
            file, (_mtime, size) = cubex
            return Download(export.file_stream(file), f"{stem}.cubex", "application/x-tar", size)
        if what == "perfetto":
            index = await self.index(exp, manifest)
            return Download(
                export.perfetto_stream(index, manifest["id"]),
                f"{stem}.perfetto.json",
                "application/json",
            )
        raise ApiError(400, f"what={what!r}: choose otf2, cubex or perfetto")

    async def open_tool(self, path: str | None, tool: str | None) -> dict[str, Any]:
        exp, _manifest = await self.open(path)
        if tool not in tools.TOOL_FILES:
            raise ApiError(400, f"tool={tool!r}: choose vampir or cube")
        name = tools.TOOL_FILES[tool]
        target = await self.in_thread(experiment_file, exp, name)
        if target is None:
            raise ApiError(404, f"this experiment has no {name} to open in {tool}")
        pid = await self.in_thread(tools.open_in_tool, tool, exp, target)
        return {"pid": pid}

    async def score(self, path: str | None) -> dict[str, Any]:
        """GET score: Score-P's estimate of the run (scorep-score on its profile.cubex) and
        the filter it suggests for the next run, with the configuration the run had and
        the filter already applied from it, if any."""
        exp, manifest = await self.open(path)
        report = await self._score_report(exp, manifest)
        config = _scorep_config(manifest)
        target = await self.in_thread(self._filter_target, exp, manifest, False)
        return {
            **report,
            "heuristics": self.filter_heuristics,
            "tool": await self.in_thread(scorep_score.executable),
            "configured": {
                k: config.get(k) for k in ("SCOREP_TOTAL_MEMORY", "SCOREP_FILTERING_FILE")
            },
            "applied": str(target) if target is not None and target.is_file() else None,
        }

    async def apply_filter(self, path: str | None) -> dict[str, Any]:
        """POST filter: write the suggested filter (with the rules of the filter the run
        used) into ``scorep-filters/`` beside the experiments, for the cell's next run."""
        exp, manifest = await self.open(path)
        target = await self.in_thread(self._filter_target, exp, manifest, True)
        report = await self._score_report(exp, manifest)
        suggestion = report["filter"]
        if suggestion is None:
            raise ApiError(
                404,
                "Score-P's heuristics select no region of this run (none with "
                f"{scorep_score.describe_heuristics(self.filter_heuristics)}): there is "
                "nothing to filter",
                "Nothing to filter",
            )
        return await self.in_thread(self._write_filter, target, manifest, suggestion)

    async def _score_report(self, exp: Path, manifest: dict[str, Any]) -> dict[str, Any]:
        if manifest.get("files_status") == ex.FILES_PENDING:
            raise ApiError(409, "the profile is still being written; try again in a moment")
        found = await self.in_thread(self._cubex_identity, exp)
        if found is None:
            raise ApiError(
                404,
                "this experiment has no profile.cubex, which scorep-score reads: the run "
                "was measured with profiling off (SCOREP_ENABLE_PROFILING=false)",
                "No profile",
            )
        if await self.in_thread(scorep_score.executable) is None:
            raise ApiError(
                404,
                "scorep-score is not on the server's PATH: put Score-P's bin/ on it (it "
                "comes with Score-P) to see Score-P's estimate of this run",
                "Tool not found",
            )
        cubex, signature = found
        key = ("score", str(cubex))
        cached = self._scores.get(key)
        if cached is not None and cached[0] == signature:
            self._scores.move_to_end(key)
            return cached[1]

        async def run() -> dict[str, Any]:
            loop = asyncio.get_running_loop()
            try:
                return await loop.run_in_executor(
                    self._waiters,
                    scorep_score.report,
                    cubex,
                    self.build_timeout,
                    self.filter_heuristics,
                )
            except scorep_score.ScoreError as e:
                raise ApiError(422, str(e), "scorep-score failed") from None

        report = await self._once(key, signature, run)
        self._scores[key] = (signature, report)
        while len(self._scores) > 8:
            self._scores.popitem(last=False)
        return report

    def _filter_target(self, exp: Path, manifest: dict[str, Any], check: bool) -> Path | None:
        """``scorep-filters/<id>.filter`` beside the experiments (else beside the
        experiment) where that lies inside the roots; None (or 403 with ``check``)
        when neither does."""
        name = (_SAFE_NAME.sub("_", manifest["id"]) or "experiment") + scorep_score.FILTER_SUFFIX
        for directory in (scorep_score.filter_dir(exp), exp.parent / scorep_score.FILTER_DIR):
            if self.roots.allowed(os.path.realpath(directory)):
                return Path(os.path.realpath(directory)) / name
        if check:
            raise ApiError(
                403,
                f"the filter's folder ({scorep_score.FILTER_DIR}/ beside the experiments) "
                "lies outside the server root and the experiment roots",
                "Outside the roots",
            )
        return None

    def _write_filter(
        self, target: Path, manifest: dict[str, Any], suggestion: dict[str, Any]
    ) -> dict[str, Any]:
        previous = self._previous_filter(manifest)
        text = scorep_score.filter_text(
            manifest, suggestion["text"], previous, self.filter_heuristics
        )
        try:
            written = scorep_score.write_filter(target.parent, target.name, text)
        except OSError as e:
            raise ApiError(
                403,
                f"the filter file cannot be written to {target.parent} "
                f"({e.strerror or type(e).__name__}); make that folder writable",
                "Not writable",
            ) from None
        root = Path(self.roots.server_root)
        return {
            "path": str(written),
            # relative to the server root (as the notebook's path is), when inside it
            "root_path": str(written.relative_to(root)) if written.is_relative_to(root) else None,
            "regions": [r["name"] for r in suggestion["regions"]],
            "merged": previous[0] if previous is not None else None,
        }

    def _previous_filter(self, manifest: dict[str, Any]) -> tuple[str, str] | None:
        """The filter file the run used, when it lies inside the roots and reads as one."""
        used = _scorep_config(manifest).get("SCOREP_FILTERING_FILE")
        if not used:
            return None
        real = os.path.realpath(used)
        if not self.roots.allowed(real):
            return None
        try:
            with open(real, encoding="utf-8", errors="replace") as f:
                text = f.read(scorep_score.MAX_PREVIOUS_BYTES + 1)
        except OSError:
            return None
        if len(text) > scorep_score.MAX_PREVIOUS_BYTES or not scorep_score.looks_like_filter(text):
            return None
        return used, text

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
        makes it raise becomes a 422, never a 500."""
        try:
            return await self.in_thread(fn, *args)
        except ApiError:
            raise
        except Exception as e:
            log.warning("scorep: %s failed: %s", what, e, exc_info=True)
            raise ApiError(
                422,
                f"{what} failed on this experiment's files "
                f"({type(e).__name__}: {e}); they are damaged or of an "
                "unknown version",
                "Unreadable file",
            ) from None

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

    async def open(self, path: str | None) -> tuple[Path, dict[str, Any]]:
        """The experiment a ``path`` parameter names, if it may be served, and its
        manifest (one trip to a thread: both touch the file system)."""
        exp = await self.in_thread(self.roots.experiment, path)
        return exp, await self.manifest(exp)

    async def manifest(self, exp: Path) -> dict[str, Any]:
        try:
            return await self.in_thread(ex.read_manifest, exp)
        except ex.ExperimentError as e:
            raise ApiError(
                422,
                f"{e}. The kernel writes manifest.json; re-run the cell or remove the directory.",
                "Unreadable manifest",
            ) from None

    @staticmethod
    def _available(exp: Path) -> tuple[dict[str, bool], dict[str, str | None]]:
        """Which of the experiment's files exist, and the viewers on PATH."""
        available = {
            "otf2": experiment_file(exp, ex.OTF2_ANCHOR) is not None,
            "cubex": experiment_file(exp, ex.CUBEX) is not None,
            "metrics": experiment_file(exp, ex.METRICS_SCHEMA) is not None
            and experiment_file(exp, ex.METRICS_DATA) is not None,
        }
        return available, tools.tool_paths()

    def trace_status(self, exp: Path, manifest: dict[str, Any]) -> None:
        """Raise unless the trace can be read now (touches the file system)."""
        anchor = experiment_file(exp, ex.OTF2_ANCHOR)  # may refuse a symlink (403) first
        if manifest.get("files_status") == ex.FILES_PENDING:
            raise ApiError(
                409, "the trace is still being written; try again in a moment", "Not ready"
            )
        if anchor is None:
            raise ApiError(
                404,
                "this experiment has no OTF2 trace (traces.otf2): it was recorded without tracing",
                "No trace",
            )

    def _lookup(self, exp: Path, manifest: dict[str, Any]):
        """``(signature, loaded index or None)``, in one trip to a thread: whether the trace
        may be read, the archive's files' identity, and the index if one as fresh as them
        is loaded or on disk."""
        self.trace_status(exp, manifest)
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
        try:
            signature, loaded = await self.in_thread(self._lookup, exp, manifest)
            if loaded is not None:
                return loaded
        except (OSError, ValueError, KeyError) as e:
            raise ApiError(
                422,
                f"the trace index of this experiment is unreadable ({e}); "
                f"delete its {ex.INDEX_DIR} folder to rebuild it",
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

    @staticmethod
    def _cubex_identity(exp: Path) -> tuple[Path, tuple[int, int]] | None:
        """profile.cubex's real path and (mtime_ns, size), or None without one."""
        cubex = experiment_file(exp, ex.CUBEX)
        if cubex is None:
            return None
        st = os.stat(cubex)
        return cubex, (st.st_mtime_ns, st.st_size)

    async def profile(self, exp: Path, manifest: dict[str, Any]) -> CallTree:
        """The call tree from profile.cubex, else from the trace."""
        found = await self.in_thread(self._cubex_identity, exp)
        if found is None or manifest.get("files_status") == ex.FILES_PENDING:
            index = await self.index(exp, manifest)
            return await self.in_thread(index.cached, "calltree", calltree.from_index)
        cubex, signature = found
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

    @staticmethod
    def _read_metric_samples(exp: Path) -> Samples | None:
        if experiment_file(exp, ex.METRICS_SCHEMA) is None:
            return None
        experiment_file(exp, ex.METRICS_DATA)  # refuses a symlink out of the experiment
        try:
            return ex.read_metrics(exp)
        except ex.ExperimentError as e:
            raise ApiError(
                422, f"{e}. Re-run the cell to sample them again.", "Unreadable metrics"
            ) from None

    async def metric_samples(self, exp: Path) -> Samples | None:
        """``(schema, t_ns, values)`` of metrics.json + .npz, or None when the run has
        none."""
        return await self.in_thread(self._read_metric_samples, exp)

    async def trace_metric_samples(self, exp: Path, manifest: dict[str, Any]) -> Samples | None:
        """The trace's metric events as samples (times already relative to the run's
        start), or None without a trace or without metric events in it."""
        if await self.in_thread(experiment_file, exp, ex.OTF2_ANCHOR) is None:
            return None
        index = await self.index(exp, manifest)
        return await self.compute(
            "reading the trace's metric events", index.cached, "metrics", metric_series.from_trace
        )

    async def origin(self, exp: Path, manifest: dict[str, Any]) -> int:
        """The epoch ns that response times count from: the trace's start (OTF2 global
        offset) when there is a readable trace that carries the wall clock; for one that
        does not (Score-P's: it starts at the first cell's region), when the kernel saw
        that region begin (the first cell's start_ns); else the manifest's start."""
        if await self.in_thread(experiment_file, exp, ex.OTF2_ANCHOR) is not None:
            try:
                index = await self.index(exp, manifest)
                if index.meta.get("origin_epoch_ns"):
                    return int(index.meta["origin_epoch_ns"])
            except ApiError:
                pass
        cells = manifest.get("cells")
        first = cells[0] if isinstance(cells, list) and cells and isinstance(cells[0], dict) else {}
        if isinstance(first.get("start_ns"), int) and manifest.get("backend") == "scorep":
            return int(first["start_ns"])
        return int(manifest.get("start_ns") or 0)
