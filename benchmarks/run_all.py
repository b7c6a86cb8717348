"""Run every benchmark script in this folder and write RESULTS.md.

Each script runs in its own interpreter with a time limit; its ``RESULT {json}`` lines (see
_report.py) become rows of the table, and its full output is kept below the table.

``run_all.py NAME ...`` reruns only those scripts: their rows and output replace theirs in the
existing RESULTS.md, the other scripts' stay, and the header says which ran when.
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


def previous_results(path: Path) -> tuple[dict[str, list[str]], dict[str, str], list[str]]:
    """The rows and output sections of an earlier RESULTS.md, by script, and its header's
    lines saying when it was written (kept when only some scripts are rerun)."""
    rows: dict[str, list[str]] = {}
    sections: dict[str, str] = {}
    notes: list[str] = []
    if not path.exists():
        return rows, sections, notes
    text = path.read_text()
    head, _, output = text.partition("\n## Output\n")
    for line in head.splitlines():
        if line.startswith(("Written by", "Rerun on")):
            notes.append(line)
        elif line.startswith("| ") and not line.startswith(("| script |", "|---")):
            rows.setdefault(line.split("|")[1].strip(), []).append(line)
    for part in output.split("\n### ")[1:]:
        stem = part.split(" ", 1)[0].removesuffix(".py")
        sections[stem] = "### " + part.rstrip("\n") + "\n"
    return rows, sections, notes


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
    rows: dict[str, list[str]] = {}
    sections: dict[str, str] = {}
    header_notes: list[str] = []
    if only:
        rows, sections, header_notes = previous_results(HERE / "RESULTS.md")
        for stem in only:
            rows.pop(stem, None)
            sections.pop(stem, None)
        header_notes.append(
            f"Rerun on {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC: "
            + ", ".join(sorted(only))
            + "."
        )
    failed = []
    for script in scripts:
        print(f"==> {script.name}", flush=True)
        results, out, seconds, rc = run(script)
        print(out, flush=True)
        if rc != 0:
            failed.append(script.name)
        script_rows = rows.setdefault(script.stem, [])
        for r in results:
            met = {True: "yes", False: "**no**", None: ""}[r.get("met")]
            script_rows.append(
                f"| {script.stem} | {r['name']} | {fmt(r['value'])} {r['unit']} | "
                f"{r.get('peer') or ''} {fmt(r.get('peer_value'))} | "
                f"{r.get('target') or ''} | {met} |"
            )
        sections[script.stem] = (
            f"### {script.name} ({seconds:.0f} s, exit {rc})\n\n```\n"
            + "\n".join(l for l in out.splitlines() if not l.startswith("RESULT "))
            + "\n```\n"
        )
    if not header_notes:
        header_notes = [
            f"Written by `make bench` on {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC."
        ]
    text = [
        "# Benchmark results",
        "",
        *header_notes,
        f"Machine: {machine()}.",
        "",
        "| script | figure | value | peer (same run) | target | met |",
        "|---|---|---|---|---|---|",
        *(row for stem in sorted(rows) for row in rows[stem]),
        "",
        "## Output",
        "",
        *(sections[stem] for stem in sorted(sections)),
    ]
    (HERE / "RESULTS.md").write_text("\n".join(text))
    print(f"Wrote {HERE / 'RESULTS.md'}")
    if failed:
        print("Failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
