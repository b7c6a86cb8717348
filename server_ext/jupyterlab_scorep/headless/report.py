"""``jupyter scorep report EXPERIMENT``: a profiled run in the terminal, like cube_stat and
scorep-score: what ran and how it ended, the verdicts of the panel's summary, the top
functions by exclusive time and the call tree to ``--depth``; as text, JSON or Markdown
(for a CI job's step summary). Given a scorep-summary.json (or the directory holding one)
it prints the headless run's table, its gate, and each profiled cell's top functions."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf

from ..trace import calltree
from . import run_summary as hs
from .experiments import Experiment, read_experiment

# Children of a call-tree node shown at most, and the share of the run below which a
# child is folded into "… n more".
MAX_CHILDREN = 8
MIN_SHARE = 0.005


class ReportError(Exception):
    pass


def _secs(s: float | None) -> str:
    return hs.fmt_seconds(s)


def describe(e: Experiment) -> dict[str, Any]:
    m = e.manifest
    cells = m.get("cells") or []
    return {
        "path": str(e.path),
        "id": m["id"],
        "notebook": m.get("notebook"),
        "cells": [
            {
                "cell_id": c.get("cell_id"),
                "execution_count": c.get("execution_count"),
                "first_line": next(
                    (ln for ln in (c.get("code") or "").splitlines() if ln.strip()), ""
                ),
            }
            for c in cells
        ],
        "backend": m.get("backend"),
        "isolation": m.get("isolation"),
        "status": m.get("status"),
        "files_status": m.get("files_status"),
        "wall_s": m.get("wall_s"),
        "events": (m.get("measurement") or {}).get("events"),
        "errors": m.get("errors") or [],
    }


def tree_nodes(e: Experiment, depth: int) -> list[dict[str, Any]]:
    """The call tree (summed over threads) as nested nodes to ``depth`` levels, heaviest
    first, small children folded."""
    if e.tree is None:
        return []
    data = calltree.to_json(e.tree, None, e.manifest["id"])
    root = data["root"]
    total = float(data["total_s"]) or 1.0
    top = root["children"] if root["id"] == -1 else [root]

    def prune(node: dict[str, Any], level: int) -> dict[str, Any]:
        out = {k: node[k] for k in ("name", "incl_s", "excl_s", "visits", "min_s", "max_s")}
        out["pct"] = round(100.0 * node["incl_s"] / total, 1)
        kids = sorted(node["children"], key=lambda c: -c["incl_s"])
        if level + 1 >= depth:  # the deeper levels are left out, not folded
            out["children"] = []
            out["folded"] = 0
            out["deeper"] = len(kids)
            return out
        shown = [c for c in kids[:MAX_CHILDREN] if c["incl_s"] >= MIN_SHARE * total]
        out["children"] = [prune(c, level + 1) for c in shown]
        out["folded"] = len(kids) - len(shown)
        return out

    return [prune(n, 0) for n in sorted(top, key=lambda c: -c["incl_s"])]


def as_json(e: Experiment, depth: int) -> dict[str, Any]:
    return {
        "experiment": describe(e),
        "summary": e.summary,
        "calltree": {
            "depth": depth,
            "source": e.tree.source if e.tree else None,
            "roots": tree_nodes(e, depth),
        },
        "notes": e.notes,
    }


# --- text and Markdown ----------------------------------------------------------------


def _head_lines(d: dict[str, Any]) -> list[str]:
    lines = [f"Experiment {d['id']}", f"  {d['path']}"]
    for c in d["cells"]:
        where = f"{d['notebook']}, " if d["notebook"] else ""
        cid = f" {c['cell_id']}" if c["cell_id"] else ""
        lines.append(f"  {where}cell [{c['execution_count']}]{cid}: {c['first_line']}")
    events = f", {d['events']:,} events" if isinstance(d["events"], int) else ""
    lines.append(
        f"  {d['backend']}/{d['isolation']}, status {d['status']}, {_secs(d['wall_s'])} wall"
        f"{events}, files {d['files_status']}"
    )
    for err in d["errors"]:
        lines.append(f"  error: {err}")
    return lines


def _top_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["exclusive", "%", "inclusive", "visits", "function"]
    rows = [
        [_secs(r["excl_s"]), f"{r['pct']:.1f}", _secs(r["incl_s"]), f"{r['visits']:,}", r["name"]]
        for r in summary["top_regions"]
    ]
    return header, rows


def _aligned(header: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = []
    for r in [header, *rows]:
        cells = [
            v.ljust(w) if i == len(header) - 1 else v.rjust(w)
            for i, (v, w) in enumerate(zip(r, widths))
        ]
        out.append((indent + "  ".join(cells)).rstrip())
    return out


def _tree_lines(nodes: list[dict[str, Any]]) -> list[str]:
    rows: list[tuple[str, dict[str, Any]]] = []

    def walk(node: dict[str, Any], prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else ("└─ " if last else "├─ ")
        rows.append((prefix + branch + node["name"], node))
        child_prefix = prefix if top else prefix + ("   " if last else "│  ")
        kids = node["children"]
        for i, k in enumerate(kids):
            walk(k, child_prefix, i == len(kids) - 1 and not node["folded"], False)
        if node["folded"]:
            rows.append((child_prefix + f"└─ … {node['folded']} more", {}))

    for n in nodes:
        walk(n, "", True, True)
    width = max((len(t) for t, _ in rows), default=0)
    out = [
        f"  {'call path'.ljust(width)}  {'inclusive':>9}  {'%':>5}  {'exclusive':>9}  {'visits':>9}"
    ]
    for text, n in rows:
        if not n:
            out.append(f"  {text}")
            continue
        out.append(
            f"  {text.ljust(width)}  {_secs(n['incl_s']):>9}  {n['pct']:>5.1f}  "
            f"{_secs(n['excl_s']):>9}  {n['visits']:>9,}"
        )
    return out


def as_text(e: Experiment, depth: int) -> str:
    d = describe(e)
    lines = _head_lines(d)
    verdicts = e.summary.get("verdicts") or []
    if verdicts:
        lines += ["", "Verdicts:"] + [f"  - {v['text']}" for v in verdicts]
    header, rows = _top_rows(e.summary)
    lines += ["", "Top functions by exclusive time (all threads):"]
    lines += _aligned(header, rows) if rows else ["  (no call tree)"]
    nodes = tree_nodes(e, depth)
    if nodes:
        lines += ["", f"Call tree to depth {depth} (all threads):"] + _tree_lines(nodes)
    return "\n".join(lines)


def as_markdown(e: Experiment, depth: int) -> str:
    d = describe(e)
    head = _head_lines(d)
    lines = [f"### Experiment `{d['id']}`", ""] + [f"- {h.strip()}" for h in head[1:]]
    verdicts = e.summary.get("verdicts") or []
    if verdicts:
        lines += ["", "**Verdicts**", ""] + [f"- {v['text']}" for v in verdicts]
    header, rows = _top_rows(e.summary)
    if rows:
        lines += ["", "**Top functions by exclusive time**", ""]
        lines += ["| " + " | ".join(header) + " |", "|---:|---:|---:|---:|---|"]
        lines += ["| " + " | ".join(r[:-1] + [f"`{r[-1]}`"]) + " |" for r in rows]
    nodes = tree_nodes(e, depth)
    if nodes:
        lines += ["", f"**Call tree** (depth {depth})", "", "```"] + _tree_lines(nodes) + ["```"]
    return "\n".join(lines)


# --- a headless run's summary ----------------------------------------------------------


def run_report(path: Path, data: dict[str, Any], fmt: str, depth: int, top: int) -> str:
    if fmt == "json":
        return json.dumps(data, indent=1)
    md = fmt == "markdown"
    title = f"Score-P profile of {data['notebook']}: {data['status']}"
    out = [f"## {title}" if md else title, ""]
    out.append(hs.render_markdown_table(data) if md else hs.render_table(data))
    gate = data.get("gate")
    if gate:
        out += ["", f"Regression gate against {gate['baseline']}: {gate['verdict']}"]
        for c in gate["cells"]:
            out.append(f"- [{c['number']}] {c['verdict']}: {c.get('text', '')}")
    reported: set[str] = set()
    for c in data["cells"]:
        exp = c.get("experiment")
        if not exp or exp["path"] in reported:  # cells of one multi-cell run share it
            continue
        reported.add(exp["path"])
        try:
            e = read_experiment(hs.resolve_ref(exp["path"], path.parent), top)
        except ex.ExperimentError as err:
            out += ["", f"cell [{c['number']}]: {err}"]
            continue
        out += ["", as_markdown(e, depth) if md else as_text(e, depth)]
    return "\n".join(out)


def report(target: Path, fmt: str = "text", depth: int = 4, top: int = 10) -> str:
    summary_file = target / hs.SUMMARY_NAME if target.is_dir() else target
    if target.is_file() or (
        target.is_dir() and not (target / ex.MANIFEST).exists() and summary_file.is_file()
    ):
        try:
            data = hs.read_summary(summary_file)
        except hs.SummaryError as e:
            raise ReportError(str(e)) from None
        return run_report(summary_file, data, fmt, depth, top)
    if not target.is_dir():
        raise ReportError(f"{target}: no such experiment directory or {hs.SUMMARY_NAME}")
    try:
        exp = read_experiment(target, top)
    except ex.ExperimentError as err:
        found = mf.list_experiments(target)
        hint = ""
        if found:
            names = ", ".join(p.name for p, _ in found[:3])
            hint = f"; it holds {len(found)} experiments, newest first: {names}"
        raise ReportError(f"{err}{hint}") from None
    if fmt == "json":
        return json.dumps(as_json(exp, depth), indent=1)
    return as_markdown(exp, depth) if fmt == "markdown" else as_text(exp, depth)


def report_command(args: argparse.Namespace, out: TextIO) -> int:
    if args.depth < 1 or args.top < 1:
        print("jupyter scorep report: --depth and --top must be at least 1", file=sys.stderr)
        return hs.EXIT_USAGE
    try:
        text = report(args.experiment, args.format, args.depth, args.top)
    except ReportError as e:
        print(f"jupyter scorep report: {e}", file=sys.stderr)
        return hs.EXIT_USAGE
    print(text, file=out)
    return 0
