"""Fixtures for the server-extension tests: a real jupyter_server with the extension, and
experiment directories written by the kernel's real writers (OTF2, CUBE4, metrics)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

pytest_plugins = ("pytest_jupyter.jupyter_server",)


@pytest.fixture
def jp_server_config():
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyterlab_scorep": True},
            "allow_unauthenticated_access": False,
        },
    }


@pytest.fixture
def experiments(jp_root_dir):
    """A factory: ``experiments(name, **kw)`` writes an experiment under
    ``<server root>/scorep-experiments/<name>`` and returns its path."""
    from experiment_factory import write_experiment

    def make(name="run1", **kw):
        return write_experiment(Path(jp_root_dir) / "scorep-experiments" / name, **kw)

    return make


@pytest.fixture
def api(jp_fetch):
    """``await api("timeline", path=..., t0=...)`` -> (status, JSON body); errors too."""
    from tornado.httpclient import HTTPClientError

    async def call(route, method="GET", body=None, raw=False, headers=None, **params):
        params = {k: str(v) for k, v in params.items() if v is not None}
        try:
            kwargs = {"method": method, "params": params, "headers": headers}
            if method == "POST":
                kwargs["body"] = body if body is not None else b""
                kwargs["allow_nonstandard_methods"] = True
            response = await jp_fetch("scorep", "api", route, **kwargs)
        except HTTPClientError as e:
            payload = e.response.body if e.response is not None else b""
            return e.code, (json.loads(payload) if payload else None)
        if raw:
            return response.code, response
        return response.code, json.loads(response.body)

    return call
