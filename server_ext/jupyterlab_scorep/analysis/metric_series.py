"""GET metrics: system metric samples (experiment.read_metrics), bucketed to a width."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def _clean(values: np.ndarray) -> list:
    # JSON has no NaN: a missing sample is null.
    return [v if math.isfinite(v) else None for v in values.tolist()]


def downsample(
    schema: dict[str, Any],
    t_ns: np.ndarray,
    values: np.ndarray,
    origin_epoch_ns: int,
    t0: int | None,
    t1: int | None,
    width: int,
) -> dict[str, Any]:
    """At most ``width`` points per series (mean, min, max of each bucket) in [t0, t1];
    times are ns since the run start (``origin_epoch_ns``)."""
    rel = np.asarray(t_ns, np.int64) - np.int64(origin_epoch_ns)
    order = np.argsort(rel, kind="stable")
    rel, values = rel[order], np.asarray(values, np.float64)[order]
    if t0 is None:
        t0 = int(rel[0]) if rel.size else 0
    if t1 is None:
        t1 = int(rel[-1]) if rel.size else 0
    lo, hi = np.searchsorted(rel, t0, "left"), np.searchsorted(rel, t1, "right")
    rel, values = rel[lo:hi], values[lo:hi]
    series_meta = schema.get("series", [])
    series = []
    if rel.size:
        span = max(t1 - t0, 1)
        bucket = np.minimum(((rel - t0) * width) // span, width - 1)
        first = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
        sizes = np.diff(np.r_[first, rel.size])
        t_mid = (np.add.reduceat(rel, first) // sizes).astype(np.int64).tolist()
        with np.errstate(invalid="ignore"):
            for k, meta in enumerate(series_meta):
                col = values[:, k]
                finite = np.isfinite(col)
                sums = np.add.reduceat(np.where(finite, col, 0.0), first)
                counts = np.add.reduceat(finite.astype(np.int64), first)
                mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
                mins = np.fmin.reduceat(np.where(finite, col, np.nan), first)
                maxs = np.fmax.reduceat(np.where(finite, col, np.nan), first)
                series.append(
                    {
                        "key": meta.get("key", f"series{k}"),
                        "label": meta.get("label", meta.get("key", "")),
                        "unit": meta.get("unit", ""),
                        "group": meta.get("group", ""),
                        "t": t_mid,
                        "mean": _clean(mean),
                        "min": _clean(mins),
                        "max": _clean(maxs),
                    }
                )
    else:
        series = [
            {
                "key": m.get("key", ""),
                "label": m.get("label", ""),
                "unit": m.get("unit", ""),
                "group": m.get("group", ""),
                "t": [],
                "mean": [],
                "min": [],
                "max": [],
            }
            for m in series_meta
        ]
    return {
        "window": [int(t0), int(t1)],
        "notes": list(schema.get("notes", [])),
        "interval_s": schema.get("interval_s"),
        "series": series,
    }


def from_trace(index) -> tuple[dict[str, Any], np.ndarray, np.ndarray] | None:
    """Metric events recorded in the OTF2 trace (Score-P's PAPI / rusage / plugin metrics,
    or the builtin writer's system metrics) as ``(schema, t_ns, values)`` with times
    already relative to the run start, or None when the trace has none. Values are as
    recorded (accumulated counters are not turned into rates)."""
    members = index.meta.get("metric_members", {})
    with_metrics = [loc for loc in index.locations if loc.get("metric_events")]
    if not with_metrics:
        return None
    columns: dict[tuple[int, int], int] = {}
    series: list[dict[str, str]] = []
    blocks = []
    for loc in with_metrics:
        i = loc["id"]
        t = np.asarray(index.array(f"L{i}.mt"))
        m = np.asarray(index.array(f"L{i}.mm"))
        v = np.asarray(index.array(f"L{i}.mv"))
        for ref in np.unique(m).tolist():
            if (i, ref) not in columns:
                columns[(i, ref)] = len(series)
                info = members.get(str(ref), {"name": f"metric {ref}", "unit": ""})
                key = info["name"] if len(with_metrics) == 1 else f"{loc['name']}/{info['name']}"
                series.append(
                    {
                        "key": key,
                        "label": info.get("description") or info["name"],
                        "unit": info.get("unit", ""),
                        "group": "trace",
                    }
                )
        blocks.append((i, t, m, v))
    times = np.unique(np.concatenate([t for _i, t, _m, _v in blocks]))
    values = np.full((times.size, len(series)), np.nan)
    for i, t, m, v in blocks:
        col = np.array([columns[(i, ref)] for ref in m.tolist()], np.int64)
        values[np.searchsorted(times, t), col] = v
    schema = {"series": series, "notes": ["Metric samples read from the OTF2 trace."]}
    return schema, times, values


def merge(
    a: tuple[dict[str, Any], np.ndarray, np.ndarray],
    b: tuple[dict[str, Any], np.ndarray, np.ndarray],
) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """Two sample sets on one time axis as one: ``a``'s series, then those of ``b`` whose
    keys ``a`` lacks (the builtin tracer copies its system metrics into the trace; Score-P's
    rusage, PAPI or plugin metrics are the trace's alone). Times are the union; a series
    has null where it has no sample. Schema fields other than ``series`` and ``notes``
    are ``a``'s."""
    schema_a, t_a, v_a = a
    schema_b, t_b, v_b = b
    have = {s.get("key") for s in schema_a.get("series", [])}
    extra = [k for k, s in enumerate(schema_b.get("series", [])) if s.get("key") not in have]
    if not extra:
        return a
    t_a, t_b = np.asarray(t_a, np.int64), np.asarray(t_b, np.int64)
    times = np.union1d(t_a, t_b)
    n_a = np.asarray(v_a).shape[1]
    values = np.full((times.size, n_a + len(extra)), np.nan)
    values[np.searchsorted(times, t_a), :n_a] = v_a
    values[np.searchsorted(times, t_b), n_a:] = np.asarray(v_b)[:, extra]
    schema = dict(schema_a)
    schema["series"] = list(schema_a.get("series", [])) + [schema_b["series"][k] for k in extra]
    schema["notes"] = list(schema_a.get("notes", [])) + list(schema_b.get("notes", []))
    return schema, times, values
