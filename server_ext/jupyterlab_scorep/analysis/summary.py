"""GET summary: wall time, top regions and resource verdicts in plain words.

``summarize`` is a pure function over the manifest, the call tree (``calltree.CallTree``
or None) and the metric samples ((schema, t_ns, values) or None). Each verdict carries the
numbers it was drawn from, so the user can check it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, cast

import numpy as np

from scorep_kernel import manifest as mf

from . import compare

GiB = 1024**3
MiB = 1024**2
# Thresholds, chosen to flag what a person would call out in a run.
SATURATED_PCT = 85.0  # a core this busy on average is saturated
IDLE_PCT = 25.0  # the other cores stay below this
WAITING_BUSY_CORES = 0.2  # less than a fifth of one core busy on average: mostly waiting
WAITING_MIN_WALL_S = 1.0
MEMORY_GROWTH_BYTES = 256 * MiB
GPU_IDLE_UTIL_PCT = 5.0
GPU_IDLE_WARN_SHARE = 0.5
DISK_HEAVY_BYTES = 1 * GiB
DISK_HEAVY_RATE = 100 * MiB
NET_HEAVY_BYTES = 256 * MiB
NET_HEAVY_RATE = 20 * MiB
MAX_FUNCTIONS = 1000  # the Summary tab's bars: the heaviest functions by exclusive time


def _fmt_bytes(n: float) -> str:
    if abs(n) >= GiB:
        return f"{n / GiB:.2f} GiB"
    return f"{n / MiB:.0f} MiB"


def top_regions(tree, limit: int = 10) -> list[dict[str, Any]]:
    """The functions the user can speed up most (compare.function_summary's ``effective``:
    running on any thread, waiting on the cell's thread), with their exclusive time and its
    split. Inclusive time counts only a function's outermost calls, so recursion is not
    counted twice; ``pct`` is the exclusive time's share of the cells' time, or of all the
    functions' time where that is more: the ranks of an MPI cell (or threads that all
    run) spend more than the cell's time on the thread that ran it, and a share over
    100 % (1,024 ranks: "34602 %") tells the user nothing."""
    if tree is None or not len(tree.nodes):
        return []
    functions, total, _outside = compare.function_summary(tree)
    total = max(total, sum(f.excl_s for f in functions)) or 1.0
    out = []
    for f in functions[:limit]:
        row: dict[str, Any] = {
            "name": f.name,
            "excl_s": round(f.excl_s, 6),
            "incl_s": round(f.incl_s, 6),
            "visits": f.visits,
            "pct": round(100.0 * f.excl_s / total, 1),
        }
        if f.region:
            row["region"] = f.region
        if f.cpu_s is not None:
            row.update(cpu_s=round(f.cpu_s, 6), wait_s=round(f.wait_s or 0.0, 6))
        out.append(row)
    return out


def _series(metrics, pattern: str):
    if metrics is None:
        return {}
    schema, t, values = metrics
    out = {}
    for k, meta in enumerate(schema.get("series", [])):
        m = re.fullmatch(pattern, str(meta.get("key", "")))
        if m:
            out[m.group(1) if m.groups() else meta["key"]] = np.asarray(values[:, k], float)
    return out


def _mean(col: np.ndarray) -> float:
    col = col[np.isfinite(col)]
    return float(col.mean()) if col.size else float("nan")


def _bytes_moved(rate: np.ndarray, interval_s: float) -> float:
    rate = np.where(np.isfinite(rate), rate, 0.0)
    return float(rate.sum() * interval_s)


def resource_verdicts(manifest: mf.Manifest, metrics) -> list[dict[str, Any]]:
    verdicts: list[dict[str, Any]] = []

    def add(kind, level, text, **numbers):
        verdicts.append(
            {
                "kind": kind,
                "level": level,
                "text": text,
                "numbers": {
                    k: (round(v, 2) if isinstance(v, float) else v) for k, v in numbers.items()
                },
            }
        )

    wall = float(manifest.get("wall_s") or 0.0)
    interval = float((metrics[0].get("interval_s") if metrics else None) or 0.1)
    cores = _series(metrics, r"cpu\.core(\d+)")
    if len(cores) >= 2:
        ids = sorted(cores, key=int)
        grid = np.column_stack([cores[i] for i in ids])  # [samples, cores]
        grid = grid[np.isfinite(grid).all(axis=1)]
        if grid.shape[0]:
            top2 = np.sort(grid, axis=1)[:, -2:]
            # The OS moves a busy thread between cores, so judge sample by sample: one
            # core near full while the next busiest idles.
            single = (top2[:, 1] >= SATURATED_PCT) & (top2[:, 0] <= IDLE_PCT)
            share = float(single.mean())
            if share >= 0.5:
                means = {int(i): float(grid[:, k].mean()) for k, i in enumerate(ids)}
                busiest = max(means, key=lambda core: means[core])
                others = {k: v for k, v in means.items() if k != busiest}
                rest = (
                    f"core {min(others)} at {others[min(others)]:.0f}%"
                    if len(others) == 1
                    else f"the other {len(others)} at {np.mean(list(others.values())):.0f}% "
                    "on average"
                )
                add(
                    "cpu",
                    "warning",
                    f"One core saturated while the others idled (core {busiest} at "
                    f"{means[busiest]:.0f}%, {rest}; in {share * 100:.0f}% of the samples one "
                    "core was busy and the rest idle): the work runs on one core; vectorise "
                    "it or spread it over processes to use the rest.",
                    **{f"core{k}_pct": v for k, v in sorted(means.items())},
                    single_core_samples_pct=share * 100,
                )
    total = _series(metrics, r"(cpu\.total)").get("cpu.total")
    if total is not None and wall >= WAITING_MIN_WALL_S:
        mean_total = _mean(total)
        n_cores = max(len(cores), 1)
        busy_cores = mean_total / 100.0 * n_cores
        if np.isfinite(busy_cores) and busy_cores < WAITING_BUSY_CORES:
            add(
                "cpu",
                "warning",
                f"Mostly waiting: on average {busy_cores:.2f} cores were busy ({mean_total:.0f}% "
                f"of {n_cores}) over {wall:.1f} s of wall time, so the run spent its time "
                "blocked (I/O, network, sleep or locks) rather than computing.",
                cpu_total_pct=mean_total,
                busy_cores=busy_cores,
                wall_s=wall,
            )
    rss = _series(metrics, r"(mem\.rss)").get("mem.rss")
    if rss is not None:
        finite = rss[np.isfinite(rss)]
        if finite.size >= 2:
            growth = float(finite.max() - finite[0])
            if growth >= MEMORY_GROWTH_BYTES:
                add(
                    "memory",
                    "warning" if growth >= GiB else "info",
                    f"Memory grew by {_fmt_bytes(growth)} (from {_fmt_bytes(finite[0])} to a "
                    f"peak of {_fmt_bytes(finite.max())}).",
                    start_bytes=float(finite[0]),
                    peak_bytes=float(finite.max()),
                    growth_bytes=growth,
                )
    for gpu, util in sorted(_series(metrics, r"gpu(\d+)\.util").items()):
        finite = util[np.isfinite(util)]
        if not finite.size:
            continue
        idle_share = float((finite < GPU_IDLE_UTIL_PCT).mean())
        if idle_share >= GPU_IDLE_WARN_SHARE:
            add(
                "gpu",
                "warning",
                f"GPU {gpu} idle {idle_share * 100:.0f}% of the run (mean utilisation "
                f"{finite.mean():.0f}%): the GPU waits on the host; look for data loading "
                "or Python work between kernels.",
                gpu=int(gpu),
                idle_pct=idle_share * 100,
                util_mean_pct=float(finite.mean()),
            )
    for kind, keys, heavy_bytes, heavy_rate, what in (
        ("io", ("disk.read", "disk.write"), DISK_HEAVY_BYTES, DISK_HEAVY_RATE, "disk"),
        ("network", ("net.recv", "net.sent"), NET_HEAVY_BYTES, NET_HEAVY_RATE, "network"),
    ):
        cols = {k: v for k, v in _series(metrics, r"((?:disk|net)\.\w+)").items() if k in keys}
        if not cols:
            continue
        moved = {k: _bytes_moved(v, interval) for k, v in cols.items()}
        peak = max(float(np.nanmax(v)) if np.isfinite(v).any() else 0.0 for v in cols.values())
        if sum(moved.values()) >= heavy_bytes or peak >= heavy_rate:
            a, b = keys
            add(
                kind,
                "info",
                f"Heavy {what} I/O: {_fmt_bytes(moved.get(a, 0))} {a.split('.')[1]}, "
                f"{_fmt_bytes(moved.get(b, 0))} {b.split('.')[1]} (peak "
                f"{_fmt_bytes(peak)}/s).",
                **{f"{k.replace('.', '_')}_bytes": v for k, v in moved.items()},
                peak_bytes_per_s=peak,
            )
    return verdicts


# Filters that drop calls the user may have wanted; "outside_cells" is IPython's own
# machinery and is always dropped, so it is not worth a word.
FILTER_DROPS = {
    "excluded": "excluded by module filters",
    "too_deep": "deeper than max_depth",
    "paused": "recorded while recording was paused",
    "not_nested": "not properly nested",
}


def trace_verdicts(manifest: mf.Manifest, notes: Sequence[str] = ()) -> list[dict[str, Any]]:
    """What the measurement says about itself (the builtin tracer's manifest
    ``measurement``: cap_reached, event_cap, dropped {reason: calls}, messages)."""
    out = []
    m = manifest.get("measurement") or {}
    if m.get("cap_reached") is True:
        cap = m.get("event_cap")
        numbers = {"event_cap": cap} if isinstance(cap, int) else {}
        events = m.get("events")
        if isinstance(events, int):
            numbers["events"] = events
        limit = f" of {cap:,} events" if isinstance(cap, int) else ""
        out.append(
            {
                "kind": "trace",
                "level": "warning",
                "text": f"The event cap{limit} was reached: recording stopped early and "
                "the timeline ends there. Raise event_cap or exclude modules "
                "(exclude=...) to record the whole run.",
                "numbers": numbers,
            }
        )
    dropped = m.get("dropped")
    if not isinstance(dropped, dict):
        dropped = {}
    filtered = {
        k: int(v)
        for k, v in dropped.items()
        if k in FILTER_DROPS and isinstance(v, int) and not isinstance(v, bool) and v > 0
    }
    if filtered:
        parts = ", ".join(f"{n:,} {FILTER_DROPS[k]}" for k, n in filtered.items())
        out.append(
            {
                "kind": "trace",
                "level": "info",
                "text": f"{sum(filtered.values()):,} calls were left out: {parts}.",
                "numbers": filtered,
            }
        )
    # Score-P's own messages, in words (runs/scorep_backend.explain in the kernel)
    for note in cast("Iterable[object]", m.get("notes") or ()):
        if isinstance(note, str) and note.strip():
            out.append({"kind": "scorep", "level": "warning", "text": note, "numbers": {}})
    status = manifest.get("status")
    if status not in (None, mf.STATUS_OK, mf.STATUS_RUNNING):
        out.append(
            {
                "kind": "trace",
                "level": "warning",
                "text": f"The run ended with status '{status}': the measurement covers it "
                "up to that point.",
                "numbers": {},
            }
        )
    for note in notes:
        out.append({"kind": "trace", "level": "info", "text": note, "numbers": {}})
    return out


def summarize(
    manifest: mf.Manifest,
    tree=None,
    metrics=None,
    *,
    events: int | None = None,
    trace_notes: Sequence[str] = (),
) -> dict[str, Any]:
    # the cells' time, one definition (scorep_kernel.experiment: the manifest's wall_s is
    # the cell regions on the threads that ran them where the measurement said so)
    wall = manifest.get("wall_s")
    if wall is None and tree is not None and len(tree.nodes):
        wall = compare.function_summary(tree)[1]
    if events is None:
        events = cast("int | None", (manifest.get("measurement") or {}).get("events"))
    functions: list[compare.FunctionStat] = []
    outside = 0.0
    if tree is not None and len(tree.nodes):
        functions, _total, outside = compare.function_summary(tree)
    return {
        "wall_s": wall,
        "events": events,
        "status": manifest.get("status"),
        "top_regions": top_regions(tree),
        "verdicts": resource_verdicts(manifest, metrics) + trace_verdicts(manifest, trace_notes),
        # the function summary (compare.function_summary): every function's exclusive and
        # inclusive time and visits over all call paths and locations, by exclusive time
        "functions": [f.to_json() for f in functions[:MAX_FUNCTIONS]],
        "functions_total": len(functions),
        "outside_s": outside,
        # the split of the cells' time, and the run's elapsed time (run_s - wall_s: what the
        # measurement itself cost), where the manifest has them
        "cell_time": manifest.get("cell_time"),
        "run_s": manifest.get("run_s"),
    }
