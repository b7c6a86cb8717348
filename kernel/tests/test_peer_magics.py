"""scorep-jupyter's magics with their meaning here (peer_magics, write_mode): state
transfer settings, write mode's script and run script, the Vampir launch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_kernel_harness import KernelHandle

from scorep_kernel.write_mode.cell_code import indented, script_cell
from scorep_kernel.write_mode.script_files import ScriptRecording, base_path

pytestmark = pytest.mark.timeout(300)

SUB = {"scorep": {"profile": True, "backend": "builtin", "isolation": "subprocess"}}


def test_a_cell_as_script_code():
    cell = script_cell("%env A=1\n%env SCOREP_TOTAL_MEMORY=3g\nx = 1\nx + 1", instrumented=False)
    assert cell.scorep_env == {"SCOREP_TOTAL_MEMORY": "3g"}  # for the run script, not here
    assert cell.uses_ipython
    assert cell.code == (
        "with scorep.instrumenter.disable():\n"
        "    get_ipython().run_line_magic('env', 'A=1')\n"
        "    x = 1\n"
        "    _ = x + 1\n"
        "    if _ is not None:  # the cell's value, as the notebook shows it\n"
        "        print(repr(_))\n"
    )
    assert script_cell("x = 2;", instrumented=True).code == "x = 2;\n"  # ";" hides the value
    assert script_cell("print(1)", instrumented=True).code == "print(1)\n"
    only_settings = script_cell("%env SCOREP_ENABLE_TRACING=1", instrumented=False)
    assert only_settings.empty and only_settings.scorep_env == {"SCOREP_ENABLE_TRACING": "1"}


def test_indenting_keeps_multi_line_strings_and_fstrings_as_they_are():
    code = 'def f():\n    s = """a\n  b"""\n    return f"""{s}\nc"""\nf()\n'
    out = indented(code)
    assert out == '    def f():\n        s = """a\n  b"""\n        return f"""{s}\nc"""\n    f()\n'
    namespace: dict = {}
    exec("if True:\n" + out, namespace)
    assert namespace["f"]() == "a\n  b\nc"


def test_the_files_run_and_print_what_the_notebook_printed(tmp_path):
    recording = ScriptRecording(base_path("sub/made.py", tmp_path))
    recording.start()
    assert recording.script == tmp_path / "sub" / "made.py"
    recording.scorep_env["SCOREP_TOTAL_MEMORY"] = "64M"
    recording.add("import os\nos.environ['SEEN'] = 'yes'\ndata = [1, 2]", instrumented=False)
    recording.add("text = '''x\n y'''\nprint(len(text))\nsum(data)", instrumented=True)
    recording.add("!echo from-the-shell\n%env SEEN", instrumented=False)
    recording.write()
    run_sh = recording.run_script.read_text()
    assert "export SCOREP_TOTAL_MEMORY=64M\n" in run_sh
    assert f"-m scorep --thread=pthread {recording.script}" in run_sh
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["SCOREP_KERNEL_BACKEND"] = "builtin"
    done = subprocess.run(
        ["bash", str(recording.run_script)], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["4", "3", "from-the-shell", "'yes'"]
    assert done.stderr == ""
    assert list((tmp_path / "scorep-experiments").iterdir())  # the builtin tracer's run
    recording.remove()
    assert not recording.script.exists() and not recording.run_script.exists()


def test_the_builtin_runner_exits_as_the_script_does(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nprint('before')\nsys.exit(3)\n")
    done = subprocess.run(
        [sys.executable, "-m", "scorep_kernel.script", "-v", str(script)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 3 and done.stdout == "before\n"
    assert "experiment in" in done.stderr  # -v says where
    missing = subprocess.run(
        [sys.executable, "-m", "scorep_kernel.script", "nope.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert missing.returncode == 2 and "no such script: nope.py" in missing.stderr


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    handle = KernelHandle(tmp_path_factory.mktemp("peer-magics"))
    yield handle
    handle.shutdown()


def test_marshalling_settings_say_what_they_map_to_and_refuse_others(kernel):
    said = kernel.run("%%marshalling_settings\nMARSHALLER=dill\nMODE=disk")
    assert said.status == "ok"
    assert said.stdout().startswith("MARSHALLER=dill, MODE=disk: the namespace travels")
    assert "shared-memory files" in said.stdout()
    assert "MODE=disk" in kernel.run("%%marshalling_settings").stdout()  # what is in use
    bad = kernel.run("%%marshalling_settings\nMARSHALLER=pickle5")
    assert bad.status == "error" and "dill, cloudpickle, parallel_marshall" in bad.reply["evalue"]
    bad = kernel.run("%%marshalling_settings\nMODE=tape")
    assert bad.status == "error" and "memory" in bad.reply["evalue"]


def test_mode_decides_how_large_arrays_travel(kernel):
    # MODE=memory: an array that comes back is written into the kernel's own; MODE=disk:
    # through shared-memory files, so a new array (with the same values) takes its place
    for mode, same_object in (("disk", False), ("memory", True)):
        assert kernel.run(f"%%marshalling_settings\nMODE={mode}").status == "ok"
        kernel.run("import numpy as np\narr = np.zeros(2_000_000)\nfirst = id(arr)")
        assert kernel.run("arr += 1\nnew = np.ones(2_000_000)", SUB).status == "ok"
        got = kernel.value("(id(arr) == first, float(arr[1]), float(new.sum()))")
        assert got == (same_object, 1.0, 2_000_000.0)


def test_write_mode_records_and_runs_nothing(kernel, tmp_path):
    base = tmp_path / "rec"
    start = kernel.run(f"%%start_writefile {base}")
    assert start.stdout().splitlines()[1:] == [f"{base}.py", f"{base}_run.sh"]
    again = kernel.run("%%start_writefile other")
    assert "on already" in again.stdout()
    assert kernel.run("never_run = 1").stdout() == "Recorded, not instrumented.\n"
    assert kernel.run("%%execute_with_scorep\ny = 2").stdout() == "Recorded, instrumented.\n"
    assert kernel.run("x = 3", SUB).stdout() == "Recorded, instrumented.\n"  # the toggle too
    assert "does not apply" in kernel.run("%%marshalling_settings\nMODE=disk").stdout()
    done = kernel.run("%%end_writefile")
    assert done.stdout() == f"Wrote {base}.py (3 cells); run it with {base}_run.sh.\n"
    assert kernel.value("'never_run' in globals()") is False
    script = Path(f"{base}.py").read_text()
    assert "with scorep.instrumenter.disable():\n    never_run = 1\n" in script
    assert "# --- cell 2 (instrumented) ---\ny = 2\n" in script
    assert "not on" in kernel.run("%%end_writefile").stdout()


def test_vampir_launch_rides_in_the_bundle_until_switched_off(kernel):
    on = kernel.run("%%enable_vampir_launch_on_scorep_instrumented")
    assert on.status == "ok" and "Open in Vampir" in on.stdout()
    cell = kernel.run("v = 1", SUB)
    assert cell.bundle()["open"] == ["vampir"]
    off = kernel.run("%%disable_vampir_launch")
    assert off.stdout() == "Profiled cells no longer open in Vampir.\n"
    assert "open" not in kernel.run("v = 2", SUB).bundle()
