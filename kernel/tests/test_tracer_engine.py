"""The recording engine reads VizTracer's private buffer layout: check it against
VizTracer's public read-out (Tracer.load()) of the very same buffer."""

from __future__ import annotations

import sys
import threading
from collections import Counter

import numpy as np

from scorep_kernel.measure import engine

SOURCE = """
import threading
def leaf(i):
    return len(str(i))
def middle(n):
    return sum(leaf(i) for i in range(n))
class K:
    def method(self):
        return middle(20)
def top():
    return [K().method() for _ in range(10)]
t = threading.Thread(target=top, name="second")
t.start()
top()
t.join()
"""


def test_direct_read_equals_viztracers_public_load():
    tracer = engine.get_tracer(100_000)
    tracer.configure(ignore_prefix=engine.package_dir(), c_functions=True, exclude_files=[])
    code = compile(SOURCE, "<engine-check>", "exec")
    tracer.start()
    exec(code, {"__name__": "__main__"})
    tracer.stop()
    assert sys.getprofile() is None and threading.getprofile() is None

    raw = tracer.extract(clear=False)
    public = [e for e in tracer._tracer.load() if e.get("ph") == "X"]  # empties the buffer
    assert tracer.recorded == 0
    assert len(raw) == len(public) > 400

    def name(i):
        key = raw.keys[i]
        if key[0] == "py":
            c = key[1]
            return f"{c.co_qualname} ({c.co_filename}:{c.co_firstlineno})"
        _, module, type_name, fname = key
        return f"{module}.{fname}" if module else (f"{type_name}.{fname}" if type_name else fname)

    mine = sorted(
        (int(tid), name(k), round(s / 1000.0, 3), round((e - s) / 1000.0, 3))
        for tid, k, s, e in zip(
            raw.tid.tolist(), raw.key.tolist(), raw.start.tolist(), raw.end.tolist()
        )
    )
    theirs = sorted((e["tid"], e["name"], round(e["ts"], 3), round(e["dur"], 3)) for e in public)
    assert [(t, n) for t, n, _, _ in mine] == [(t, n) for t, n, _, _ in theirs]
    # same times, to the rounding of VizTracer's integer-ns conversion
    assert np.allclose([m[2] for m in mine], [t[2] for t in theirs], atol=0.002, rtol=0)
    assert np.allclose([m[3] for m in mine], [t[3] for t in theirs], atol=0.002, rtol=0)
    counts = Counter(n for _, n, _, _ in mine)
    assert sum(v for k, v in counts.items() if k.startswith("leaf (")) == 2 * 10 * 20
    assert sum(v for k, v in counts.items() if k.startswith("K.method (")) == 20
    assert set(raw.tid.tolist()) == set(raw.thread_names)
    assert "second" in raw.thread_names.values()
