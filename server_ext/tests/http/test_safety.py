"""Refusals: no user, no permission, paths outside the roots, and damaged files, which
must come back as 4xx JSON errors while the server keeps serving."""

from __future__ import annotations

import os
import shutil

import pytest
from jupyter_server.auth.authorizer import AllowAllAuthorizer

pytestmark = pytest.mark.timeout(120)

GET_ROUTES = [
    "version",
    "experiments",
    "experiment",
    "timeline",
    "calltree",
    "metrics",
    "summary",
    "compare",
    "download",
    "score",
    "ranks",
]


class NoScorePAuthorizer(AllowAllAuthorizer):
    """Allows everything except the extension's resource."""

    def is_authorized(self, handler, user, action, resource):
        return resource != "scorep"


@pytest.fixture
def extra_root(tmp_path):
    root = tmp_path / "scratch"
    root.mkdir()
    return root


@pytest.fixture
def jp_server_config(extra_root):
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyterlab_scorep": True},
            "allow_unauthenticated_access": False,
        },
        "ScorePExtension": {"experiment_roots": [str(extra_root)]},
    }


async def test_unauthenticated_is_403_everywhere(api, experiments):
    exp = experiments()
    for route in GET_ROUTES:
        code, _ = await api(route, headers={"Authorization": ""}, path=str(exp))
        assert code == 403, route
    code, _ = await api(
        "open", method="POST", headers={"Authorization": ""}, path=str(exp), tool="cube"
    )
    assert code == 403
    code, _ = await api("filter", method="POST", headers={"Authorization": ""}, path=str(exp))
    assert code == 403
    code, _ = await api(
        "experiment", method="DELETE", headers={"Authorization": ""}, path=str(exp), id="run1"
    )
    assert code == 403 and exp.is_dir()


async def test_authoriser_decides_on_the_scorep_resource(api, experiments, jp_serverapp):
    exp = experiments()
    jp_serverapp.web_app.settings["authorizer"] = NoScorePAuthorizer(parent=jp_serverapp)
    for route in GET_ROUTES:
        code, body = await api(route, path=str(exp))
        assert code == 403, route
        assert "scorep" in body["message"]
    code, body = await api("experiment", method="DELETE", path=str(exp), id="run1")
    assert code == 403 and exp.is_dir()
    code, body = await api("filter", method="POST", path=str(exp))
    assert code == 403 and "scorep" in body["message"]


class ReadOnlyAuthorizer(AllowAllAuthorizer):
    """Lets the extension's resource be read, not changed."""

    def is_authorized(self, handler, user, action, resource):
        return resource != "scorep" or action == "read"


async def test_delete_needs_write_permission(api, experiments, jp_serverapp):
    exp = experiments()
    jp_serverapp.web_app.settings["authorizer"] = ReadOnlyAuthorizer(parent=jp_serverapp)
    code, _ = await api("experiment", path=str(exp))
    assert code == 200
    code, body = await api("experiment", method="DELETE", path=str(exp), id="run1")
    assert code == 403 and "write" in body["message"] and exp.is_dir()
    code, body = await api("filter", method="POST", path=str(exp))
    assert code == 403 and "write" in body["message"]
    assert not (exp.parent.parent / "scorep-filters").exists()


async def test_a_filter_is_never_written_outside_the_roots(api, experiments, tmp_path):
    """scorep-filters/ beside the experiments, symlinked out of the roots: refused before
    anything is read or written (with or without Score-P installed)."""
    exp = experiments()
    outside = tmp_path / "elsewhere-filters"
    outside.mkdir()
    (exp.parent.parent / "scorep-filters").symlink_to(outside)
    (exp.parent / "scorep-filters").symlink_to(outside)
    code, body = await api("filter", method="POST", path=str(exp))
    assert code == 403 and "outside" in body["message"]
    assert list(outside.iterdir()) == []


async def test_dot_dot_traversal_is_403(api, experiments, jp_root_dir):
    exp = experiments()
    sneaky = f"scorep-experiments/run1/../../../{exp.parent.parent.parent.name}"
    code, body = await api("experiment", path=sneaky)
    assert code == 403 and "'..'" in body["message"]
    code, _ = await api("experiment", path="scorep-experiments/../scorep-experiments/run1")
    assert code == 403


async def test_absolute_path_outside_the_roots_is_403(api, tmp_path):
    from experiment_factory import write_experiment

    outside = write_experiment(tmp_path / "elsewhere" / "run")
    code, body = await api("experiment", path=str(outside))
    assert code == 403
    assert "experiment_roots" in body["message"]
    code, _ = await api("experiments", dir=str(tmp_path / "elsewhere"))
    assert code == 403


async def test_configured_root_is_served(api, extra_root):
    from experiment_factory import write_experiment

    exp = write_experiment(extra_root / "scorep-experiments" / "far")
    code, body = await api("experiment", path=str(exp))
    assert code == 200 and body["trace"]["events"] == 20
    code, body = await api("experiments")
    assert str(exp) in [e["path"] for e in body["experiments"]]


async def test_symlink_leaving_the_root_is_403(api, jp_root_dir, tmp_path):
    from experiment_factory import write_experiment

    outside = write_experiment(tmp_path / "elsewhere" / "run")
    link = jp_root_dir / "scorep-experiments" / "linked"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    code, _ = await api("experiment", path="scorep-experiments/linked")
    assert code == 403
    code, body = await api("experiments")
    assert all("elsewhere" not in e["path"] for e in body["experiments"])


async def test_symlinked_file_inside_an_experiment_is_not_served(api, experiments, tmp_path):
    exp = experiments()
    secret = tmp_path / "secret.txt"
    secret.write_text("do not serve")
    (exp / "profile.cubex").unlink()
    (exp / "profile.cubex").symlink_to(secret)
    code, body = await api("download", path=str(exp), what="cubex")
    assert code == 403
    assert b"do not serve" not in str(body).encode()


async def test_archive_file_linking_out_is_not_read(api, experiments, tmp_path):
    exp = experiments()
    elsewhere = tmp_path / "elsewhere.evt"
    evt = next((exp / "traces").glob("*.evt"))
    elsewhere.write_bytes(evt.read_bytes())
    evt.unlink()
    evt.symlink_to(elsewhere)
    for route in ("timeline", "download"):
        code, body = await api(route, path=str(exp), what="otf2")
        assert code == 403, route
        assert "links outside" in body["message"]


async def test_missing_directory_and_manifest_are_404(api, experiments, jp_root_dir):
    code, body = await api("experiment", path="scorep-experiments/nope")
    assert code == 404
    plain = jp_root_dir / "plain"
    plain.mkdir()
    code, body = await api("timeline", path="plain")
    assert code == 404 and "manifest.json" in body["message"]
    code, body = await api("experiment")
    assert code == 400


async def test_damaged_files_are_422_and_the_server_keeps_serving(api, experiments):
    bad_manifest = experiments("m")
    (bad_manifest / "manifest.json").write_text("{ not json")
    code, body = await api("experiment", path=str(bad_manifest))
    assert code == 422 and "not valid JSON" in body["message"]

    foreign = experiments("f")
    (foreign / "manifest.json").write_text('{"format_version": 99, "id": "x"}')
    code, body = await api("summary", path=str(foreign))
    assert code == 422 and "format version" in body["message"]

    truncated = experiments("t")
    evt = next((truncated / "traces").glob("*.evt"))
    evt.write_bytes(evt.read_bytes()[: evt.stat().st_size // 2])
    code, body = await api("timeline", path=str(truncated))
    assert code == 422, body
    code, body = await api("experiment", path=str(truncated))
    assert code == 200 and body["trace"] is None and body["trace_error"]

    garbage = experiments("g")
    (garbage / "traces.def").write_bytes(os.urandom(3000))
    (garbage / "profile.cubex").write_bytes(b"\x00" * 10_000)
    (garbage / "metrics.npz").write_bytes(b"PK\x03\x04 broken")
    for route in ("timeline", "calltree", "metrics"):
        code, body = await api(route, path=str(garbage))
        assert code == 422, (route, body)
        assert body["message"]
    code, body = await api("summary", path=str(garbage))
    assert code == 200  # a summary of what could be read, with notes on the rest
    assert any("No call tree" in v["text"] for v in body["verdicts"])

    no_trace = experiments("n", otf2=False)
    code, body = await api("timeline", path=str(no_trace))
    assert code == 404 and "no OTF2 trace" in body["message"]
    shutil.rmtree(no_trace)
    code, body = await api("experiment", path=str(no_trace))
    assert code == 404
    code, body = await api("version")
    assert code == 200
