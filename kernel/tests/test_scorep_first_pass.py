"""The bindings' first pass done once and kept (worker.scorep_first_pass), with real
Score-P: a process started from its environment has Score-P loaded but not measuring until
it calls SCOREP_InitMeasurement, and a second kernel finds the library compiled."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from scorep_kernel.measure.detect import detect_scorep
from scorep_kernel.worker import scorep_first_pass as first_pass

SCOREP = detect_scorep()
needs_scorep = pytest.mark.skipif(not SCOREP["available"], reason=SCOREP["message"])
pytestmark = pytest.mark.timeout(180)


def test_the_options_scorep_config_gets_are_the_bindings_choice():
    args = ["--noinstrumenter", "--thread=pthread", "--instrumenter-type=profile", "--mpi",
            "-v", "--keep-files", "--io=posix"]  # fmt: skip
    assert first_pass.config_args(args) == ["--thread=pthread", "--mpp=mpi", "--io=posix", "--user"]
    assert first_pass.config_args(["--user", "--", "--thread=omp"]) == ["--user"]


SCRIPT = textwrap.dedent("""
    import ctypes, os, sys
    lib = ctypes.CDLL(None)
    exp = os.environ["SCOREP_EXPERIMENT_DIRECTORY"]
    print("loaded", lib.SCOREP_IsInitialized(), os.path.exists(exp))
    lib.SCOREP_InitMeasurement()
    print("started", lib.SCOREP_IsInitialized(), os.path.exists(exp))
""")


@needs_scorep
def test_a_worker_environment_defers_the_measurement_and_the_library_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREP_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    config = first_pass.config_args(["--thread=pthread"])
    made = first_pass._cached_first_pass(sys.executable, config, dict(os.environ))
    assert made is not None and made.deferred
    assert first_pass.CONSTRUCTOR not in made.env["LD_PRELOAD"]
    assert made.lib_dir.startswith(str(tmp_path / "cache"))
    kept = sorted(os.listdir(made.lib_dir))
    # a later kernel: the same library, nothing compiled (no temporary directory of the
    # bindings is made, and the kept one is unchanged)
    stamp = os.stat(made.lib_dir).st_mtime_ns
    again = first_pass._cached_first_pass(sys.executable, config, dict(os.environ))
    assert again == made and os.stat(made.lib_dir).st_mtime_ns == stamp
    assert sorted(os.listdir(made.lib_dir)) == kept

    script = tmp_path / "probe.py"
    script.write_text(SCRIPT)
    exp = tmp_path / "exp"
    env = made.apply({**os.environ, "SCOREP_ENABLE_TRACING": "false"})
    env["SCOREP_EXPERIMENT_DIRECTORY"] = str(exp)
    out = subprocess.run(
        [sys.executable, "-m", "scorep", "--thread=pthread", "--noinstrumenter", str(script)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["loaded 0 False", "started 1 True"], out.stdout
    assert (exp / "profile.cubex").exists()  # written at the exit
    assert os.path.isdir(made.lib_dir)  # the bindings' clean-up left the kept library alone
