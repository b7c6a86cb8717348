"""Issue 24's scale by simulation: a 1,024-rank OTF2 archive of 100M events in Score-P's
layout (a location group per rank on 16 nodes, MPI_Send / MPI_Recv with MpiSend / MpiRecv
records to the 4 neighbours on a 32 x 32 torus, MPI_Allreduce with MpiCollectiveBegin /
End; the last 8 ranks compute 1.5x longer), made by server_ext/tests/synthetic_mpi.py
straight through the numpy OTF2 encoder, one rank at a time.

Figures:

- the archive's generation (events/s, wall; only when it is made: it is kept under
  benchmarks/.data/ and reused, its index removed before each run);
- in child processes, INGEST_ROUNDS interleaved rounds each: the OTF2 read by the native
  scanner and the whole index build (read, pairing calls, levels, call paths, writing) in
  events per CPU-second (target >= 10M: the issue's ingest), the build's peak RSS;
- through a real jupyter server (``_mpi_figures``): the first timeline answer (builds the
  index), heat-map timeline p95 (target <= 50 ms) interleaved with one row per rank and
  the ranks in view, GET ranks with the 1,024 x 1,024 matrix (target <= 100 ms), GET
  summary and its imbalance verdict (it names the slow ranks);
- the first GET ranks with the index built and the matrix not (the server reads the
  14.7M MPI records with the native scanner), beside the same records read through
  libotf2's callbacks, the way before the scanner read them (``mpi_read.read_traffic``
  alone in a child process, each way once; the callbacks take ~15-20 s).

Size: ``MPI_EVENTS`` (default 100,000,000, the issue's) events over ``MPI_RANKS`` (1,024)
ranks; steps per rank follow from them (68 events a step). On 2 shared cores a run takes
~4-6 min with the archive made (~1.3 GB on disk, ~1 min), the index build being most of it.

Run: ``python benchmarks/mpi_100m_events.py`` (or ``MPI_EVENTS=10000000 ...`` for a quick
look).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
# This tree's code after PYTHONPATH's: PYTHONPATH=<another tree>/kernel:<...>/server_ext
# measures that tree's server on the same archive (before/after comparisons).
_FIRST = 1 + len([p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
sys.path[_FIRST:_FIRST] = [
    str(HERE),
    str(HERE.parent / "kernel"),
    str(HERE.parent / "server_ext"),
    str(HERE.parent / "server_ext" / "tests"),
]

from _mpi_figures import report_server, server_figures, spread  # noqa: E402
from _report import report  # noqa: E402

EVENTS = int(os.environ.get("MPI_EVENTS", "100000000"))
RANKS = int(os.environ.get("MPI_RANKS", "1024"))
INGEST_ROUNDS = 2
DATA = HERE / ".data"


def archive() -> tuple[Path, dict | None]:
    """The experiment (made once and kept), and how its making went when it was made now."""
    from scorep_kernel import experiment as ex

    exp = DATA / f"mpi-{RANKS}r-{EVENTS}e" / "stencil"
    made = None
    if not (exp / "manifest.json").exists():
        import synthetic_mpi  # (needs this tree's kernel: its numpy MPI encoder)

        shutil.rmtree(exp.parent, ignore_errors=True)
        exp.parent.mkdir(parents=True)
        wall, cpu = time.perf_counter(), time.process_time()
        info = synthetic_mpi.write_mpi_experiment(exp, ranks=RANKS, events=EVENTS)
        made = {**info, "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}  # fmt: skip
    shutil.rmtree(exp / ex.INDEX_DIR, ignore_errors=True)
    return exp, made


def child(which: str, exp: str) -> None:
    """One ingest in this (child) process: prints CPU seconds, events and peak RSS."""
    from jupyterlab_scorep.trace import index_build, otf2_read
    from scorep_kernel import experiment as ex

    share = None
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    c = time.process_time()
    if which == "read":
        otf2_read.read_trace(os.path.join(exp, ex.OTF2_ANCHOR))
    else:
        with tempfile.TemporaryDirectory() as out:
            meta = index_build.build_index(exp, out)
            share = meta["build_s"]["read"] / meta["build_s"]["total"]
    cpu = time.process_time() - c
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"cpu": cpu, "rss_mb": r1.ru_maxrss / 1024, "read_share": share,
                      "sys": r1.ru_stime - r0.ru_stime}))  # fmt: skip


def traffic_child(decoder: str, exp: str) -> None:
    """GET ranks' MPI read (``mpi_read.read_traffic``) in this (child) process: prints its
    wall and CPU seconds and the messages it counted."""
    from jupyterlab_scorep.trace import mpi_read
    from scorep_kernel import experiment as ex

    wall, cpu = time.perf_counter(), time.process_time()
    traffic = mpi_read.read_traffic(os.path.join(exp, ex.OTF2_ANCHOR), decoder)
    print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                      "messages": sum(map(sum, traffic["messages"]))}))  # fmt: skip


def _child(*args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, *args], check=True, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path[1 : _FIRST + 4])},
    )  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ingest(exp: Path) -> dict[str, list[float]]:
    """INGEST_ROUNDS rounds of (read, build), alternating which goes first, each in a fresh
    interpreter (so that each peak RSS is its own)."""
    out: dict[str, list[float]] = {"read": [], "build": [], "rss": [], "share": [], "sys": []}
    for i in range(INGEST_ROUNDS):
        for which in ("read", "build") if i % 2 == 0 else ("build", "read"):
            proc = subprocess.run(
                [sys.executable, __file__, "--ingest", which, str(exp)],
                check=True, capture_output=True, text=True,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path[1 : _FIRST + 4])},
            )  # fmt: skip
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            out[which].append(got["cpu"])
            if which == "build":
                out["rss"].append(got["rss_mb"])
                out["share"].append(got["read_share"])
                out["sys"].append(got["sys"] / got["cpu"])
    return out


def main() -> None:
    from scorep_kernel import manifest as mf

    exp, made = archive()
    events = int(mf.read_manifest(exp)["measurement"]["events"])
    figures = server_figures(exp.parent, exp, RANKS)
    rounds = ingest(exp)
    traffic = {d: _child("--traffic", d, str(exp)) for d in ("auto", "callbacks")}
    size = f"{RANKS} ranks, {events / 1e6:.0f}M events"
    if made is not None:
        report(f"synthetic MPI archive written ({size})", events / made["wall"], "events/s",
               note=f"{made['wall']:.1f} s wall, {made['cpu']:.1f} s CPU, peak RSS "
               f"{made['rss_mb']:.0f} MB; {made['mpi_events'] / 1e6:.1f}M MPI records, "
               f"{made['iterations']} steps per rank")  # fmt: skip
    report_server(figures, f", {events / 1e6:.0f}M events")
    read = [events / c for c in rounds["read"]]
    build = [events / c for c in rounds["build"]]
    report(f"whole index build of the {size} (read, levels, call paths, write)",
           float(np.median(build)), "events/CPU-s",
           peer="OTF2 read alone (native scanner)", peer_value=float(np.median(read)),
           target=">= 1e7", met=bool(np.median(build) >= 1e7),
           note=f"build {spread([r / 1e6 for r in build], 2)} M, read "
           f"{spread([r / 1e6 for r in read], 2)} M, over {INGEST_ROUNDS} interleaved rounds "
           f"in fresh interpreters; events count the MPI records the scanner steps over; the "
           f"read (each rank's calls paired as it is read) is "
           f"{100 * float(np.median(rounds['share'])):.0f} % of the build's wall time; "
           f"{100 * float(np.median(rounds['sys'])):.0f} % of the build's CPU time is the "
           "kernel's (first touches of memory: this VM's page faults are slow)")  # fmt: skip
    scan, called = traffic["auto"], traffic["callbacks"]
    report(f"first GET ranks, cold (index built, matrix not), {size}", figures.ranks_first_ms,
           "ms", peer="its MPI records read through libotf2's callbacks (read alone)",
           peer_value=1e3 * called["wall"], target="well under 5000",
           met=bool(figures.ranks_first_ms < 5000),
           note=f"over HTTP, the server's first GET ranks?matrix=pairs; read_traffic alone in "
           f"child processes: native scanner {scan['wall']:.2f} s wall ({scan['cpu']:.2f} s "
           f"CPU), libotf2's callbacks {called['wall']:.1f} s wall ({called['cpu']:.1f} s "
           f"CPU); {scan['messages']:,} messages both ways"
           + ("" if scan["messages"] == called["messages"] else " (DIFFER)"))  # fmt: skip
    report(f"index build peak RSS ({size})", float(np.median(rounds["rss"])), "MB",
           note=f"{spread(rounds['rss'], 0)} over {INGEST_ROUNDS} builds")  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["--ingest"]:
        child(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["--traffic"]:
        traffic_child(sys.argv[2], sys.argv[3])
    else:
        main()
