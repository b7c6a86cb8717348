"""The recording engines, against outside oracles.

- The fallback engine reads VizTracer's private buffer layout: checked against VizTracer's
  public read-out (Tracer.load()) of the very same buffer.
- Our C recorder (calltrace) records the same calls as VizTracer's tracer on the same code
  (per thread, function and nesting), and the same call counts as cProfile; its rules
  (dropped subtrees, unmatched returns, the capacity, calls open at stop) each have a case.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter

import numpy as np
import pytest

from scorep_kernel.measure import calltrace_engine, engine

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
    tracer = engine.get_tracer(100_000, "viztracer")
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


needs_calltrace = pytest.mark.skipif(
    not calltrace_engine.available(),
    reason="the C recorder is built for CPython 3.11 (kernel/native/build_calltrace.py)",
)


def _name(keys: list, i: int) -> str:
    key = keys[i]
    if key[0] == "py":
        c = key[1]
        return f"{c.co_qualname} ({c.co_filename}:{c.co_firstlineno})"
    _, module, type_name, fname = key
    return f"{module}.{fname}" if module else (f"{type_name}.{fname}" if type_name else fname)


def _record(name: str, source: str, c_functions: bool, filename: str = "<engine-check>"):
    tracer = engine.get_tracer(100_000, name)
    tracer.configure(ignore_prefix=engine.package_dir(), c_functions=c_functions, exclude_files=[])
    code = compile(source, filename, "exec")
    tracer.start()
    exec(code, {"__name__": "__main__"})
    tracer.stop()
    assert sys.getprofile() is None and threading.getprofile() is None
    return tracer.extract()


def _calls(raw) -> Counter:
    """(thread name, function, name of the innermost enclosing call) per call."""
    out: Counter = Counter()
    for tid in np.unique(raw.tid).tolist():
        rows = np.flatnonzero(raw.tid == tid)
        s, e, k = raw.start[rows], raw.end[rows], raw.key[rows]
        order = np.lexsort((-e, s))
        stack: list[tuple[float, str]] = []
        for i in order.tolist():
            while stack and stack[-1][0] < e[i]:
                stack.pop()
            name = _name(raw.keys, int(k[i]))
            parent = stack[-1][1] if stack else ""
            out[(raw.thread_names[tid], name, parent)] += 1
            stack.append((e[i], name))
    return out


@needs_calltrace
@pytest.mark.parametrize("c_functions", [False, True])
def test_calltrace_records_what_viztracer_records(c_functions):
    def mine(calls: Counter) -> Counter:
        """The calls in the checked code or made from it: what the garbage collector's
        weakref callbacks do inside threading's calls differs from run to run."""
        return Counter({k: v for k, v in calls.items() if "<engine-check>" in k[1] + k[2]})

    ours = mine(_calls(_record("calltrace", SOURCE, c_functions)))
    theirs = mine(_calls(_record("viztracer", SOURCE, c_functions)))
    assert ours == theirs
    assert (
        sum(v for (t, n, _), v in ours.items() if n.startswith("leaf (") and t == "second") == 200
    )


GENERATORS_AND_EXCEPTIONS = """
def gen(n):
    for i in range(n):
        yield fail(i) if i % 3 else i
def fail(i):
    try:
        raise ValueError(i)
    except ValueError:
        return -i
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def main():
    total = sum(gen(30))
    try:
        [fail(0) for _ in range(3)]
        fib(12)
        raise KeyError
    except KeyError:
        pass
    return total
main()
"""


@needs_calltrace
def test_calltrace_call_counts_equal_cprofiles():
    import cProfile

    raw = _record("calltrace", GENERATORS_AND_EXCEPTIONS, False, "<counts>")
    ours = Counter(raw.keys[k][1].co_name for k in raw.key.tolist())
    prof = cProfile.Profile()
    code = compile(GENERATORS_AND_EXCEPTIONS, "<counts>", "exec")
    prof.enable()
    exec(code, {"__name__": "__main__"})
    prof.disable()
    prof.create_stats()
    theirs = {
        fn: nc
        for (file, _, fn), (_, nc, *_) in prof.stats.items()  # type: ignore[attr-defined]
        if file == "<counts>" and fn != "<module>"
    }
    # a generator's every resume is a call of it, to both
    assert {fn: ours[fn] for fn in theirs} == theirs
    assert theirs["fib"] == 465 and theirs["gen"] == 31


@needs_calltrace
def test_calltrace_drops_an_ignored_file_with_everything_below(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "wrapped.py").write_text("def wrapper(f):\n    return f() + f()\n")
    sys.path.insert(0, str(lib))
    try:
        import wrapped  # type: ignore[import-not-found]

        def callee():
            return len("x")

        tracer = engine.get_tracer(1000, "calltrace")
        tracer.configure(ignore_prefix=str(lib) + "/", c_functions=False, exclude_files=[])
        tracer.start()
        wrapped.wrapper(callee)
        callee()
        tracer.stop()
        raw = tracer.extract()
    finally:
        sys.path.remove(str(lib))
        sys.modules.pop("wrapped", None)
    names = [_name(raw.keys, k).split(" (")[0] for k in raw.key.tolist()]
    # the wrapper and the two calls under it are gone; the direct call is kept
    assert (
        names.count("test_calltrace_drops_an_ignored_file_with_everything_below.<locals>.callee")
        == 1
    )
    assert not any("wrapper" in n for n in names)


@needs_calltrace
def test_calltrace_capacity_unmatched_returns_and_open_calls():
    tracer = engine.get_tracer(5, "calltrace")
    tracer.configure(ignore_prefix=engine.package_dir(), c_functions=False, exclude_files=[])

    def leaf():
        return 1

    def outer():
        tracer.start()  # this frame and the test's were entered before: their returns
        for _ in range(10):  # are ignored
            leaf()
        return 1

    outer()
    assert not tracer.collecting and tracer.recorded == 5  # stopped at the capacity
    leaf()
    tracer.stop()
    raw = tracer.extract()
    assert [_name(raw.keys, k).split(" (")[0].rsplit(".", 1)[-1] for k in raw.key.tolist()] == [
        "leaf"
    ] * 5
    assert np.all(raw.end >= raw.start)

    # a call open at stop() ends at stop()
    tracer = engine.get_tracer(100, "calltrace")
    tracer.configure(ignore_prefix=engine.package_dir(), c_functions=False, exclude_files=[])

    def inner():
        tracer.stop()
        return 2

    def opened():
        return inner()

    tracer.start()
    opened()
    raw = tracer.extract()
    names = [_name(raw.keys, k).split(" (")[0].rsplit(".", 1)[-1] for k in raw.key.tolist()]
    assert sorted(names) == ["inner", "opened"]
    assert raw.end.max() <= tracer.now_ns() and raw.start.min() < raw.end.min()
    sys.setprofile(None)


@needs_calltrace
def test_calltrace_matches_a_return_to_its_call():
    """With the profile function taken away and put back (sys.setprofile(None), a thread
    recorded from the middle of its stack), a return can come without its call, or a
    call's return can be missed: a return ends the call it names, not the last one."""
    tracer = engine.get_tracer(1000, "calltrace")
    tracer.configure(ignore_prefix=engine.package_dir(), c_functions=False, exclude_files=[])

    def leaf():
        return 1

    def resume_from_python():  # its call is not seen (no profile function then), its return is
        tracer.resume_here()

    def switch_off():  # its return is missed (no profile function then)
        sys.setprofile(None)

    def outer():
        sys.setprofile(None)
        resume_from_python()
        leaf()
        switch_off()
        tracer.resume_here()
        leaf()
        return 2

    tracer.start()
    outer()
    leaf()
    tracer.stop()
    sys.setprofile(None)
    raw = tracer.extract()
    got = sorted(
        (s, e, raw.keys[k][1].co_name)
        for s, e, k in zip(raw.start.tolist(), raw.end.tolist(), raw.key.tolist())
    )
    names = [n for _, _, n in got]
    assert names == ["outer", "leaf", "switch_off", "leaf", "leaf"], names
    (o_s, o_e, _), first, (sw_s, sw_e, _), second, last = got
    assert o_s < first[0] <= first[1] < sw_s < second[0] <= second[1] <= o_e < last[0]
    assert sw_e == o_e  # missed: it ends with its caller


@needs_calltrace
def test_calltrace_takes_its_profile_function_from_threads_that_outlive_a_run():
    """A thread started during a run (a data loader, a server) would keep the profile
    function for its life: every bytecode of it on the interpreter's slow tracing path,
    recorded again by the next run. stop() takes it away from every thread."""
    tracer = engine.get_tracer(1000, "calltrace")
    tracer.configure(ignore_prefix=engine.package_dir(), c_functions=False, exclude_files=[])
    started, go, seen = threading.Event(), threading.Event(), []

    def worker():
        seen.append(sys.getprofile())  # traced while the run goes on
        started.set()
        go.wait()
        seen.append(sys.getprofile())  # after stop()

    tracer.start()
    t = threading.Thread(target=worker, name="outlives")
    t.start()
    started.wait()
    tracer.stop()
    go.set()
    t.join()
    assert tracer.owns(seen[0]) and seen[1] is None, seen
    raw = tracer.extract()
    assert "outlives" in raw.thread_names.values()


@pytest.mark.parametrize("name", ["calltrace", "viztracer"])
def test_a_run_inside_cprofile_stops_with_a_note(tmp_path, name):
    """cProfile on when a run starts (a user profiling the kernel): the run records, and
    stopping it cannot give cProfile's C profile function back from Python; it says so
    instead of failing with TypeError at the next call."""
    import cProfile

    from scorep_kernel.measure.session import Measurement

    if name == "calltrace" and not calltrace_engine.available():
        pytest.skip("the C recorder is built for CPython 3.11")
    os.environ[engine.ENV_ENGINE] = name
    prof = cProfile.Profile()
    try:
        warm = Measurement(tmp_path / "warm")  # the engine made (its probe run) before
        warm.start()
        warm.stop()
        m = Measurement(tmp_path / "exp")
        prof.enable()
        m.start()
        with m.cell("c"):
            sum(len(str(i)) for i in range(100))
        recording = m.stop()
    finally:
        prof.disable()
        os.environ.pop(engine.ENV_ENGINE, None)
    assert sys.getprofile() is None
    messages = recording.notes["messages"]
    assert any("could not be restored" in msg for msg in messages), messages
    assert recording.event_count > 0
