"""``python -m scorep_kernel.script [binding options] SCRIPT [args]``: run a Python script
under the builtin tracer, as ``python -m scorep`` runs one under Score-P (write mode's run
script uses it where Score-P is absent).

The script runs as ``__main__`` with ``import scorep`` reaching the builtin stand-in of
Score-P's user API (``scorep.user.region``, ``scorep.instrumenter``). The experiment is
written where Score-P would write it: ``SCOREP_EXPERIMENT_DIRECTORY`` (an existing one moved
aside first, as Score-P does), else ``scorep-experiments/<id>/`` in the working directory,
which the panel's history and ``jupyter scorep report`` read. Of the bindings' options,
``--noinstrumenter`` / ``--nopython`` keep the instrumenter off on every thread
(``scorep.instrumenter.enable()`` turns it on), ``--instrumenter-file`` runs before the
script, ``--io=runtime:posix`` records file I/O (scorep_kernel.binding_args); the others (``--instrumenter-type``, ``--thread``, ``--mpp``, ...) choose what
Score-P measures with and mean nothing here. Quiet like Score-P: ``-v`` says where the
experiment went. The exit status is the script's.
"""

from __future__ import annotations

import os
import runpy
import sys
import time
import traceback
from pathlib import Path

from scorep_kernel import binding_args, experiment
from scorep_kernel import manifest as mf
from scorep_kernel.runs.named_directory import move_aside
from scorep_kernel.settings import SettingsError

USAGE = "usage: python -m scorep_kernel.script [binding options] SCRIPT [args]"


def _experiment_dir() -> tuple[str, Path]:
    exp_id = experiment.new_experiment_id()
    named = os.environ.get("SCOREP_EXPERIMENT_DIRECTORY")
    if not named:
        path = experiment.default_parent().absolute() / exp_id
        path.mkdir(parents=True)
        return exp_id, path
    path = Path(named).expanduser().absolute()
    if os.path.lexists(path):
        move_aside(path, {})
    path.mkdir(parents=True)
    return exp_id, path


def run(options: list[str], script: Path, args: list[str]) -> int:
    from scorep_kernel.measure.measure_config import MeasureConfig
    from scorep_kernel.measure.session import Measurement
    from scorep_kernel.shim import install_scorep_shim

    exp_id, exp_dir = _experiment_dir()
    text = script.read_text(encoding="utf-8", errors="replace")
    manifest = mf.new_manifest(
        exp_id,
        backend="builtin",
        isolation="subprocess",  # a process of its own, as a script under Score-P
        cells=[mf.cell_record(None, 1, text)],
        scorep_env={k: v for k, v in os.environ.items() if k.startswith("SCOREP_")},
        binding_args=options,
        script=str(script),
    )
    mf.write_manifest(exp_dir, manifest)
    install_scorep_shim()
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.parent))
    binding = binding_args.parse(options)
    measurement = Measurement(str(exp_dir), binding.measure(MeasureConfig(), "builtin"))
    if binding.instrumenter_file:
        binding_args.run_instrumenter_file(binding.instrumenter_file)
    t0 = time.perf_counter()
    measurement.start()
    status, code = mf.STATUS_OK, 0
    try:
        with measurement.cell(script.name, code_filename=str(script)):
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code not in (None, 0) and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
        status = mf.STATUS_OK if code == 0 else mf.STATUS_ERROR
    except KeyboardInterrupt:
        status, code = mf.STATUS_INTERRUPTED, 130
        traceback.print_exc()
    except BaseException:
        status, code = mf.STATUS_ERROR, 1
        traceback.print_exc()
    recording = measurement.stop()
    mf.update_manifest(
        exp_dir,
        status=status,
        end_ns=time.time_ns(),
        wall_s=round(time.perf_counter() - t0, 6),
    )
    measurement.write_files(recording, background=False)
    if "-v" in options or "--verbose" in options:
        print(f"scorep_kernel.script: experiment in {exp_dir}", file=sys.stderr)
    return code


def main(argv: list[str]) -> int:
    options: list[str] = []
    while argv and argv[0].startswith("-"):
        options.append(argv.pop(0))
    if not argv or options in (["-h"], ["--help"]):
        print(USAGE, file=sys.stderr)
        return 0 if options in (["-h"], ["--help"]) else 2
    script = Path(argv[0]).absolute()
    if not script.is_file():
        print(f"scorep_kernel.script: no such script: {argv[0]}", file=sys.stderr)
        return 2
    try:
        return run(options, script, argv[1:])
    except SettingsError as e:  # SCOREP_EXPERIMENT_DIRECTORY cannot be moved aside
        print(f"scorep_kernel.script: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
