"""The ``scorep`` stand-in: user regions and instrumenter switches in the builtin tracer."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
from test_tracer_util import calls, run_cell

from scorep_kernel.formats.recording import ROLE_USER
from scorep_kernel.measure import Measurement, detect_scorep, install_scorep_shim, shim_path

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("scorep") is not None and shim_path() not in sys.path,
    reason="the real Score-P bindings are installed: the shim is not used",
)


@pytest.fixture
def scorep():
    saved_path = list(sys.path)
    assert install_scorep_shim() is True
    import scorep as module

    assert module.BUILTIN_SHIM is True
    yield module
    sys.path[:] = saved_path
    for name in [n for n in sys.modules if n == "scorep" or n.startswith("scorep.")]:
        del sys.modules[name]


def measure(tmp_path, source, scorep):
    m = Measurement(tmp_path)
    m.start()
    try:
        run_cell(m, "cell [1]", source, {"__name__": "__main__", "scorep": scorep})
    finally:
        rec = m.stop()
    return rec


def test_install_only_when_scorep_is_missing():
    code = (
        "import sys, importlib.util\n"
        "from scorep_kernel.measure import install_scorep_shim, shim_path\n"
        "assert importlib.util.find_spec('scorep') is None\n"
        "assert install_scorep_shim() is True and sys.path[-1] == shim_path()\n"
        "assert install_scorep_shim() is True and sys.path.count(shim_path()) == 1\n"
        "import scorep.user, scorep.instrumenter\n"
        "print(scorep.__file__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(shim_path())
    # A real `scorep` on the path wins: the shim is not added.
    fake = (
        "import sys, os, tempfile\n"
        "d = tempfile.mkdtemp(); os.mkdir(os.path.join(d, 'scorep'))\n"
        "open(os.path.join(d, 'scorep', '__init__.py'), 'w').close()\n"
        "sys.path.insert(0, d)\n"
        "from scorep_kernel.measure import install_scorep_shim, shim_path, detect_scorep\n"
        "assert install_scorep_shim() is False and shim_path() not in sys.path\n"
        "assert detect_scorep()['bindings'] is True\n"
    )
    out = subprocess.run([sys.executable, "-c", fake], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_region_as_context_manager_and_decorator(tmp_path, scorep):
    source = (
        "@scorep.user.region('step')\n"
        "def step():\n"
        "    return work()\n"
        "def work():\n"
        "    return 1\n"
        "with scorep.user.region('outer'):\n"
        "    step()\n"
        "    step()\n"
        "scorep.user.region_begin('manual')\n"
        "work()\n"
        "scorep.user.region_end('manual')\n"
    )
    rec = measure(tmp_path, source, scorep)
    got = calls(rec)
    users = [(c.name, c.parent, c.depth) for c in got if c.role == ROLE_USER]
    assert users == [
        ("user:outer", "cell [1]", 1),
        ("user:step", "user:outer", 2),
        ("user:step", "user:outer", 2),
        ("user:manual", "cell [1]", 1),
    ]
    # the decorated function runs inside its region; the shim's wrapper is not a region
    assert [c.parent for c in got if c.name == "__main__:step"] == ["user:step", "user:step"]
    assert not [c for c in got if "scorep" in c.name and c.role != ROLE_USER]
    region = next(r for r in rec.regions if r.name == "user:outer")
    assert region.group == "user" and region.line == 6 and region.file.endswith(".py")


def test_user_api_is_a_no_op_without_a_measurement(scorep):
    with scorep.user.region("idle"):
        pass

    @scorep.user.region("deco")
    def f():
        return 3

    assert f() == 3
    scorep.user.region_begin("x")
    scorep.user.region_end("x")
    scorep.instrumenter.disable()
    scorep.instrumenter.enable()
    scorep.user.disable_recording()
    scorep.user.enable_recording()
    scorep.user.parameter_int("n", 1)
    assert scorep.instrumenter.get_registered() is False


def test_instrumenter_disable_pauses_function_recording(tmp_path, scorep):
    source = (
        "def a():\n    return 1\n"
        "def b():\n    return 2\n"
        "def c():\n    return 3\n"
        "a()\n"
        "scorep.instrumenter.disable()\n"
        "b()\n"
        "with scorep.user.region('still here'):\n"
        "    b()\n"
        "scorep.instrumenter.enable()\n"
        "c()\n"
        "with scorep.instrumenter.disable():\n"
        "    b()\n"
        "with scorep.instrumenter.disable('quiet'):\n"
        "    b()\n"
        "a()\n"
    )
    got = calls(measure(tmp_path, source, scorep))
    assert [c.name for c in got if c.depth >= 1] == [
        "__main__:a",
        "user:still here",
        "__main__:c",
        "user_instrumenter:quiet",
        "__main__:a",
    ]


def test_disable_recording_pauses_everything(tmp_path, scorep):
    source = (
        "def a():\n    return 1\n"
        "a()\n"
        "scorep.user.disable_recording()\n"
        "a()\n"
        "with scorep.user.region('hidden'):\n"
        "    a()\n"
        "scorep.user.enable_recording()\n"
        "with scorep.user.region('shown'):\n"
        "    a()\n"
    )
    got = calls(measure(tmp_path, source, scorep))
    assert [(c.name, c.parent) for c in got if c.depth >= 1] == [
        ("__main__:a", "cell [1]"),
        ("user:shown", "cell [1]"),
        ("__main__:a", "user:shown"),
    ]


def test_unclosed_user_region_is_closed_at_stop(tmp_path, scorep):
    rec = measure(tmp_path, "scorep.user.region_begin('left open')\n", scorep)
    got = calls(rec)
    assert [c.name for c in got if c.role == ROLE_USER] == ["user:left open"]
    assert any("was not closed" in m for m in rec.notes["messages"])


def test_detect_scorep_ignores_the_shim(scorep):
    found = detect_scorep()
    assert set(found) == {"available", "scorep_config", "bindings", "message"}
    if not found["scorep_config"]:
        assert found["available"] is False
        assert "scorep-config is not on PATH" in found["message"]
    # the shim is on sys.path and imported, yet it does not count as the bindings
    assert shim_path() in sys.path and "scorep" in sys.modules
    real = importlib.machinery.PathFinder.find_spec(
        "scorep", [p for p in sys.path if os.path.realpath(p) != os.path.realpath(shim_path())]
    )
    assert found["bindings"] is (real is not None)
