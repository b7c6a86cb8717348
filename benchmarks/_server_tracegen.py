"""Synthetic OTF2 experiments for the server benchmarks, cached under benchmarks/.data/.

The generator itself lives with the server's tests (server_ext/tests/synthetic_trace.py),
which use it for the load and event-loop tests; the benchmarks import it from there, so
both measure the same traces.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
sys.path[:0] = [
    str(HERE.parent / "kernel"),
    str(HERE.parent / "server_ext"),
    str(HERE.parent / "server_ext" / "tests"),
]

from synthetic_trace import call_trees, synth_thread, write_experiment  # noqa: E402

__all__ = ["DATA", "cached_experiment", "call_trees", "synth_thread", "write_experiment"]


def cached_experiment(name: str, n_events: int, **kw) -> Path:
    """Generate once under benchmarks/.data/<name>/ (gitignored), reuse afterwards."""
    exp = DATA / name
    if not (exp / "manifest.json").exists():
        t = time.perf_counter()
        write_experiment(exp, n_events, **kw)
        print(
            f"generated {exp} ({n_events:,} events) in {time.perf_counter() - t:.1f} s",
            file=sys.stderr,
        )
    return exp


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else DATA / f"synth-{n}"
    t = time.perf_counter()
    write_experiment(out, n)
    dt = time.perf_counter() - t
    print(f"wrote {n:,} events to {out} in {dt:.2f} s ({n / dt / 1e6:.2f} M events/s)")
    print(os.popen(f"du -sh {out}").read().strip())
