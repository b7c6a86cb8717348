"""Timeline queries on a 10M-event trace: p50 / p95 latency over random windows at every
zoom level (full view down to ~1 µs windows) and the largest response, measured as the
handler computes it (index query + JSON encoding, index memory-mapped and warm).

Peer: the same merge over the raw call table without the stored levels (what a server
without precomputed levels does), on the same windows.
"""

from __future__ import annotations

import json
import time

import numpy as np
from _report import report
from _server_tracegen import cached_experiment

N_EVENTS = 10_000_000
QUERIES = 300
WIDTH = 1600


def main() -> None:
    from jupyterlab_scorep import lod, timeline
    from jupyterlab_scorep.index_store import IndexCache, ensure_index

    exp = cached_experiment("server-timeline-10M", N_EVENTS)
    t = time.perf_counter()
    index = IndexCache().get(ensure_index(str(exp)))
    build = time.perf_counter() - t
    full = index.meta["range"][1]
    rng = np.random.default_rng(42)
    windows = []
    for _ in range(QUERIES):
        span = int(full / 10 ** rng.uniform(0, np.log10(full / 1000)))  # full .. ~1 µs
        t0 = int(rng.integers(0, max(full - span, 1)))
        windows.append((t0, t0 + span))
    windows[0] = (0, full)
    times, sizes = [], []
    for t0, t1 in windows:
        t = time.perf_counter()
        body = json.dumps(timeline.query(index, t0, t1, WIDTH), separators=(",", ":"))
        times.append(time.perf_counter() - t)
        sizes.append(len(body))
    p50, p95 = np.percentile(times, 50) * 1e3, np.percentile(times, 95) * 1e3

    # Peer: merge straight from the raw calls (level 0 only), on the first 40 windows.
    def raw_query(t0, t1):
        out = []
        for loc in index.locations:
            i = loc["id"]
            ptr = index.array(f"L{i}.ptr")[0]
            s, e = index.array(f"L{i}.start"), index.array(f"L{i}.end")
            r, c = index.array(f"L{i}.region"), index.array(f"L{i}.count")
            parts = []
            for d in range(len(ptr) - 1):
                a, b = int(ptr[d]), int(ptr[d + 1])
                lo = a + int(np.searchsorted(e[a:b], t0, "right"))
                hi = a + int(np.searchsorted(s[a:b], t1, "left"))
                parts.append((lo, hi, d))
            idx = np.concatenate([np.arange(lo, hi) for lo, hi, _ in parts])
            seg = np.repeat([d for *_, d in parts], [hi - lo for lo, hi, _ in parts])
            out.append(lod.merge(s[idx], e[idx], r[idx], c[idx], seg, (t1 - t0) / WIDTH, t0))
        return out

    peer_times = []
    for t0, t1 in windows[:40]:
        t = time.perf_counter()
        raw_query(t0, t1)
        peer_times.append(time.perf_counter() - t)
    peer_p95 = np.percentile(peer_times, 95) * 1e3
    note = (f"{index.meta['events']:,} events, {len(index.locations)} locations, "
            f"{QUERIES} windows at {WIDTH} px, index built in {build:.1f} s "
            f"({index.meta['build_s']['total']:.1f} s when first built); peer on 40 windows")
    report("timeline query p50 (10M events)", p50, "ms", target="-", note=note)
    report("timeline query p95 (10M events)", p95, "ms", peer="raw calls, no levels",
           peer_value=peer_p95, target="<= 50", met=bool(p95 <= 50), note=note)
    report("timeline largest response (10M events)", max(sizes) / 1e6, "MB",
           target="<= 1", met=bool(max(sizes) <= 1_000_000))


if __name__ == "__main__":
    main()
