"""Real Score-P traces for the readers' tests and the ingest benchmark: scripts run under
``python -m scorep`` (Score-P 8.4 from ../shared/scorep, /opt/scorep), directly, not
through the kernel (test_scorep_native_read.py in scorep_runs/ reads the kernel's).

Each archive is made to hold what the server's readers must get right: Score-P's own
records (Metric, BufferFlush, MeasurementOnOff, ProgramBegin, thread and MPI records) and
its local definitions (region mappings where ranks define regions in different orders,
clock offsets between ranks).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SCOREP_BIN = "/opt/scorep/bin"

THREADS = """
import threading

def leaf(x):
    return x * 2

def work(n):
    for i in range(n):
        leaf(i)

t = threading.Thread(target=work, args=(300,))
t.start()
work(200)
t.join()
"""

# Every rank: flushes (a 2M buffer), recording switched off and on, rusage metrics; odd
# ranks define a region first that even ranks never see, so their region ids are mapped.
MPI_EVERYTHING = """
from mpi4py import MPI
import scorep.user

comm = MPI.COMM_WORLD
rank = comm.Get_rank()

def only_odd(n):
    return n + 1

def h(i):
    return i

if rank % 2:
    only_odd(3)
for i in range(30000):
    h(i)
scorep.user.disable_recording()
h(1)
scorep.user.enable_recording()
total = comm.allreduce(rank)
if rank == 0:
    comm.send(total, dest=1)
elif rank == 1:
    comm.recv(source=0)
comm.Barrier()
"""

# Messages on communicators Score-P numbers per process (each rank's local definitions map
# them): rank r sends 8 (r + 1) bytes to every other process through a communicator whose
# ranks are the world's reversed, then receives theirs; a collective on a split half.
MPI_COMMS = """
from mpi4py import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
# a communicator of all ranks but 0 first: the local ids of the ones after it differ by rank
rest = world.Split(MPI.UNDEFINED if rank == 0 else 1, rank)
rev = world.Split(0, size - 1 - rank)  # rank i of rev is process size - 1 - i
half = world.Split(rank % 2, rank)
for step in range(1, size):
    to = (rank + step) % size
    rev.Send(bytearray(8 * (rank + 1)), dest=size - 1 - to)
for step in range(1, size):
    rev.Recv(bytearray(1024), source=MPI.ANY_SOURCE)
half.Barrier()  # (mpi4py's allreduce of objects would add its own sends)
world.Barrier()
"""

FLUSH = """
def h(i):
    return i

for i in range(60000):
    h(i)
"""

OFF = """
import scorep.user

def f(n):
    return sum(range(n))

f(1)
scorep.user.disable_recording()
f(2)
scorep.user.enable_recording()
f(3)
"""

FILTER = """SCOREP_REGION_NAMES_BEGIN
  EXCLUDE *leaf*
SCOREP_REGION_NAMES_END
"""


def calls(n_outer: int, n_inner: int) -> str:
    """A script of n_outer * (n_inner + 1) calls: 2 events each."""
    return f"""
def leaf(x):
    return x + 1

def mid(n):
    for i in range(n):
        leaf(i)

for _ in range({n_outer}):
    mid({n_inner})
"""


def scorep_env() -> dict[str, str]:
    env = dict(os.environ)
    if shutil.which("scorep-config") is None and os.path.isdir(SCOREP_BIN):
        env["PATH"] = SCOREP_BIN + os.pathsep + env.get("PATH", "")
    return env


def available() -> bool:
    try:
        import scorep  # noqa: F401  # the bindings
    except ImportError:
        return False
    return shutil.which("scorep-config", path=scorep_env()["PATH"]) is not None


def mpi_available() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return shutil.which("mpirun") is not None


def record(
    out: Path,
    script: str,
    *,
    env: dict[str, str] | None = None,
    binding_args: tuple[str, ...] = (),
    ranks: int = 0,
    timeout: float = 300,
) -> Path:
    """Run ``script`` under Score-P with tracing on; the experiment directory (``out``,
    which must not exist; its parent is made). ``ranks``: run as that many MPI ranks."""
    out.parent.mkdir(parents=True, exist_ok=True)
    path = out.parent / f"{out.name}.py"
    path.write_text(script)
    run_env = scorep_env()
    run_env.update(
        SCOREP_ENABLE_TRACING="true",
        SCOREP_ENABLE_PROFILING="false",
        SCOREP_EXPERIMENT_DIRECTORY=str(out),
    )
    run_env.update(env or {})
    argv = [sys.executable, "-m", "scorep", *binding_args, str(path)]
    if ranks:
        argv = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), *argv[:3]]
        argv += ["--mpp=mpi", *binding_args, str(path)]
    done = subprocess.run(
        argv, cwd=out.parent, env=run_env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0 and (out / "traces.otf2").exists(), done.stdout + done.stderr
    return out
