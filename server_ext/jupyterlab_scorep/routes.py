"""Thin HTTP handlers under ``<base_url>/scorep/api/``: parse parameters, ask ``Service``,
write JSON. The contract is docs/API.md."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import tornado
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado.iostream import StreamClosedError

from scorep_kernel import experiment as ex

from . import calltree, export, metrics, summary, timeline, tools
from .api_error import ApiError
from .paths import archive_files, experiment_file, list_experiments
from .service import Service

AUTH_RESOURCE = "scorep"


class ScorePHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def service(self) -> Service:
        return self.settings["scorep_service"]

    def fail(self, error: ApiError) -> None:
        raise tornado.web.HTTPError(error.status, log_message=error.message, reason=error.reason)

    async def respond(self, make: Callable) -> None:
        try:
            body = await make()
        except ApiError as e:
            self.fail(e)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body, separators=(",", ":")))

    async def computed(self, what: str, fn: Callable, *args) -> Any:
        """Run a pure function over a file's contents in a thread; whatever a damaged file
        makes it raise becomes a 422, never a 500."""
        try:
            return await self.service.in_thread(fn, *args)
        except ApiError:
            raise
        except Exception as e:
            self.log.warning("scorep: %s failed: %s", what, e, exc_info=True)
            raise ApiError(
                422,
                f"{what} failed on this experiment's files "
                f"({type(e).__name__}: {e}); they are damaged or of an "
                "unknown version",
                "Unreadable file",
            ) from None

    # -- parameters ------------------------------------------------------------------

    def int_arg(
        self, name: str, default: int | None, lo: int | None = None, hi: int | None = None
    ) -> int | None:
        raw = self.get_argument(name, None)
        if raw is None or raw == "":
            return default
        value = None
        if re.fullmatch(r"-?\d{1,19}", raw):
            value = int(raw)
        elif re.fullmatch(r"-?\d+\.\d*(e\d{1,2})?|-?\d+e\d{1,2}", raw):
            value = int(float(raw))  # JavaScript may send 1.5e9 or 12.0
        if value is None:
            raise ApiError(400, f"{name}={raw!r} is not a number")
        lo = -(2**62) if lo is None else lo
        hi = 2**62 if hi is None else hi
        if value < lo or value > hi:
            raise ApiError(400, f"{name}={value} is out of range [{lo}, {hi}]")
        return value

    async def experiment(self):
        exp = self.service.roots.experiment(self.get_argument("path", None))
        return exp, await self.service.manifest(exp)


class JsonGetHandler(ScorePHandler):
    """A GET answered with ``await self.make()`` as JSON (an ApiError becomes its status)."""

    @tornado.web.authenticated
    @authorized
    async def get(self):
        await self.respond(self.make)

    async def make(self) -> Any:
        raise NotImplementedError


def _window(handler: ScorePHandler, full: list[int], width_default: int = 1000):
    t0 = handler.int_arg("t0", full[0])
    t1 = handler.int_arg("t1", full[1])
    width = handler.int_arg("width", width_default, 1, 20_000)
    if t1 <= t0:
        if t1 == t0 == full[0] == full[1]:
            t1 = t0 + 1  # an empty trace: a one-nanosecond window
        else:
            raise ApiError(400, f"the window [t0={t0}, t1={t1}] is empty: t1 must exceed t0")
    return t0, t1, width


class VersionHandler(JsonGetHandler):
    async def make(self):
        from . import __version__

        status = await self.service.in_thread(tools.scorep_status)
        return {"version": __version__, "scorep": status, "tools": tools.tool_paths()}


class ExperimentsHandler(JsonGetHandler):
    async def make(self):
        given = self.get_argument("dir", None)
        roots = self.service.roots
        if given:
            parents = [roots.resolve(given, "dir")]
            parents = [p / ex.DEFAULT_PARENT for p in parents] + parents
        else:
            parents = [roots.server_root, *roots.extra]
            parents = [f"{p}/{ex.DEFAULT_PARENT}" for p in parents] + roots.extra
        found = await self.service.in_thread(list_experiments, roots, parents)
        return {"experiments": [{"path": str(p), "manifest": m} for p, m in found]}


class ExperimentHandler(JsonGetHandler):
    async def make(self):
        exp, manifest = await self.experiment()
        body = {
            "path": str(exp),
            "manifest": manifest,
            "available": {
                "otf2": experiment_file(exp, ex.OTF2_ANCHOR) is not None,
                "cubex": experiment_file(exp, ex.CUBEX) is not None,
                "metrics": experiment_file(exp, ex.METRICS_SCHEMA) is not None
                and experiment_file(exp, ex.METRICS_DATA) is not None,
            },
            "tools": {k: v is not None for k, v in tools.tool_paths().items()},
            "trace": None,
        }
        if body["available"]["otf2"] and manifest.get("files_status") != "pending":
            try:
                index = await self.service.index(exp, manifest)
            except ApiError as e:
                if e.status != 422:
                    raise
                body["trace_error"] = e.message
            else:
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


class TimelineHandler(JsonGetHandler):
    async def make(self):
        exp, manifest = await self.experiment()
        index = await self.service.index(exp, manifest)
        t0, t1, width = _window(self, index.meta["range"])
        return await self.computed("the timeline query", timeline.query, index, t0, t1, width)


class CalltreeHandler(JsonGetHandler):
    async def make(self):
        exp, manifest = await self.experiment()
        tree = await self.service.profile(exp, manifest)
        location = self.int_arg("location", None, 0, max(len(tree.locations) - 1, 0))
        if location is not None and not tree.locations:
            raise ApiError(400, "this profile has no locations")
        return await self.computed(
            "building the call tree", calltree.to_json, tree, location, manifest["id"]
        )


class MetricsHandler(JsonGetHandler):
    async def make(self):
        exp, manifest = await self.experiment()
        samples = await self.service.metrics(exp)
        if samples is not None:
            origin = await self._origin(exp, manifest)
        else:
            samples, origin = await self._trace_metrics(exp, manifest), 0
        if samples is None:
            raise ApiError(
                404,
                "this experiment has no metric samples (no metrics.json + "
                "metrics.npz, no metric events in the trace): system "
                "metrics were off for the run",
                "No metrics",
            )
        t0 = self.int_arg("t0", None)
        t1 = self.int_arg("t1", None)
        width = self.int_arg("width", 1000, 1, 20_000)
        if t0 is not None and t1 is not None and t1 <= t0:
            raise ApiError(400, f"the window [t0={t0}, t1={t1}] is empty")
        return await self.computed(
            "bucketing the metric samples", metrics.downsample, *samples, origin, t0, t1, width
        )

    async def _trace_metrics(self, exp, manifest):
        if experiment_file(exp, ex.OTF2_ANCHOR) is None:
            return None
        index = await self.service.index(exp, manifest)
        return await self.computed("reading the trace's metric events", metrics.from_trace, index)

    async def _origin(self, exp, manifest) -> int:
        # Times are relative to the trace's start (OTF2 global offset) when there is one.
        if experiment_file(exp, ex.OTF2_ANCHOR) is not None:
            try:
                index = await self.service.index(exp, manifest)
                if index.meta.get("origin_epoch_ns"):
                    return int(index.meta["origin_epoch_ns"])
            except ApiError:
                pass
        return int(manifest.get("start_ns") or 0)


class SummaryHandler(JsonGetHandler):
    async def make(self):
        exp, manifest = await self.experiment()
        tree, events, notes = None, None, []
        try:
            tree = await self.service.profile(exp, manifest)
        except ApiError as e:
            if e.status == 409:
                raise
            notes.append(f"No call tree: {e.message}")
        if experiment_file(exp, ex.OTF2_ANCHOR) is not None:
            try:
                index = await self.service.index(exp, manifest)
                events = index.meta["events"]
                notes += index.meta.get("notes", [])
            except ApiError as e:
                if e.status == 409:
                    raise
                notes.append(f"No trace: {e.message}")
        try:
            samples = await self.service.metrics(exp)
        except ApiError as e:
            samples = None
            notes.append(f"No metrics: {e.message}")
        return await self.computed(
            "summarising",
            lambda: summary.summarize(manifest, tree, samples, events=events, trace_notes=notes),
        )


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class DownloadHandler(ScorePHandler):
    @tornado.web.authenticated
    @authorized
    async def get(self):
        try:
            exp, manifest = await self.experiment()
            what = self.get_argument("what", None)
            stem = _SAFE_NAME.sub("_", manifest["id"]) or "experiment"
            if what == "otf2":
                files = await self.service.in_thread(archive_files, exp)
                if not any(name == ex.OTF2_ANCHOR for name, _ in files):
                    raise ApiError(404, "this experiment has no OTF2 trace to download")
                chunks = export.zip_stream(files, stem)
                filename, ctype = f"{stem}-otf2.zip", "application/zip"
            elif what == "cubex":
                path = experiment_file(exp, ex.CUBEX)
                if path is None:
                    raise ApiError(404, "this experiment has no profile.cubex to download")
                chunks = export.file_stream(path)
                filename, ctype = f"{stem}.cubex", "application/x-tar"
                self.set_header("Content-Length", str(path.stat().st_size))
            elif what == "perfetto":
                index = await self.service.index(exp, manifest)
                chunks = export.perfetto_stream(index, manifest["id"])
                filename, ctype = f"{stem}.perfetto.json", "application/json"
            else:
                raise ApiError(400, f"what={what!r}: choose otf2, cubex or perfetto")
            loop = asyncio.get_running_loop()
            # The first chunk before any header goes out: a failure here is still JSON.
            first = await loop.run_in_executor(None, next, chunks, None)
        except ApiError as e:
            self.fail(e)
        except OSError as e:
            self.fail(ApiError(422, f"cannot read the files to download: {e}"))
        self.set_header("Content-Type", ctype)
        self.set_header("Content-Disposition", f'attachment; filename="{filename}"')
        self.set_header("Cache-Control", "no-store")
        try:
            chunk = first
            while chunk is not None:
                if chunk:
                    self.write(chunk)
                    await self.flush()
                chunk = await loop.run_in_executor(None, next, chunks, None)
        except StreamClosedError:
            return  # the browser went away
        except Exception:
            # Headers are out: all we can do is cut the download short, visibly.
            self.log.exception("scorep: download of %s failed mid-stream", exp)
            self.request.connection.close()
            return
        finally:
            chunks.close()
        self.finish()


class OpenHandler(ScorePHandler):
    @tornado.web.authenticated
    @authorized("execute")
    async def post(self):
        async def make():
            exp, _manifest = await self.experiment()
            tool = self.get_argument("tool", None)
            if tool not in tools.TOOL_FILES:
                raise ApiError(400, f"tool={tool!r}: choose vampir or cube")
            target = experiment_file(exp, tools.TOOL_FILES[tool])
            if target is None:
                raise ApiError(
                    404, f"this experiment has no {tools.TOOL_FILES[tool]} to open in {tool}"
                )
            pid = await self.service.in_thread(tools.open_in_tool, tool, exp, target)
            return {"pid": pid}

        await self.respond(make)


ROUTES = {
    "version": VersionHandler,
    "experiments": ExperimentsHandler,
    "experiment": ExperimentHandler,
    "timeline": TimelineHandler,
    "calltree": CalltreeHandler,
    "metrics": MetricsHandler,
    "summary": SummaryHandler,
    "download": DownloadHandler,
    "open": OpenHandler,
}


def setup_route_handlers(web_app, service: Service) -> None:
    web_app.settings["scorep_service"] = service
    base_url = web_app.settings["base_url"]
    handlers = [
        (url_path_join(base_url, "scorep", "api", name), handler)
        for name, handler in ROUTES.items()
    ]
    web_app.add_handlers(".*$", handlers)
