"""The server's core: one method per route (``describe``, ``timeline``, ``calltree``,
``metrics``, ``summary`` ...), called by the thin handlers in ``routes``, which only parse
parameters and write the answer as JSON. The contract is docs/API.md.

``Service`` holds the objects that do the work, each with one job: ``reads``
(``experiment_reads.ExperimentReads``: an experiment's parts read off the event loop,
parsing in a worker process, file access and lookups on loaded indexes in threads) and
``scores`` (``score_routes.Scores``: GET score and POST filter). GET download is
``export.download``; GET device, GET link and POST import are ``device_routes``, GET ranks
``rank_routes``. Every failure comes back as a domain error (``..domain_errors``), which
only the handlers turn into a status code (``error_status``)."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from pathlib import Path
from typing import Any

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf

from ..analysis import (
    compare,
    compare_json,
    compare_noise,
    compare_verdict,
    history,
    metric_series,
    scorep_score,
    summary,
)
from ..domain_errors import (
    BadParameter,
    Conflict,
    NotFound,
    NotReady,
    ScorePError,
    Unprocessable,
)
from ..paths import experiment_file, list_experiments
from ..trace import calltree, timeline
from ..trace.calltree import CallTree
from ..trace.index_store import LoadedIndex
from . import device_routes, export, rank_routes, tools
from .experiment_reads import ExperimentReads
from .score_routes import Scores


def resolve_window(full: list[int], t0: int | None, t1: int | None) -> tuple[int, int]:
    """The timeline window: the trace's ``full`` range where a bound is not given; an
    empty window is refused, except for an empty trace (a one-nanosecond window)."""
    t0 = full[0] if t0 is None else t0
    t1 = full[1] if t1 is None else t1
    if t1 <= t0:
        if t1 == t0 == full[0] == full[1]:
            return t0, t0 + 1
        raise BadParameter(f"the window [t0={t0}, t1={t1}] is empty: t1 must exceed t0")
    return t0, t1


class Service:
    """Answers each route; ``reads`` and ``scores`` do the work (module doc)."""

    def __init__(
        self,
        server_root: str,
        experiment_roots=(),
        *,
        version: str,
        build_timeout: float = 600,
        cache_size: int = 8,
        filter_heuristics: str = scorep_score.HEURISTICS,
    ):
        self.package_version = version
        self.reads = ExperimentReads(
            server_root, experiment_roots, build_timeout=build_timeout, cache_size=cache_size
        )
        self.scores = Scores(self.reads, filter_heuristics)
        # (id(tree a), id(tree b), noise) -> (tree a, tree b, GET compare's comparison part);
        # the trees are held so that their ids stay theirs while the entry lives
        self._comparisons: OrderedDict[tuple, tuple[CallTree, CallTree, dict]] = OrderedDict()

    def warm_up(self) -> None:
        self.reads.warm_up()

    def shutdown(self) -> None:
        self.reads.shutdown()

    # -- routes (docs/API.md) ----------------------------------------------------------

    async def version(self) -> dict[str, Any]:
        status, paths = await self.reads.in_thread(
            lambda: (tools.scorep_status(), tools.tool_paths())
        )
        return {"version": self.package_version, "scorep": status, "tools": paths}

    async def experiments(
        self, directory: str | None, notebook: str | None = None, cell: str | None = None
    ) -> dict[str, Any]:
        """The experiments under ``directory`` (relative to the server root), or under the
        server root and each configured experiment root. With ``notebook`` and/or ``cell``:
        that notebook's (cell's) runs, with their disk use (``history.runs``)."""
        if notebook or cell:
            return await self.reads.in_thread(self._runs, directory, notebook or None, cell or None)
        found = await self.reads.in_thread(self._list, directory)
        return {"experiments": [{"path": str(p), "manifest": m} for p, m in found]}

    def _runs(self, directory: str | None, notebook: str | None, cell: str | None):
        given = self.reads.roots.resolve(directory, "dir") if directory else None
        parents = history.parents_for(self.reads.roots, notebook, given)
        return history.runs(self.reads.roots, parents, notebook, cell)

    async def compare(self, a: str | None, b: str | None) -> dict[str, Any]:
        """GET compare: run ``b`` against run ``a`` (the baseline; Δ = b - a), functions
        and call paths matched by name (``compare``), with the facts of both runs and
        where their cells begin (to align their timelines)."""
        if not a or not b:
            raise BadParameter("pass both runs to compare: a=<baseline path>&b=<path>")
        (exp_a, man_a), (exp_b, man_b) = await asyncio.gather(
            self.reads.open(a), self.reads.open(b)
        )
        for man in (man_a, man_b):
            if man.get("files_status") == mf.FILES_PENDING:
                raise NotReady(
                    f"{man['id']} is still being written; try again in a moment", "Not ready"
                )
        (tree_a, facts_a), (tree_b, facts_b) = await self._compare_sides(
            (exp_a, man_a), (exp_b, man_b)
        )
        walls = await self.reads.in_thread(
            history.same_source_walls, self.reads.roots, exp_a, man_a
        )
        noise = compare_noise.noise_from_runs(walls)
        # the machine's speed around each run: the verdict takes it out (compare.py)
        refs = (compare_noise.ref_cpu_s(man_a), compare_noise.ref_cpu_s(man_b))
        key = (id(tree_a), id(tree_b), noise, refs)
        cached = self._comparisons.get(key)
        if cached is not None:
            self._comparisons.move_to_end(key)
            body = cached[2]
        else:

            def run() -> dict[str, Any]:
                c = compare.compare_trees(tree_a, tree_b, noise, ref_s=refs)
                return compare_json.comparison_json(c, compare_verdict.verdict(c))

            body = await self.reads.compute("comparing the runs", run)
            self._comparisons[key] = (tree_a, tree_b, body)
            while len(self._comparisons) > 8:
                self._comparisons.popitem(last=False)
        same = [c.get("source_sha256") for c in man_a.get("cells") or []] == [
            c.get("source_sha256") for c in man_b.get("cells") or []
        ]
        return {"a": facts_a, "b": facts_b, "same_source": same, **body}

    async def _compare_sides(self, *sides: tuple[Path, mf.Manifest]):
        """Each run's call tree and facts, both runs at once. Both trees come from the
        trace indexes when both runs have a trace (built once, memory-mapped: fast, and one
        source for both), else each from its profile (profile.cubex, else the trace)."""
        available = [await self.reads.in_thread(self.reads.available, exp) for exp, _m in sides]
        # the trace holds no running/waiting split: where both runs measured it, their
        # profiles (profile.cubex's cpu_time) are what the verdict must read
        split = all(
            (ct := m.get("cell_time")) is not None and ct.get("cpu_s") is not None
            for _exp, m in sides
        )
        use_trace = all(av["otf2"] for av, _tools in available) and not (
            split and all(av.get("cubex") for av, _tools in available)
        )

        async def side(exp: Path, manifest: mf.Manifest, av: dict[str, bool]):
            index = None
            if av["otf2"]:
                try:
                    index = await self.reads.index(exp, manifest)
                except ScorePError:
                    if use_trace:
                        raise
            if use_trace and index is not None:
                tree = await self.reads.in_thread(index.cached, "calltree", calltree.from_index)
            else:
                tree = await self.reads.profile(exp, manifest)
            span = None
            if index is not None:
                span = await self.reads.compute(
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
        exp, manifest = await self.reads.open(path)
        await self.reads.in_thread(history.deletable, self.reads.roots, exp, manifest, expected_id)
        try:
            freed = await self.reads.in_thread(history.delete, exp)
        except OSError as e:
            raise Unprocessable(
                f"the experiment could not be deleted completely: {e}", "Not deleted"
            ) from None
        self.reads.forget(exp)
        return {"deleted": str(exp), "id": manifest["id"], "freed_bytes": freed}

    def _list(self, directory: str | None) -> list[tuple[str, mf.Manifest]]:
        roots = self.reads.roots
        parents: list[str | Path]
        if directory:
            given = roots.resolve(directory, "dir")
            parents = [given / ex.DEFAULT_PARENT, given]
        else:
            parents = [*(f"{p}/{ex.DEFAULT_PARENT}" for p in roots.all), *roots.extra]
        return list_experiments(roots, parents)

    async def describe(self, path: str | None) -> dict[str, Any]:
        """GET experiment: the manifest, which files there are, and the trace's outline."""
        exp, manifest = await self.reads.open(path)
        available, tool_paths = await self.reads.in_thread(self.reads.available, exp)
        body: dict[str, Any] = {
            "path": str(exp),
            "manifest": manifest,
            "available": available,
            "tools": {k: v is not None for k, v in tool_paths.items()},
            "trace": None,
        }
        if not available["otf2"] or manifest.get("files_status") == mf.FILES_PENDING:
            return body
        try:
            index = await self.reads.index(exp, manifest)
        except Unprocessable as e:
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
        self,
        path: str | None,
        t0: int | None,
        t1: int | None,
        width: int,
        rows: int | None = None,
        ranks: tuple[int, int] | None = None,
    ) -> dict[str, Any]:
        exp, manifest = await self.reads.open(path)

        def answer(index: LoadedIndex) -> dict[str, Any]:
            window = resolve_window(index.meta["range"], t0, t1)
            return timeline.query(index, *window, width, rows, ranks)

        return await self.reads.on_index("the timeline query", exp, manifest, answer)

    async def calltree(self, path: str | None, location: int | None) -> dict[str, Any]:
        exp, manifest = await self.reads.open(path)
        tree = await self.reads.profile(exp, manifest)
        if location is not None:
            if not tree.locations:
                raise BadParameter("this profile has no locations")
            last = len(tree.locations) - 1
            if not 0 <= location <= last:
                raise BadParameter(f"location={location} is out of range [0, {last}]")
        return await self.reads.compute(
            "building the call tree", calltree.to_json, tree, location, manifest["id"]
        )

    async def metrics(
        self, path: str | None, t0: int | None, t1: int | None, width: int
    ) -> dict[str, Any]:
        """The metric samples of metrics.json + .npz and the trace's metric events (those
        the samples lack: Score-P's rusage, PAPI or plugin metrics), bucketed to ``width``;
        times relative to the run's start."""
        exp, manifest = await self.reads.open(path)
        if t0 is not None and t1 is not None and t1 <= t0:
            raise BadParameter(f"the window [t0={t0}, t1={t1}] is empty")
        samples = await self.reads.metric_samples(exp)
        try:
            traced = await self.reads.trace_metric_samples(exp, manifest)
        except ScorePError:
            if samples is None:
                raise
            traced = None  # the samples stand without the trace (pending, unreadable)
        if samples is not None:
            origin = await self.reads.origin(exp, manifest)
            if traced is not None:
                schema, t_ns, values = samples
                relative = (schema, t_ns - origin, values)
                samples = await self.reads.compute(
                    "merging the trace's metrics", metric_series.merge, relative, traced
                )
                origin = 0
        else:
            samples, origin = traced, 0
        if samples is None:
            raise NotFound(
                "this experiment has no metric samples (no metrics.json + "
                "metrics.npz, no metric events in the trace): system "
                "metrics were off for the run",
                "No metrics",
            )
        return await self.reads.compute(
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
        exp, manifest = await self.reads.open(path)
        tree, events, notes = None, None, []
        try:
            tree = await self.reads.profile(exp, manifest)
        except ScorePError as e:
            if isinstance(e, Conflict):
                raise
            notes.append(f"No call tree: {e.message}")
        if await self.reads.in_thread(experiment_file, exp, ex.OTF2_ANCHOR) is not None:
            try:
                index = await self.reads.index(exp, manifest)
                events = index.meta["events"]
                notes += index.meta.get("notes", [])
            except ScorePError as e:
                if isinstance(e, Conflict):
                    raise
                notes.append(f"No trace: {e.message}")
        try:
            samples = await self.reads.metric_samples(exp)
        except ScorePError as e:
            samples = None
            notes.append(f"No metrics: {e.message}")
        body = await self.reads.compute(
            "summarising",
            lambda: summary.summarize(manifest, tree, samples, events=events, trace_notes=notes),
        )
        if events is not None:  # an MPI run's imbalance and communication share (ranks.py)
            body["verdicts"] += await rank_routes.summary_verdicts(self.reads, exp, manifest)
        # the accelerators: what the device did, and the verdict naming the bottleneck
        device, device_verdicts = await device_routes.summary_part(self.reads, exp, manifest)
        body["device"] = device
        body["verdicts"] = device_verdicts + body["verdicts"]
        return body

    async def device(self, path: str | None) -> dict[str, Any]:
        """GET device: the accelerators' analysis (device_routes, device_analysis)."""
        return await device_routes.answer(self.reads, path)

    async def link(
        self, path: str | None, location: int | None, start: int | None
    ) -> dict[str, Any]:
        """GET link: a span's launch link (launch <-> kernel)."""
        return await device_routes.link(self.reads, path, location, start)

    async def import_trace(self, trace: str | None) -> dict[str, Any]:
        """POST import: a torch.profiler trace as an experiment."""
        return await self.reads.in_thread(device_routes.import_trace, self.reads.roots, trace)

    async def ranks(self, path: str | None, matrix: str | None = None) -> dict[str, Any]:
        """GET ranks: an MPI run's processes and their communication (rank_routes)."""
        return await rank_routes.answer(self.reads, path, matrix)

    async def download(self, path: str | None, what: str | None) -> export.Download:
        """What to stream for ``what`` = otf2 (a .zip), cubex or perfetto."""
        return await export.download(self.reads, path, what)

    async def score(self, path: str | None) -> dict[str, Any]:
        """GET score (``score_routes``)."""
        return await self.scores.score(path)

    async def apply_filter(self, path: str | None) -> dict[str, Any]:
        """POST filter (``score_routes``)."""
        return await self.scores.apply_filter(path)

    async def open_tool(
        self, path: str | None, tool: str | None, once: bool = False
    ) -> dict[str, Any]:
        exp, _manifest = await self.reads.open(path)
        if tool not in tools.TOOL_FILES:
            raise BadParameter(f"tool={tool!r}: choose vampir or cube")
        name = tools.TOOL_FILES[tool]
        target = await self.reads.in_thread(experiment_file, exp, name)
        if target is None:
            raise NotFound(f"this experiment has no {name} to open in {tool}")
        if once:  # the kernel asked for it (the bundle's "open"): not again on a reopen
            pid = await self.reads.in_thread(tools.open_once, tool, exp, target)
            return {"pid": pid, "already": pid is None}
        pid = await self.reads.in_thread(tools.open_in_tool, tool, exp, target)
        return {"pid": pid}
