"""Score-P's own view of a run: ``scorep-score`` on its profile.cubex, and the filter file
``scorep-score -g`` suggests for the next run (no server code here; ``service`` calls it
in a thread).

``scorep-score PROFILE`` estimates what tracing the run costs: the trace's size, the
largest per-process trace buffer (max_buf) and the SCOREP_TOTAL_MEMORY that avoids
flushing the buffer during the run, with a table per region type (USR: the program's
regions, COM: regions on a call path to communication, SCOREP: the measurement's own,
ALL) and, with ``-r``, per region. ``-g`` writes ``initial_scorep.filter`` into the
working directory: by its default heuristics (``bufferpercent=1,timepervisit=1``, which
``ScorePExtension.filter_heuristics`` can change) it excludes the USR regions that need at
least 1 % of the trace buffer and take less than 1 µs per visit, those whose measurement
costs more than they do. ``-f FILE`` shows the
estimate with a filter applied. The numbers are Score-P's, printed with two decimals.

The applied filter lives beside the experiments, in ``scorep-filters/`` (``filter_dir``),
named after the run it was suggested for, so that it survives deleting that run; it
keeps the rules of the filter the run already used (regions filtered then are absent from
its profile, so the new suggestion alone would measure them again).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf

GENERATED = "initial_scorep.filter"  # what scorep-score -g writes, in its working directory
HEURISTICS = "bufferpercent=1,timepervisit=1"  # scorep-score's defaults, passed explicitly
# the keys scorep-score -g takes (its --help): a region is filtered when it meets them all
HEURISTIC_KEYS = ("bufferpercent", "bufferabsolute", "visits", "timepervisit", "type")
FILTER_DIR = "scorep-filters"
FILTER_SUFFIX = ".filter"
MAX_REGIONS = 25  # rows of the region table in an answer
MAX_PREVIOUS_BYTES = 1 << 20
TIMEOUT_S = 300.0

_SIZE_UNITS = {"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
_ESTIMATES = {
    "trace": re.compile(r"Estimated aggregate size of event trace:\s+(\S+)"),
    "max_buf": re.compile(r"Estimated requirements for largest trace buffer \(max_buf\):\s+(\S+)"),
    "total_memory": re.compile(r"Estimated memory requirements \(SCOREP_TOTAL_MEMORY\):\s+(\S+)"),
}
_ROW = re.compile(
    r"^\s*(?P<flt>[-+*])?\s+(?P<type>[A-Z]+)\s+(?P<max_buf>[\d,]+)\s+(?P<visits>[\d,]+)\s+"
    r"(?P<time>[\d.]+)\s+(?P<pct>[\d.]+)\s+(?P<per_visit>[\d.]+)\s+(?P<region>\S.*?)\s*$"
)
_MANGLED = re.compile(r"^\s*MANGLED\s+(.+?)\s*$")


class ScoreError(Exception):
    """scorep-score failed; the message says how and what to do."""


def executable() -> str | None:
    """scorep-score on PATH, else beside scorep-config (the same installation)."""
    found = shutil.which("scorep-score")
    if found:
        return found
    config = shutil.which("scorep-config")
    if config:
        beside = Path(config).resolve().parent / "scorep-score"
        if os.access(beside, os.X_OK):
            return str(beside)
    return None


def size_bytes(text: str) -> int | None:
    """``"73kB"`` -> 74752 (Score-P counts in 1024s; a size without a unit is bytes)."""
    m = re.fullmatch(r"([\d.]+)\s*([kMGT]?B)?", text.strip())
    return round(float(m.group(1)) * _SIZE_UNITS[m.group(2) or "B"]) if m else None


def parse(text: str) -> dict[str, Any]:
    """scorep-score's report as JSON: ``estimate`` (sizes as printed and in bytes),
    ``types`` (the region-type table; with a filter also the filtered rows, their type
    ending in "-FLT", and "FLT", the filtered regions), ``regions`` (with ``-r``)."""
    estimate: dict[str, Any] = {}
    for key, pattern in _ESTIMATES.items():
        m = pattern.search(text)
        if m:
            estimate[key] = m.group(1)
            estimate[f"{key}_bytes"] = size_bytes(m.group(1))
    hint = re.search(r"\(hint: (.*?)\)", text, re.S)
    if hint:
        estimate["hint"] = " ".join(hint.group(1).split())
    types, regions = [], []
    for line in text.splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        kind, region = m.group("type"), m.group("region")
        row = {
            "type": kind,
            "max_buf_bytes": int(m.group("max_buf").replace(",", "")),
            "visits": int(m.group("visits").replace(",", "")),
            "time_s": float(m.group("time")),
            "time_pct": float(m.group("pct")),
            "time_per_visit_us": float(m.group("per_visit")),
        }
        if m.group("flt"):
            row["flt"] = m.group("flt")  # "+" filtered, "-" not, "*" in part
        if region in (kind, f"{kind}-FLT", "FLT"):
            types.append({**row, "type": region})
        else:
            regions.append({**row, "name": region})
    return {"estimate": estimate, "types": types, "regions": regions}


def _run(args: list[str], cwd: str, timeout: float) -> str:
    tool = executable()
    if tool is None:
        raise ScoreError(
            "scorep-score is not on the server's PATH: put Score-P's bin/ on it (it comes "
            "with Score-P) to see Score-P's estimate of this run."
        )
    try:
        out = subprocess.run(
            [tool, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise ScoreError(f"scorep-score took longer than {timeout:.0f} s and was stopped") from None
    except OSError as e:
        raise ScoreError(f"scorep-score could not start: {e.strerror or e}") from None
    if out.returncode != 0:
        said = " ".join((out.stderr or out.stdout).split())[-400:]
        raise ScoreError(
            f"scorep-score failed on this profile (exit status {out.returncode}): {said}"
        )
    return out.stdout


def check_heuristics(text: str) -> str:
    """``text`` if it is a list scorep-score -g takes (``KEY=VALUE[,KEY=VALUE]*`` with its
    keys: numbers, ``type`` one of usr, com, both); else ValueError saying why."""
    parts = [p.strip() for p in text.split(",")]
    for part in parts:
        key, eq, value = part.partition("=")
        if not eq or key not in HEURISTIC_KEYS:
            raise ValueError(f"{part!r} is not KEY=VALUE with a key of {', '.join(HEURISTIC_KEYS)}")
        if key == "type" and value not in ("usr", "com", "both"):
            raise ValueError(f"type={value!r}: choose usr, com or both")
        if key != "type" and not re.fullmatch(r"\d+(\.\d+)?", value):
            raise ValueError(f"{key}={value!r} is not a number")
    return ",".join(parts)


def describe_heuristics(heuristics: str) -> str:
    """The heuristics in words: "at least 1 % of the trace buffer and under 1 us per visit"."""
    words = {
        "bufferpercent": "at least {} % of the trace buffer",
        "bufferabsolute": "at least {} MB of the trace buffer",
        "visits": "more than {} visits",
        "timepervisit": "under {} us per visit",
        "type": "of type {}",
    }
    parts = []
    for part in heuristics.split(","):
        key, _, value = part.partition("=")
        if key in words:
            parts.append(words[key].format(value))
    return " and ".join(parts)


def filtered_names(filter_text: str) -> list[str]:
    """The regions a filter file scorep-score wrote excludes (its ``MANGLED`` lines)."""
    return [m.group(1) for m in map(_MANGLED.match, filter_text.splitlines()) if m]


def report(cubex: Path, timeout: float = TIMEOUT_S, heuristics: str = HEURISTICS) -> dict[str, Any]:
    """The estimate, the type and region tables, and the suggested filter with the
    estimate once it is applied (``filter`` null when the heuristics select nothing)."""
    with tempfile.TemporaryDirectory(prefix="scorep-score-") as work:
        score = parse(_run(["-r", str(cubex)], work, timeout))
        _run(["-g", heuristics, str(cubex)], work, timeout)
        try:
            text = (Path(work) / GENERATED).read_text(errors="replace")
        except OSError:
            raise ScoreError(f"scorep-score -g wrote no {GENERATED}") from None
        names = filtered_names(text)
        suggestion = None
        if names:
            applied = parse(_run(["-f", GENERATED, str(cubex)], work, timeout))
            rows = {r["name"]: r for r in score["regions"]}
            suggestion = {
                "heuristics": heuristics,
                "regions": [rows.get(n, {"name": n}) for n in names],
                "estimate": applied["estimate"],
                "types": applied["types"],
                "text": text,
            }
    regions = score["regions"]
    return {
        "estimate": score["estimate"],
        "types": score["types"],
        "regions": regions[:MAX_REGIONS],
        "regions_total": len(regions),
        "filter": suggestion,
    }


def filter_dir(exp: Path) -> Path:
    """Where a run's applied filter goes: ``scorep-filters/`` beside the folder of
    experiments (``<notebook dir>/scorep-filters/`` for ``<notebook dir>/scorep-experiments/
    <id>``), else beside the experiment itself."""
    parent = exp.parent
    if parent.name == ex.DEFAULT_PARENT:
        return parent.parent / FILTER_DIR
    return parent / FILTER_DIR


def filter_text(
    manifest: mf.Manifest,
    suggested: str,
    previous: tuple[str, str] | None,
    heuristics: str = HEURISTICS,
) -> str:
    """The file to write: a header saying where it came from, the rules of the filter the
    run used (``previous``: its path and text), then Score-P's suggestion as it wrote it
    (several SCOREP_REGION_NAMES blocks in one file are allowed)."""
    cells = ", ".join(
        f"cell [{c.get('execution_count')}]" for c in manifest.get("cells") or [] if c
    )
    lines = [
        "# Score-P filter file written by jupyterlab-scorep (the panel's Apply filter).",
        f"# Suggested by scorep-score -g {heuristics} for experiment {manifest['id']}"
        + (f" ({cells})" if cells else "")
        + ":",
        f"# the regions with {describe_heuristics(heuristics)}, whose measurement costs",
        "# more than they do. Edit it as you like; the cell uses it through its metadata",
        "# scorep.filter_file (SCOREP_FILTERING_FILE).",
        "",
    ]
    if previous is not None:
        path, text = previous
        lines += [f"# The rules of the filter that run used ({path}):", text.rstrip(), ""]
    lines += ["# scorep-score's suggestion:", suggested.rstrip(), ""]
    return "\n".join(lines)


def looks_like_filter(text: str) -> bool:
    return "SCOREP_REGION_NAMES_BEGIN" in text or "SCOREP_FILE_NAMES_BEGIN" in text


def write_filter(directory: Path, name: str, text: str) -> Path:
    """Write ``directory/name`` atomically (made if missing); returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    fd, tmp = tempfile.mkstemp(prefix=".filter-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
