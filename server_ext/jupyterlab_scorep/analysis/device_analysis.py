"""GET device: what the accelerators did during the cell, and the verdict that names the
bottleneck.

``analyze(index, records)`` is pure over a loaded trace index (the device streams are
locations of kind "gpu": Score-P's CUDA adapter's, or the builtin writer's from
torch.profiler) and ``device_read``'s launch links and copies:

- busy and idle share of the cell (the cells' span on the host; the trace's range when
  it has no cell region): busy is the union of every stream's kernels, copies and sets;
- ``idle_pct_of_span``: HTA's temporal breakdown idle share (idle time over the span from
  the first device activity's start to the last one's end), the figure to hold against
  HTA on the same Kineto trace;
- idle by cause (``device_idle``: input pipeline, synchronisation, host, other);
- top kernels by device time, and the operators that launched them (the innermost
  operator around each launch: device self time, as TensorBoard's operator view);
- copies per direction: count, bytes, time and rate; sets;
- CPU-GPU overlap: the time the device was busy while the host was not blocked in a
  synchronising call;
- ``links``: per linked activity (launch correlation), its stream and span and the
  launch's host location and span, for GET link.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scorep_kernel import region_words as rw

from .device_idle import CAUSES, INPUT_PIPELINE, SYNC_CALLS, DeviceWork, Intervals, classify

TOP = 10
IDLE_WARN_PCT = 50.0
DEVICE_ROLES = (rw.ROLE_KERNEL, rw.ROLE_MEMCPY, rw.ROLE_MEMSET)
CAUSE_WORDS = {
    "input": "waiting for the input pipeline",
    "sync": "synchronisation (the host waited for the device, then left it without work)",
    "host": "waiting for the host",
    "other": "between work already launched (dependencies, launch latency)",
}


def _calls(index: Any, loc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = int(index.locations[loc].get("calls") or 0)
    if not n:
        z = np.zeros(0, np.int64)
        return z, z, z
    return (
        np.asarray(index.array(f"L{loc}.start")[:n], np.int64),
        np.asarray(index.array(f"L{loc}.end")[:n], np.int64),
        np.asarray(index.array(f"L{loc}.region")[:n], np.int64),
    )


def _roles(index: Any, refs: np.ndarray) -> dict[int, dict[str, Any]]:
    return {int(r): index.region_info(int(r)) for r in np.unique(refs)}


def _ticks_to_ns(index: Any, ticks: list[int]) -> np.ndarray:
    meta = index.meta
    origin = int(meta.get("origin_ticks", 0))
    res = int(meta.get("timer_resolution") or 1_000_000_000)
    t = np.asarray(ticks, np.int64) - origin
    return t if res == 1_000_000_000 else np.rint(t * (1e9 / res)).astype(np.int64)


def _match(starts: np.ndarray, times: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The callsite id of each interval that starts where a parameter was recorded."""
    out = np.full(starts.size, -1, np.int64)
    if not times.size or not starts.size:
        return out
    order = np.argsort(times, kind="stable")
    times, ids = times[order], ids[order]
    k = np.searchsorted(times, starts, side="left")
    ok = k < times.size
    hit = np.zeros(starts.size, bool)
    hit[ok] = times[k[ok]] == starts[ok]
    out[hit] = ids[k[hit]]
    return out


def _innermost(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each time, the innermost of the nested intervals that holds it (-1: none)."""
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    parent = np.full(s.size, -1, np.int64)
    stack: list[int] = []
    for i in range(s.size):
        while stack and e[stack[-1]] < s[i]:
            stack.pop()
        parent[i] = stack[-1] if stack else -1
        stack.append(i)
    out = np.full(t.size, -1, np.int64)
    k = np.searchsorted(s, t, side="right") - 1
    for j, i in enumerate(k.tolist()):
        while i >= 0 and e[i] < t[j]:
            i = int(parent[i])
        out[j] = order[i] if i >= 0 else -1
    return out


def _rate(nbytes: int, ns: int) -> float | None:
    return round(nbytes / ns, 6) if ns > 0 else None  # bytes per ns = GB/s


def analyze(index: Any, records: dict[str, Any]) -> dict[str, Any] | None:
    """The device analysis, or None when the trace has no device stream."""
    locations = index.locations
    device_locs = [i for i, loc in enumerate(locations) if loc.get("kind") == "gpu"]
    if not device_locs:
        return None
    host_locs = [i for i, loc in enumerate(locations) if loc.get("kind") not in ("gpu", "metric")]
    per_loc = records.get("locations") or {}

    # --- the host: cells, launches, input pipeline, sync calls, operators ----------------
    cell_s, cell_e = [], []
    inp_s, inp_e, sync_s, sync_e = [], [], [], []
    op_loc, op_s, op_e, op_name = [], [], [], []
    launch_by_corr: dict[int, tuple[int, int, int]] = {}  # corr -> (loc, start, end)
    for loc in host_locs:
        s, e, r = _calls(index, loc)
        if not s.size:
            continue
        info = _roles(index, r)
        role = np.array([info[int(x)]["role"] for x in r.tolist()], dtype=object)
        name = np.array([info[int(x)]["name"] for x in r.tolist()], dtype=object)
        is_cell = role == rw.ROLE_CELL
        cell_s.append(s[is_cell])
        cell_e.append(e[is_cell])
        is_input = np.array([bool(INPUT_PIPELINE.search(str(n))) for n in name], bool)
        inp_s.append(s[is_input])
        inp_e.append(e[is_input])
        is_sync = (role == rw.ROLE_RUNTIME) & np.isin(name, list(SYNC_CALLS))
        sync_s.append(s[is_sync])
        sync_e.append(e[is_sync])
        is_op = role == rw.ROLE_OPERATOR
        op_loc += [loc] * int(is_op.sum())
        op_s.append(s[is_op])
        op_e.append(e[is_op])
        op_name += name[is_op].tolist()
        rec = per_loc.get(loc) or per_loc.get(str(loc))
        if rec and rec["callsite_ids"]:
            is_launch = role == rw.ROLE_RUNTIME
            corr = _match(
                s[is_launch],
                _ticks_to_ns(index, rec["callsite_times"]),
                np.asarray(rec["callsite_ids"], np.int64),
            )
            for c, a, b in zip(corr.tolist(), s[is_launch].tolist(), e[is_launch].tolist()):
                if c >= 0:
                    launch_by_corr.setdefault(c, (loc, a, b))
    cat = lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64)
    cells = Intervals.union(cat(cell_s), cat(cell_e))
    if cells.start.size:
        window = (int(cells.start[0]), int(cells.end[-1]))
    else:
        window = (int(index.meta["range"][0]), int(index.meta["range"][1]))
    cell_ns = max(window[1] - window[0], 1)

    # --- the device ------------------------------------------------------------------
    d_loc, d_s, d_e, d_role, d_name, d_corr = [], [], [], [], [], []
    streams = []
    for loc in device_locs:
        s, e, r = _calls(index, loc)
        info = _roles(index, r)
        keep = np.array([info[int(x)]["role"] in DEVICE_ROLES for x in r.tolist()], bool)
        s, e, r = s[keep], e[keep], r[keep]
        rec = per_loc.get(loc) or per_loc.get(str(loc))
        corr = (
            _match(
                s,
                _ticks_to_ns(index, rec["callsite_times"]),
                np.asarray(rec["callsite_ids"], np.int64),
            )
            if rec
            else np.full(s.size, -1, np.int64)
        )
        d_loc += [loc] * s.size
        d_s.append(s)
        d_e.append(e)
        d_role += [info[int(x)]["role"] for x in r.tolist()]
        d_name += [info[int(x)]["name"] for x in r.tolist()]
        d_corr.append(corr)
        busy_loc = Intervals.union(s, e).clip(*window).total
        streams.append({
            "location": loc, "name": locations[loc]["name"], "group": locations[loc].get("group", ""),
            "busy_s": busy_loc / 1e9, "activities": int(s.size),
        })  # fmt: skip
    starts, ends, corrs = cat(d_s), cat(d_e), cat(d_corr)
    roles = np.asarray(d_role, dtype=object)
    names = np.asarray(d_name, dtype=object)
    dur = ends - starts
    launches = np.array(
        [launch_by_corr.get(int(c), (-1, -1, -1))[1] for c in corrs.tolist()], np.int64
    )
    busy = Intervals.union(starts, ends).clip(*window)
    busy_ns = busy.total
    span = (int(starts.min()), int(ends.max())) if starts.size else window
    span_busy = Intervals.union(starts, ends).total
    span_ns = max(span[1] - span[0], 1)

    inputs = Intervals.union(cat(inp_s), cat(inp_e))
    syncs = Intervals.union(cat(sync_s), cat(sync_e))
    causes, _gaps = classify(DeviceWork(starts, ends, launches), window, inputs, syncs)
    idle_ns = cell_ns - busy_ns

    # top kernels and the operators that launched them
    is_kernel = roles == rw.ROLE_KERNEL
    device_total = int(dur.sum()) or 1
    top_kernels = []
    if is_kernel.any():
        uniq, inv = np.unique(names[is_kernel].astype(str), return_inverse=True)
        t = np.bincount(inv, weights=dur[is_kernel], minlength=uniq.size)
        n = np.bincount(inv, minlength=uniq.size)
        for u in np.argsort(-t, kind="stable")[:TOP].tolist():
            top_kernels.append({"name": str(uniq[u]), "device_s": float(t[u]) / 1e9,
                                "count": int(n[u]), "pct": round(100 * float(t[u]) / device_total, 1)})  # fmt: skip
    top_ops = []
    ops_s, ops_e = cat(op_s), cat(op_e)
    if ops_s.size and corrs.size:
        by_name: dict[str, list[float]] = {}
        op_loc_a = np.asarray(op_loc, np.int64)
        for loc in set(op_loc):
            mine = np.flatnonzero(op_loc_a == loc)
            linked = [
                j for j, c in enumerate(corrs.tolist()) if launch_by_corr.get(c, (-1,))[0] == loc
            ]
            if not linked:
                continue
            t = np.array([launch_by_corr[int(corrs[j])][1] for j in linked], np.int64)
            inner = _innermost(ops_s[mine], ops_e[mine], t)
            for j, k in zip(linked, inner.tolist()):
                if k >= 0:
                    entry = by_name.setdefault(op_name[int(mine[k])], [0.0, 0])
                    entry[0] += float(dur[j])
                    entry[1] += 1
        for op, (t_ns, count) in sorted(by_name.items(), key=lambda kv: -kv[1][0])[:TOP]:
            top_ops.append({"name": op, "device_s": t_ns / 1e9, "activities": int(count),
                            "pct": round(100 * t_ns / device_total, 1)})  # fmt: skip

    # copies: the RMA records where there are (Score-P's, ours), else the copy regions
    copies: dict[str, dict[str, Any]] = {}
    rma = [
        c
        for loc in device_locs
        for c in ((per_loc.get(loc) or per_loc.get(str(loc)) or {}).get("copies") or [])
    ]
    if rma:
        for c in rma:
            d = copies.setdefault(c["direction"], {"count": 0, "bytes": 0, "ns": 0})
            d["count"] += 1
            d["bytes"] += int(c["bytes"])
            d["ns"] += int(
                _ticks_to_ns(index, [c["end"]])[0] - _ticks_to_ns(index, [c["start"]])[0]
            )
    else:
        for j in np.flatnonzero(roles == rw.ROLE_MEMCPY).tolist():
            direction = next((k for k in ("HtoD", "DtoH", "DtoD") if k in str(names[j])), "other")
            d = copies.setdefault(direction, {"count": 0, "bytes": 0, "ns": 0})
            d["count"] += 1
            d["ns"] += int(dur[j])
    memcpy = {
        k: {"count": v["count"], "bytes": v["bytes"], "seconds": v["ns"] / 1e9,
            "rate_gb_s": _rate(v["bytes"], v["ns"])}
        for k, v in sorted(copies.items())
    }  # fmt: skip
    is_set = roles == rw.ROLE_MEMSET
    memset = {"count": int(is_set.sum()), "seconds": float(dur[is_set].sum()) / 1e9}

    not_waiting = syncs.gaps(*window)
    overlap_ns = sum(not_waiting.overlap(int(a), int(b)) for a, b in zip(busy.start, busy.end))
    is_linked = corrs >= 0
    link_rows = {
        "correlation": corrs[is_linked].tolist(),
        "device_location": np.asarray(d_loc, np.int64)[is_linked].tolist(),
        "device_start": starts[is_linked].tolist(),
        "device_end": ends[is_linked].tolist(),
    }
    out = {
        "window": [window[0], window[1]],
        "cell_s": cell_ns / 1e9,
        "busy_s": busy_ns / 1e9,
        "busy_pct": round(100 * busy_ns / cell_ns, 2),
        "idle_s": idle_ns / 1e9,
        "idle_pct": round(100 * idle_ns / cell_ns, 2),
        "span": [span[0], span[1]],
        "idle_pct_of_span": round(100 * (span_ns - span_busy) / span_ns, 2),
        "idle_by_cause": {c: causes[c] / 1e9 for c in CAUSES},
        "idle_by_cause_pct": {c: round(100 * causes[c] / cell_ns, 2) for c in CAUSES},
        "input_pipeline_s": inputs.clip(*window).total / 1e9,
        "input_pipeline_pct": round(100 * inputs.clip(*window).total / cell_ns, 2),
        "host_sync_s": syncs.clip(*window).total / 1e9,
        "overlap_s": overlap_ns / 1e9,
        "overlap_pct_of_busy": round(100 * overlap_ns / busy_ns, 2) if busy_ns else None,
        "streams": streams,
        "kernels": int(is_kernel.sum()),
        "linked": int(is_linked.sum()),
        "top_kernels": top_kernels,
        "top_operators": top_ops,
        "memcpy": memcpy,
        "memset": memset,
    }
    out["verdict"] = verdict(out)
    out["_links"] = (link_rows, launch_by_corr)
    return out


def verdict(a: dict[str, Any]) -> dict[str, Any]:
    """The verdict line: the device's busy share, and when it idled most of the cell, the
    cause that took most of the idle time."""
    idle = a["idle_pct"]
    causes = a["idle_by_cause"]
    main = max(CAUSES, key=lambda c: causes[c])
    numbers = {"idle_pct": idle, "busy_pct": a["busy_pct"],
               "input_pipeline_pct": a["input_pipeline_pct"]}  # fmt: skip
    top = a["top_kernels"][0] if a["top_kernels"] else None
    if idle >= IDLE_WARN_PCT and causes[main] > 0:
        text = f"GPU idle {idle:.0f} % of the cell: {CAUSE_WORDS[main]}"
        if main == "input" or (main == "host" and a["input_pipeline_pct"] >= 10):
            text += (
                f"; the DataLoader's `__next__` took {a['input_pipeline_pct']:.0f} % of the cell"
            )
        elif main == "sync":
            text += f"; the host waited in synchronising calls for {a['host_sync_s'] * 1e3:.3g} ms"
        return {"kind": "gpu", "level": "warning", "text": text + ".", "numbers": numbers}
    text = f"GPU busy {a['busy_pct']:.0f} % of the cell"
    if top is not None:
        text += f"; `{_short(top['name'])}` took {top['pct']:.0f} % of the device time"
    return {"kind": "gpu", "level": "info", "text": text + ".", "numbers": numbers}


def _short(name: str, limit: int = 60) -> str:
    """A kernel's name without its template arguments, when they make it long."""
    if len(name) <= limit:
        return name
    head = name.split("<", 1)[0].removeprefix("void ").strip()
    return head if len(head) <= limit else head[: limit - 1] + "…"


def public(analysis: dict[str, Any]) -> dict[str, Any]:
    """The analysis as GET device answers it (without the link table)."""
    return {k: v for k, v in analysis.items() if not k.startswith("_")}


def links_of(
    analysis: dict[str, Any], location: int, start: int, host_kinds: bool
) -> list[dict[str, Any]]:
    """The other ends of the launch links of the span that starts at ``start`` on
    ``location``: a device activity's launch, or the activities a launch started."""
    rows, launches = analysis["_links"]
    out = []
    if not host_kinds:
        for c, loc, s in zip(rows["correlation"], rows["device_location"], rows["device_start"]):
            if loc == location and s == start and c in launches:
                hl, hs, he = launches[c]
                out.append(
                    {"correlation": c, "location": hl, "start": hs, "end": he, "kind": "launch"}
                )
        return out
    corr = [c for c, (hl, hs, _he) in launches.items() if hl == location and hs == start]
    for c, loc, s, e in zip(
        rows["correlation"], rows["device_location"], rows["device_start"], rows["device_end"]
    ):
        if c in corr:
            out.append({"correlation": c, "location": loc, "start": s, "end": e, "kind": "device"})
    return out
