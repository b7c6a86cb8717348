"""Real Score-P archives for the server benchmarks, recorded once under benchmarks/.data/.

Recorded by Score-P itself (``python -m scorep``, the helper the server's tests use:
server_ext/tests/scorep_traces.py), so the readers meet what Score-P writes: a plain run
of 2M calls' events; one with rusage metrics on every Enter/Leave; two MPI ranks whose
region ids are mapped and whose clocks are corrected.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
sys.path.insert(0, str(HERE.parent / "server_ext" / "tests"))

import scorep_traces  # noqa: E402

MPI_CALLS = """
from mpi4py import MPI

rank = MPI.COMM_WORLD.Get_rank()

def only_odd(n):
    return n + 1

def leaf(x):
    return x + 1

def mid(n):
    for i in range(n):
        leaf(i)

if rank % 2:
    only_odd(3)
for _ in range({n_outer}):
    mid(999)
MPI.COMM_WORLD.Barrier()
"""
BUFFER = {"SCOREP_TOTAL_MEMORY": "512M"}  # no flush: the archives hold the whole run


def archives() -> dict[str, Path]:
    """name -> experiment directory, for the archives Score-P can record here (none without
    Score-P; the MPI one only with mpirun and mpi4py)."""
    if not scorep_traces.available():
        return {}
    kinds: dict[str, tuple[str, dict[str, str], int]] = {
        "2M events, Enter/Leave": (scorep_traces.calls(1000, 999), BUFFER, 0),
        "1M calls with rusage metrics (2M events)": (
            scorep_traces.calls(500, 999),
            {**BUFFER, "SCOREP_METRIC_RUSAGE": "ru_utime,ru_maxrss"},
            0,
        ),
    }
    if scorep_traces.mpi_available():
        kinds["2 MPI ranks, mapped regions and clock offsets (2M events)"] = (
            MPI_CALLS.format(n_outer=500),
            BUFFER,
            2,
        )
    out = {}
    for i, (name, (script, env, ranks)) in enumerate(kinds.items()):
        exp = DATA / f"scorep-ingest-{i}"
        if not (exp / "traces.otf2").exists():
            shutil.rmtree(exp, ignore_errors=True)
            t = time.perf_counter()
            scorep_traces.record(exp, script, env=env, ranks=ranks, timeout=900)
            print(f"recorded {exp} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        out[name] = exp
    return out
