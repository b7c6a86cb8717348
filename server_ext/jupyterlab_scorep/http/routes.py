"""Thin HTTP handlers under ``<base_url>/scorep/api/``: parse parameters, call one
``Service`` method, write its answer as JSON (a domain error becomes its 4xx status,
``error_status``).
What to answer is decided in ``service``; the contract is docs/API.md."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

import tornado
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado.http1connection import HTTP1Connection
from tornado.iostream import StreamClosedError

from ..domain_errors import BadParameter, ScorePError, Unreadable
from .error_status import http_error
from .service import Service

AUTH_RESOURCE = "scorep"
MAX_WIDTH = 20_000
MAX_ROWS = 100_000  # GET timeline: locations drawn one per row at most


class ScorePHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def service(self) -> Service:
        return self.settings["scorep_service"]

    def fail(self, error: ScorePError) -> NoReturn:
        raise http_error(error)

    async def respond(self, make: Callable[[], Awaitable[Any]]) -> None:
        try:
            body = await make()
        except ScorePError as e:
            self.fail(e)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body, separators=(",", ":")))

    # -- parameters ------------------------------------------------------------------

    @property
    def path_arg(self) -> str | None:
        return self.get_argument("path", None)

    def int_arg(self, name: str, lo: int | None = None, hi: int | None = None) -> int | None:
        """The integer parameter ``name``, None when absent or empty."""
        raw = self.get_argument(name, None)
        if raw is None or raw == "":
            return None
        value = None
        if re.fullmatch(r"-?\d{1,19}", raw):
            value = int(raw)
        elif re.fullmatch(r"-?\d+\.\d*(e\d{1,2})?|-?\d+e\d{1,2}", raw):
            value = int(float(raw))  # JavaScript may send 1.5e9 or 12.0
        if value is None:
            raise BadParameter(f"{name}={raw!r} is not a number")
        lo = -(2**62) if lo is None else lo
        hi = 2**62 if hi is None else hi
        if value < lo or value > hi:
            raise BadParameter(f"{name}={value} is out of range [{lo}, {hi}]")
        return value

    def range_arg(self, name: str) -> tuple[int, int] | None:
        """``lo:hi`` (0 <= lo < hi), None when absent or empty."""
        raw = self.get_argument(name, None)
        if raw is None or raw == "":
            return None
        m = re.fullmatch(r"(\d{1,9}):(\d{1,9})", raw)
        if m is None or int(m[1]) >= int(m[2]):
            raise BadParameter(
                f"{name}={raw!r} is not a range: write lo:hi with 0 <= lo < hi (e.g. {name}=0:64)"
            )
        return int(m[1]), int(m[2])

    def width_arg(self) -> int:
        width = self.int_arg("width", 1, MAX_WIDTH)
        return 1000 if width is None else width


class JsonGetHandler(ScorePHandler):
    """A GET answered with ``await self.make()`` as JSON."""

    @tornado.web.authenticated
    @authorized
    async def get(self):
        await self.respond(self.make)

    async def make(self) -> Any:
        raise NotImplementedError


class VersionHandler(JsonGetHandler):
    async def make(self):
        return await self.service.version()


class ExperimentsHandler(JsonGetHandler):
    async def make(self):
        return await self.service.experiments(
            self.get_argument("dir", None),
            self.get_argument("notebook", None),
            self.get_argument("cell", None),
        )


class ExperimentHandler(JsonGetHandler):
    async def make(self):
        return await self.service.describe(self.path_arg)

    @tornado.web.authenticated
    @authorized("write")
    async def delete(self):
        await self.respond(
            lambda: self.service.delete(self.path_arg, self.get_argument("id", None))
        )


class CompareHandler(JsonGetHandler):
    async def make(self):
        return await self.service.compare(
            self.get_argument("a", None), self.get_argument("b", None)
        )


class TimelineHandler(JsonGetHandler):
    async def make(self):
        t0, t1, width = self.int_arg("t0"), self.int_arg("t1"), self.width_arg()
        rows = self.int_arg("rows", 1, MAX_ROWS)
        return await self.service.timeline(
            self.path_arg, t0, t1, width, rows, self.range_arg("ranks")
        )


class CalltreeHandler(JsonGetHandler):
    async def make(self):
        location = self.int_arg("location")
        return await self.service.calltree(self.path_arg, location)


class MetricsHandler(JsonGetHandler):
    async def make(self):
        t0, t1, width = self.int_arg("t0"), self.int_arg("t1"), self.width_arg()
        return await self.service.metrics(self.path_arg, t0, t1, width)


class SummaryHandler(JsonGetHandler):
    async def make(self):
        return await self.service.summary(self.path_arg)


class RanksHandler(JsonGetHandler):
    async def make(self):
        return await self.service.ranks(self.path_arg, self.get_argument("matrix", None))


class DeviceHandler(JsonGetHandler):
    async def make(self):
        return await self.service.device(self.path_arg)


class LinkHandler(JsonGetHandler):
    async def make(self):
        location, start = self.int_arg("location", 0), self.int_arg("start")
        return await self.service.link(self.path_arg, location, start)


class ImportHandler(ScorePHandler):
    @tornado.web.authenticated
    @authorized("write")
    async def post(self):
        await self.respond(lambda: self.service.import_trace(self.get_argument("trace", None)))


class DownloadHandler(ScorePHandler):
    """Streams ``Service.download``'s chunks, each read in a thread."""

    @tornado.web.authenticated
    @authorized
    async def get(self):
        loop = asyncio.get_running_loop()
        try:
            download = await self.service.download(self.path_arg, self.get_argument("what", None))
            # The first chunk before any header goes out: a failure here is still JSON.
            first = await loop.run_in_executor(None, next, download.chunks, None)
        except ScorePError as e:
            self.fail(e)
        except OSError as e:
            self.fail(Unreadable(f"cannot read the files to download: {e}"))
        chunks = download.chunks
        self.set_header("Content-Type", download.content_type)
        self.set_header("Content-Disposition", f'attachment; filename="{download.filename}"')
        self.set_header("Cache-Control", "no-store")
        if download.length is not None:
            self.set_header("Content-Length", str(download.length))
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
            self.log.exception("scorep: download of %s failed mid-stream", self.path_arg)
            if isinstance(self.request.connection, HTTP1Connection):
                self.request.connection.close()
            return
        finally:
            chunks.close()
        self.finish()


class ScoreHandler(JsonGetHandler):
    async def make(self):
        return await self.service.score(self.path_arg)


class FilterHandler(ScorePHandler):
    @tornado.web.authenticated
    @authorized("write")
    async def post(self):
        await self.respond(lambda: self.service.apply_filter(self.path_arg))


class OpenHandler(ScorePHandler):
    @tornado.web.authenticated
    @authorized("execute")
    async def post(self):
        once = self.get_argument("once", "") in ("1", "true")
        await self.respond(
            lambda: self.service.open_tool(self.path_arg, self.get_argument("tool", None), once)
        )


ROUTES = {
    "version": VersionHandler,
    "experiments": ExperimentsHandler,
    "experiment": ExperimentHandler,
    "timeline": TimelineHandler,
    "calltree": CalltreeHandler,
    "metrics": MetricsHandler,
    "summary": SummaryHandler,
    "ranks": RanksHandler,
    "device": DeviceHandler,
    "link": LinkHandler,
    "import": ImportHandler,
    "compare": CompareHandler,
    "download": DownloadHandler,
    "open": OpenHandler,
    "score": ScoreHandler,
    "filter": FilterHandler,
}


def setup_route_handlers(web_app, service: Service) -> None:
    web_app.settings["scorep_service"] = service
    base_url = web_app.settings["base_url"]
    handlers = [
        (url_path_join(base_url, "scorep", "api", name), handler)
        for name, handler in ROUTES.items()
    ]
    web_app.add_handlers(".*$", handlers)
