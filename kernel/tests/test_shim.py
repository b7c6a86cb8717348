"""The ``scorep`` stand-in: user regions and instrumenter switches in the builtin tracer."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest
from test_tracer_util import calls, run_cell

from scorep_kernel.formats.recording import ROLE_USER
from scorep_kernel.measure.detect import detect_scorep
from scorep_kernel.measure.measure_config import MeasureConfig
from scorep_kernel.measure.session import Measurement
from scorep_kernel.shim import SHIM_DIR, install_scorep_shim


def _forget_scorep() -> None:
    for name in [n for n in sys.modules if n == "scorep" or n.startswith("scorep.")]:
        del sys.modules[name]


@pytest.fixture
def scorep():
    saved_path = list(sys.path)
    _forget_scorep()  # a real `scorep` imported by another test
    assert install_scorep_shim() is True
    import scorep as module

    assert module.BUILTIN_SHIM is True
    yield module
    sys.path[:] = saved_path
    _forget_scorep()


def measure(tmp_path, source, scorep, config: MeasureConfig | None = None):
    m = Measurement(tmp_path, config)
    m.start()
    try:
        run_cell(m, "cell [1]", source, {"__name__": "__main__", "scorep": scorep})
    finally:
        rec = m.stop()
    return rec


def test_the_shim_stands_in_unless_scorep_measures_the_process():
    code = (
        "import sys\n"
        "from scorep_kernel.shim import SHIM_DIR, install_scorep_shim\n"
        "assert install_scorep_shim() is True and sys.path[0] == SHIM_DIR\n"
        "assert install_scorep_shim() is True and sys.path.count(SHIM_DIR) == 1\n"
        "import scorep.user, scorep.instrumenter\n"
        "print(scorep.__file__)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "SCOREP_PYTHON_BINDINGS_INITIALISED"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode == 0, out.stderr
    # the shim, whether or not the real bindings are installed
    assert out.stdout.strip().startswith(SHIM_DIR)
    # A process that Score-P measures keeps the real bindings: the shim is not added.
    under_scorep = (
        "import sys\n"
        "from scorep_kernel.shim import SHIM_DIR, install_scorep_shim\n"
        "assert install_scorep_shim() is False and SHIM_DIR not in sys.path\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", under_scorep], capture_output=True, text=True, timeout=60,
        env={**env, "SCOREP_PYTHON_BINDINGS_INITIALISED": "true"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr


def test_the_shim_path_never_travels_with_the_namespace(tmp_path):
    from scorep_kernel.state import transfer

    saved = list(sys.path)
    try:
        install_scorep_shim()
        packet = transfer.pack({"x": 1})
        sys.path[:] = [p for p in sys.path if p != SHIM_DIR]  # the other process
        sys.path.insert(1, SHIM_DIR + "-elsewhere")
        unpacked = transfer.unpack(packet.header)
        ns: dict = {}
        transfer.apply_in_worker(ns, unpacked, ())
        packet.release()
        assert SHIM_DIR not in sys.path  # not brought by the sender
        install_scorep_shim()
        sys.path.append("/tmp/added-by-the-other-side")
        back = transfer.pack(ns)
        sys.path[:] = saved
        install_scorep_shim()
        transfer.apply_in_kernel({}, transfer.unpack(back.header), back)
        back.release()
        assert sys.path[0] == SHIM_DIR and sys.path.count(SHIM_DIR) == 1
        assert sys.path[-1] == "/tmp/added-by-the-other-side"
    finally:
        sys.path[:] = saved


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
        "scorep.instrumenter.unregister()\n"
        "b()\n"
        "with scorep.user.region('still here'):\n"
        "    b()\n"
        "scorep.instrumenter.register()\n"
        "c()\n"
        "scorep.instrumenter.disable()\n"  # a plain call does nothing, as in the bindings
        "a()\n"
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
        "__main__:a",
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


def test_unclosed_user_region_is_closed_at_the_cell_end(tmp_path, scorep, capsys):
    rec = measure(tmp_path, "scorep.user.region_begin('left open')\n", scorep)
    got = calls(rec)
    assert [(c.name, c.parent) for c in got if c.role == ROLE_USER] == [
        ("user:left open", "cell [1]")
    ]
    note = "'left open' left open by the cell: closed at its end"
    assert any(note in m for m in rec.notes["messages"])
    assert note in capsys.readouterr().err


def test_detect_scorep_ignores_the_shim(scorep):
    found = detect_scorep()
    assert set(found) == {"available", "scorep_config", "bindings", "message"}
    if not found["scorep_config"]:
        assert found["available"] is False
        assert "scorep-config is not on PATH" in found["message"]
    # the shim is on sys.path and imported, yet it does not count as the bindings
    assert SHIM_DIR in sys.path and "scorep" in sys.modules
    real = importlib.machinery.PathFinder.find_spec(
        "scorep", [p for p in sys.path if os.path.realpath(p) != os.path.realpath(SHIM_DIR)]
    )
    assert found["bindings"] is (real is not None)


def test_noinstrumenter_and_the_switches_as_decorators(tmp_path, scorep):
    """--noinstrumenter (``instrumenter=False``): only what the code asks for; enable() and
    disable() decorate functions as they wrap with-blocks."""
    source = (
        "def a():\n    return 1\n"
        "@scorep.instrumenter.enable()\n"
        "def b():\n    return a()\n"
        "@scorep.instrumenter.disable()\n"
        "def c():\n    return a()\n"
        "@scorep.user.region()\n"
        "def d():\n    return a()\n"
        "a()\n"
        "b()\n"
        "d()\n"
        "scorep.instrumenter.register()\n"
        "c()\n"
        "a()\n"
    )
    got = calls(measure(tmp_path, source, scorep, MeasureConfig(instrumenter=False)))
    assert [(c.name, c.parent) for c in got if c.depth >= 1] == [
        ("__main__:b", "cell [1]"),
        ("__main__:a", "__main__:b"),
        ("__main__:d", "cell [1]"),  # the decorator's region; what it calls stays out
        ("__main__:a", "cell [1]"),
    ]
    assert not [c for c in got if c.name.startswith("functools")]


def test_rewind_drops_the_rewound_calls(tmp_path, scorep):
    source = (
        "def a():\n    return 1\n"
        "def b():\n    return 2\n"
        "scorep.user.rewind_begin('r')\n"
        "a()\n"
        "scorep.user.rewind_end('r', True)\n"
        "scorep.user.rewind_begin('k')\n"
        "b()\n"
        "scorep.user.rewind_end('k', False)\n"
    )
    rec = measure(tmp_path, source, scorep)
    assert [c.name for c in calls(rec) if c.depth >= 1] == ["__main__:b"]
    (thread,) = rec.threads
    assert thread.markers is not None
    assert [(m.kind, m.value) for m in thread.markers.items] == [
        ("on_off", False),
        ("on_off", True),
    ]


def test_error_region_and_parameters_in_the_trace(tmp_path, scorep, capsys, readback):
    if not readback.otf2_print_available():
        pytest.skip("otf2-print is not installed")
    source = (
        "scorep.user.parameter_int('n', -3)\n"
        "scorep.user.parameter_uint('u', 7)\n"
        "scorep.user.parameter_string('s', 'text')\n"
        "scorep.user.region_end('never begun')\n"
        "scorep.user.region_end('nor this')\n"
    )
    rec = measure(tmp_path, source, scorep)
    err = capsys.readouterr().err
    assert err.count("SCOREP_BINDING_PYTHON ERROR") == 2  # once per run, as the bindings
    assert [c.name for c in calls(rec) if c.depth >= 1] == ["error_region", "error_region"]
    from scorep_kernel.formats.otf2_writer import write_otf2

    write_otf2(rec, tmp_path)
    text = subprocess.run(
        ["otf2-print", str(tmp_path / "traces.otf2")], capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r'PARAMETER_INT64 .*Parameter: "n" <\d+>, Value: -3', text)
    assert re.search(r'PARAMETER_UINT64 .*Parameter: "u" <\d+>, Value: 7', text)
    assert re.search(r'PARAMETER_STRING .*Parameter: "s" <\d+>, Value: "text"', text)
    leave = r'PARAMETER_STRING .*Parameter: "leave-region" <\d+>, Value: "user:never begun"'
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if re.search(leave, line))
    # inside its error_region: the enter before, the leave after
    assert "ENTER" in lines[at - 1] and '"error_region"' in lines[at - 1]
    assert "LEAVE" in lines[at + 1] and '"error_region"' in lines[at + 1]


def test_force_finalize_ends_the_recording(tmp_path, scorep):
    source = (
        "def a():\n    return 1\n"
        "def b():\n    return 2\n"
        "a()\n"
        "scorep.user.force_finalize()\n"
        "b()\n"
        "with scorep.user.region('late'):\n"
        "    pass\n"
    )
    got = calls(measure(tmp_path, source, scorep))
    assert [c.name for c in got if c.depth >= 1] == ["__main__:a"]
