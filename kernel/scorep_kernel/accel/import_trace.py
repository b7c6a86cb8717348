"""A torch.profiler trace recorded outside the notebook (a training script's
``export_chrome_trace`` or ``tensorboard_trace_handler`` file) as an experiment, so the
panel, Vampir and Cube show it as they show a profiled cell:

    python -m scorep_kernel.accel.import_trace TRACE.pt.trace.json PARENT_DIR

writes ``PARENT_DIR/<id>/`` (manifest, traces.otf2, profile.cubex, and the trace itself
as torch.pt.trace.json) and prints ``{"path": ...}`` as its last line; a trace it cannot
read is exit status 2 with the cause on stderr. The server's POST import runs it.

The operators and runtime calls of each host thread become that thread's lane (nested as
Kineto nested them); the device activity the streams' lanes. The manifest's ``source``
says where the trace came from.
"""

from __future__ import annotations

import gzip
import json
import shutil
import socket
import sys
from collections import Counter
from pathlib import Path

from scorep_kernel import manifest as mf

from .. import experiment
from ..formats.recording import Recording
from .device_recording import add_to_recording
from .kineto_trace import KinetoTrace, KinetoTraceError, load


def recording_of(trace: KinetoTrace, hostname: str = "") -> Recording:
    """A Recording of the trace alone: no Python calls, the busiest process's threads."""
    span = trace.span_ns
    if span is None:
        raise KinetoTraceError("the trace holds no operators, runtime calls or device activity")
    lo, hi = span
    pid = Counter(e.pid for e in trace.host).most_common(1)[0][0] if trace.host else 0
    origin = lo - 1_000  # monotonic times start at 1 µs: OTF2 wants positive times
    recording = Recording(
        regions=[], threads=[], clock_offset_ns=origin, start_ns=lo - origin,
        end_ns=hi - origin, hostname=hostname, pid=pid,
    )  # fmt: skip
    recording.notes = {"accelerator": add_to_recording(recording, trace)}
    return recording


def import_trace(trace_path: str | Path, parent: str | Path) -> Path:
    from ..measure.files import write_all

    trace_path = Path(trace_path)
    trace = load(trace_path)
    recording = recording_of(trace, socket.gethostname())
    exp_id, exp_dir = experiment.create_experiment_dir(
        explicit=Path(parent) / experiment.new_experiment_id()
    )
    lo = recording.start_ns + recording.clock_offset_ns
    hi = recording.end_ns + recording.clock_offset_ns
    manifest = mf.new_manifest(
        exp_id,
        backend="builtin",
        isolation="subprocess",
        start_ns=lo,
        source={"kind": "torch.profiler", "trace": str(trace_path.resolve())},
    )
    mf.write_manifest(exp_dir, manifest)
    mf.update_manifest(exp_dir, status=mf.STATUS_OK, end_ns=hi, wall_s=(hi - lo) / 1e9)
    target = exp_dir / experiment.KINETO_TRACE  # the trace itself, for HTA and Perfetto
    if trace_path.name.endswith(".gz"):
        target.write_bytes(gzip.decompress(trace_path.read_bytes()))
    else:
        shutil.copyfile(trace_path, target)
    result = write_all(exp_dir, recording)
    if result["errors"]:
        raise RuntimeError("; ".join(result["errors"]))
    return exp_dir


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(
            "usage: python -m scorep_kernel.accel.import_trace TRACE.json PARENT_DIR",
            file=sys.stderr,
        )
        return 2
    try:
        exp_dir = import_trace(args[0], args[1])
    except KinetoTraceError as e:
        print(f"{Path(args[0]).name}: {e}", file=sys.stderr)
        return 2
    print(json.dumps({"path": str(exp_dir)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
