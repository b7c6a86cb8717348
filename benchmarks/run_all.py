"""Run every benchmark script in this folder and write RESULTS.md.

Each script runs in its own interpreter with a time limit; its ``RESULT {json}`` lines (see
_report.py) become rows of the table, and its full output is kept below the table.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIME_LIMIT_S = int(os.environ.get("SCOREP_BENCH_TIME_LIMIT", "1200"))


def machine() -> str:
    import psutil

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = psutil.virtual_memory().total / 2**30
    return (
        f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}"
    )


def run(script: Path) -> tuple[list[dict], str, float, int]:
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, str(script)],
            cwd=HERE.parent,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=TIME_LIMIT_S,
        )
        out, rc = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        out += f"\n[stopped after {TIME_LIMIT_S} s]"
        rc = -1
    results = []
    for line in out.splitlines():
        if line.startswith("RESULT "):
            try:
                results.append(json.loads(line[len("RESULT ") :]))
            except ValueError:
                pass
    return results, out, time.perf_counter() - start, rc


def fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def main() -> int:
    only = set(sys.argv[1:])
    scripts = sorted(
        p
        for p in HERE.glob("*.py")
        if not p.name.startswith("_") and p.name != "run_all.py" and (not only or p.stem in only)
    )
    rows, sections, failed = [], [], []
    for script in scripts:
        print(f"==> {script.name}", flush=True)
        results, out, seconds, rc = run(script)
        print(out, flush=True)
        if rc != 0:
            failed.append(script.name)
        for r in results:
            met = {True: "yes", False: "**no**", None: ""}[r.get("met")]
            rows.append(
                f"| {script.stem} | {r['name']} | {fmt(r['value'])} {r['unit']} | "
                f"{r.get('peer') or ''} {fmt(r.get('peer_value'))} | "
                f"{r.get('target') or ''} | {met} |"
            )
        sections.append(
            f"### {script.name} ({seconds:.0f} s, exit {rc})\n\n```\n"
            + "\n".join(l for l in out.splitlines() if not l.startswith("RESULT "))
            + "\n```\n"
        )
    text = [
        "# Benchmark results",
        "",
        f"Written by `make bench` on {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC.",
        f"Machine: {machine()}.",
        "",
        "| script | figure | value | peer (same run) | target | met |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "## Output",
        "",
        *sections,
    ]
    (HERE / "RESULTS.md").write_text("\n".join(text))
    print(f"Wrote {HERE / 'RESULTS.md'}")
    if failed:
        print("Failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
