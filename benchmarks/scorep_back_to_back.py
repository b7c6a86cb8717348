"""The paper's two profiled cells under real Score-P, sent back to back (Run All, `jupyter
scorep run`, papermill), against the stock ipykernel in the same run (issue 22's row
"paper cells under real Score-P, subprocess, back to back": target <= +1.0 s over stock).

The cells of examples/gpt.ipynb as paper_overhead.py's "torch first" scenario: the first
profiled cell imports torch and loads the corpus, the model classes run unprofiled, then the
training setup cell is profiled. A fresh kernel per case and round; the Score-P kernel is
first told of the notebook's profiled cells as JupyterLab tells it (profiled_cells_notice),
and the first cell is sent as soon as the kernel answered: no think time anywhere.

Cases, interleaved (every other round reversed):
  (a) the stock `python3` ipykernel;
  (d) `scorep-python`, Score-P in a subprocess;
  (d0) the same with SCOREP_KERNEL_SCOREP_FIRST_PASS=0: every Score-P worker runs the
       bindings' own first pass (scorep-config, gcc) and Score-P measures from the
       process's start, as before worker/scorep_first_pass.py.
Each figure is the median over rounds of (case - that round's stock run), with the range;
the phases (the manifests' timings) say where the time goes. Needs torch and Score-P.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _kernel_client import kernel  # noqa: E402
from _report import report as _report  # noqa: E402

EXAMPLES = HERE.parent / "examples"
ROUNDS = int(os.environ.get("SCOREP_BACK_TO_BACK_ROUNDS", "5"))
PROFILE = {"profile": True, "backend": "scorep", "isolation": "subprocess"}
STOCK = "(a) stock ipykernel"
SCOREP = "(d) Score-P, subprocess"
OLD = "(d0) Score-P, first pass per worker"
CASES = [(STOCK, "python3", None), (SCOREP, "scorep-python", None),
         (OLD, "scorep-python", {"SCOREP_KERNEL_SCOREP_FIRST_PASS": "0"})]  # fmt: skip


def report(name: str, value: float, unit: str, **kwargs) -> None:
    """_report.report, and the note (medians' ranges) as a line of the output too."""
    _report(name, value, unit, **kwargs)
    if kwargs.get("note"):
        print(f"  ({kwargs['note']})")


def steps() -> list[tuple[str, bool]]:
    nb = json.loads((EXAMPLES / "gpt.ipynb").read_text())
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    imports, corpus, model_defs, training = code[:4]
    return [(imports + "\n" + corpus, True), (model_defs, False), (training, True)]


def run_case(kernel_name: str, env: dict | None) -> tuple[float, list[dict]]:
    """(seconds of the two profiled cells, execute_request to reply; their manifests)."""
    total, manifests = 0.0, []
    kernel_env = {**os.environ, **env} if env else None
    with kernel(kernel_name, cwd=str(EXAMPLES), env=kernel_env) as k:
        if kernel_name == "scorep-python":
            k.notice([PROFILE for _code, profiled in steps() if profiled])
        for code, profiled in steps():
            meta = {"scorep": PROFILE} if profiled and kernel_name == "scorep-python" else {}
            r = k.run(code, metadata=meta)
            if r.status != "ok":
                raise SystemExit(f"{kernel_name}: a cell failed: {r.error}")
            if not profiled:
                continue
            total += r.seconds
            bundle = r.mime("application/vnd.scorep.experiment+json")
            if bundle:
                path = Path(bundle["path"])
                manifests.append(wait_manifest(path))
    return total, manifests


def wait_manifest(path: Path, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        manifest = json.loads((path / "manifest.json").read_text())
        if manifest.get("files_status") != "pending" or time.monotonic() > deadline:
            return manifest
        time.sleep(0.2)


def main() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise SystemExit("needs torch: pip install torch==2.13.0 (make bench does)") from None
    if shutil.which("scorep-config") is None:
        raise SystemExit("needs Score-P (scorep-config on PATH)")
    times: dict[str, list[float]] = {}
    phases: dict[str, dict[str, list[float]]] = {}
    for round_no in range(1, ROUNDS + 1):
        for label, kname, env in CASES if round_no % 2 else CASES[::-1]:
            total, manifests = run_case(kname, env)
            times.setdefault(label, []).append(total)
            summed: dict[str, float] = {}
            for m in manifests:
                for key, value in (m.get("timings") or {}).items():
                    summed[key] = summed.get(key, 0.0) + value
                if m.get("files_status") != "ready":
                    print(f"  {label}: files {m.get('files_status')}: {m.get('errors')}")
            for key, value in summed.items():
                phases.setdefault(label, {}).setdefault(key, []).append(value)
            shown = ", ".join(f"{k} {v:.2f}" for k, v in sorted(summed.items()) if v >= 0.02)
            print(f"round {round_no} {label}: {total:.2f} s  {shown}", flush=True)
    base = statistics.median(times[STOCK])
    report("back to back: two paper cells, stock ipykernel", base, "s",
           note=f"median of {ROUNDS} rounds, range {min(times[STOCK]):.2f} .. "
                f"{max(times[STOCK]):.2f} s")  # fmt: skip
    for label in (SCOREP, OLD):
        name = label.split(") ", 1)[1]
        diffs = [x - b for x, b in zip(times[label], times[STOCK])]
        median = statistics.median(diffs)
        report(f"back to back: two paper cells, {name}, over stock", median, "s",
               peer="stock ipykernel, same run", peer_value=base,
               target="<= +1.0 s" if label == SCOREP else None,
               met=median <= 1.0 if label == SCOREP else None,
               note=f"median of {ROUNDS} rounds, each against its stock run; range "
                    f"{min(diffs):+.2f} .. {max(diffs):+.2f} s")  # fmt: skip
        for key, values in sorted(phases.get(label, {}).items()):
            if statistics.median(values) >= 0.05 and key != "cell":
                report(f"back to back: {name}, phase {key} (both cells)",
                       statistics.median(values), "s",
                       note=f"range {min(values):.2f} .. {max(values):.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
