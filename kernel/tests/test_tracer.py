"""The builtin tracer on known workloads: regions, nesting, threads, visits, durations."""

from __future__ import annotations

import sys
import threading
import time
import types

import pytest
from test_tracer_util import calls, compile_cell, names, run_cell

from scorep_kernel.formats.recording import ROLE_CELL, ROLE_FUNCTION
from scorep_kernel.measure.measure_config import MeasureConfig
from scorep_kernel.measure.session import Measurement

WORKLOAD = """
import time, threading

def f():
    time.sleep(0.2)

def g():
    for _ in range(3):
        f()

worker = threading.Thread(target=g, name="worker")
worker.start()
g()
worker.join()
"""


def measure(tmp_path, source, config=None, label="cell [1]", **kw):
    m = Measurement(tmp_path, config or MeasureConfig())
    m.start()
    try:
        ns, filename = run_cell(m, label, source, **kw)
    finally:
        rec = m.stop()
    return rec, ns, filename


def test_threads_with_python_default_names_are_named_by_their_target(tmp_path):
    # Python names these "Thread-N (work)" and "Thread-N" by its own counter, not the
    # run's: the location says the target's name, or only its number
    rec, _, _ = measure(
        tmp_path,
        "import threading\n"
        "def work():\n"
        "    sum(range(1000))\n"
        "class Plain(threading.Thread):\n"
        "    def run(self):\n"
        "        sum(range(1000))\n"
        "a = threading.Thread(target=work); a.start(); a.join()\n"
        "b = Plain(); b.start(); b.join()\n"
        "c = threading.Thread(target=work, name='Thread-worker'); c.start(); c.join()\n",
    )
    assert [t.name for t in rec.threads] == [
        "Master thread",
        "Thread 1 (work)",
        "Thread 2",
        "Thread 3 (Thread-worker)",
    ]


def test_g_calls_f_three_times_on_two_threads(tmp_path):
    rec, _, filename = measure(tmp_path, WORKLOAD)
    got = calls(rec)
    assert [t.name for t in rec.threads] == ["Master thread", "Thread 1 (worker)"]
    by_thread = {
        t: [c for c in got if c.thread == t] for t in ("Master thread", "Thread 1 (worker)")
    }

    master = by_thread["Master thread"]
    cell = [c for c in master if c.role == ROLE_CELL]
    assert [c.name for c in cell] == ["cell [1]"] and cell[0].depth == 0
    for thread, calls_ in by_thread.items():
        g = [c for c in calls_ if c.name == "__main__:g"]
        f = [c for c in calls_ if c.name == "__main__:f"]
        assert len(g) == 1, thread
        assert len(f) == 3, thread
        assert all(c.parent == "__main__:g" for c in f)
        for c in f:
            assert 0.2 <= c.seconds < 0.35, (thread, c.seconds)
            assert g[0].start <= c.start and c.end <= g[0].end
        assert 0.6 <= g[0].seconds < 0.9
    # On the master thread g is called by the cell itself; on the worker by Thread.run.
    assert [c.parent for c in master if c.name == "__main__:g"] == ["cell [1]"]
    assert [c.parent for c in by_thread["Thread 1 (worker)"] if c.name == "__main__:g"] == [
        "threading.Thread:run"
    ]
    # The region carries Score-P's naming, the module as group, file and first line.
    f_region = next(r for r in rec.regions if r.name == "__main__:f")
    assert (f_region.group, f_region.file, f_region.line, f_region.role) == (
        "__main__",
        filename,
        4,
        ROLE_FUNCTION,
    )
    # The cell region spans everything on the master thread.
    assert cell[0].start <= min(c.start for c in master)
    assert cell[0].end >= max(c.end for c in master)
    assert rec.start_ns <= cell[0].start and cell[0].end <= rec.end_ns
    # Clock offset converts to the epoch.
    assert abs((rec.start_ns + rec.clock_offset_ns) - time.time_ns()) < 60e9


def test_method_and_nested_function_names(tmp_path):
    source = """
class Model:
    def step(self):
        def inner():
            return 1
        return inner()

    @staticmethod
    def make():
        return Model()

Model.make().step()
(lambda: 2)()
"""
    rec, _, _ = measure(tmp_path, source)
    got = names(rec)
    # Score-P's rule: a function is a class's when its first parameter is ``self``; a
    # static method is the module's (scorep_binding_python, pythonHelpers.cpp)
    assert {
        "__main__.Model:step",
        "__main__:make",
        "__main__:inner",
        "__main__:<lambda>",
    } <= got
    assert "__main__.Model:make" not in got
    # the cell's <module> frame is the cell region, not a region of its own
    assert "__main__:<module>" not in got


INHERITED = """
class K:
    def m(self):
        return [self for _ in range(1)]
    def n(self):
        def inner():
            return self
        return inner()
    def o(self):
        return 1
    @staticmethod
    def s():
        return 2
    @classmethod
    def c(cls):
        return 3
    def doo(arg):
        return 4
class S(K):
    def o(self):
        return super().o()
class Outer:
    class Inner:
        def p(self):
            return 5
keep = S()
keep.m(); keep.n(); keep.o(); K.s(); K.c(); keep.doo(); Outer.Inner().p()
"""


def test_methods_are_named_by_the_class_of_self(tmp_path, monkeypatch):
    """Score-P's bindings name a frame after ``type(self).__name__`` (a ``self`` parameter
    or a closure's free ``self``) and the module of its globals: an inherited method and
    one reached through super() on an S are ``__main__.S:...``; these are the names
    ``python -m scorep --nocompiler`` 4.5.1 wrote for this source. The cell's namespace is
    a module registered as ``__main__``, as IPython registers its user module."""
    main = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    rec, _, _ = measure(tmp_path, INHERITED, namespace=main.__dict__)
    got = {n for n in names(rec) if n.startswith("__main__")}
    assert got == {
        "__main__.Inner:p",
        "__main__.S:<listcomp>",
        "__main__.S:inner",
        "__main__.S:m",
        "__main__.S:n",
        "__main__.S:o",
        "__main__:Inner",
        "__main__:K",
        "__main__:Outer",
        "__main__:S",
        "__main__:c",
        "__main__:doo",
        "__main__:s",
    }


def test_a_method_of_a_class_whose_subclass_is_alive_too_keeps_its_class(tmp_path, monkeypatch):
    """Instances of both K and its subclass S live: K.m called on a K is ``__main__.K:m``
    (Score-P's name for it too), the census cannot tell, and names the defining class."""
    source = (
        "class K:\n    def m(self):\n        return 1\n"
        "class S(K):\n    pass\n"
        "k, s = K(), S()\nk.m()\n"
    )
    main = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    rec, _, _ = measure(tmp_path, source, namespace=main.__dict__)
    got = names(rec)
    assert "__main__.K:m" in got and "__main__.S:m" not in got


def test_a_method_of_a_large_hierarchy_is_named_by_its_one_live_class(tmp_path, monkeypatch):
    """Past REFERRERS_UP_TO candidate classes the census takes the type of every tracked
    object (one get_referrers pass compares each reference with every class asked for: 205
    ms for torch's nn.Module family in the paper's kernel): K has 24 subclasses, only S7 has
    an instance, so K.m called on it is ``__main__.S7:m`` as the bindings name it."""
    from scorep_kernel.measure import self_class

    subclasses = "".join(f"class S{i}(K):\n    pass\n" for i in range(24))
    source = "class K:\n    def m(self):\n        return 1\n" + subclasses + "s = S7()\ns.m()\n"
    assert self_class.REFERRERS_UP_TO < 24 + 1  # K and its subclasses
    main = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    rec, _, _ = measure(tmp_path, source, namespace=main.__dict__)
    assert "__main__.S7:m" in names(rec) and "__main__.K:m" not in names(rec)


def test_both_ways_of_the_census_find_the_same_live_classes(monkeypatch):
    from scorep_kernel.measure import self_class

    class Meta(type):
        pass

    class Base:
        pass

    family = [type(f"C{i}", (Base,), {}) for i in range(30)]
    made = Meta("Made", (), {})  # a class is an instance of its metaclass
    keep = [family[3](), family[17](), made]
    wanted = {Base, Meta, *family}
    by_types = self_class.live_types(wanted)
    monkeypatch.setattr(self_class, "REFERRERS_UP_TO", len(wanted))
    assert self_class.live_types(wanted) == by_types == {family[3], family[17], Meta}
    assert keep


def test_only_calls_beneath_the_cell_code_are_recorded(tmp_path):
    def outside_helper():
        return sum(range(10))

    m = Measurement(tmp_path)
    m.start()
    outside_helper()  # before the cell: not recorded
    code, filename = compile_cell("def inside():\n    return helper()\ninside()\n")
    with m.cell("cell [2]", code_filename=filename):
        outside_helper()  # inside the cell's span but not beneath its code
        exec(code, {"__name__": "__main__", "helper": outside_helper})
    outside_helper()
    rec = m.stop()
    got = calls(rec)
    helper_calls = [c for c in got if c.name.endswith(":outside_helper")]
    # exactly once: the call made by the cell code, not the three around it
    assert len(helper_calls) == 1 and helper_calls[0].parent == "__main__:inside"
    assert rec.notes["dropped"]["outside_cells"] >= 3


def test_without_code_filename_everything_in_the_cell_span_is_recorded(tmp_path):
    def worker_side():
        return 1

    m = Measurement(tmp_path)
    m.start()
    worker_side()  # outside the cell span
    with m.cell("cell [1]"):
        worker_side()
    rec = m.stop()
    got = [c for c in calls(rec) if c.name.endswith(":worker_side")]
    assert len(got) == 1 and got[0].parent == "cell [1]"


def test_several_cells_in_one_measurement(tmp_path):
    m = Measurement(tmp_path)
    m.start()
    ns = {"__name__": "__main__"}
    run_cell(m, "cell [1]", "def a():\n    return 1\na()\n", ns)
    run_cell(m, "cell [2]", "def b():\n    return a()\nb()\nb()\n", ns)
    rec = m.stop()
    got = calls(rec)
    cells = [c for c in got if c.role == ROLE_CELL]
    assert [c.name for c in cells] == ["cell [1]", "cell [2]"]
    assert cells[0].end <= cells[1].start
    assert [(c.name, c.parent) for c in got if c.depth == 1] == [
        ("__main__:a", "cell [1]"),
        ("__main__:b", "cell [2]"),
        ("__main__:b", "cell [2]"),
    ]
    # a() called from cell 2 is recorded there, beneath b (its code is cell 1's file)
    assert [c.parent for c in got if c.name == "__main__:a"] == [
        "cell [1]",
        "__main__:b",
        "__main__:b",
    ]


def test_stop_restores_previous_profile_functions(tmp_path):
    seen = []

    def previous(frame, event, arg):
        seen.append(event)

    def previous_threads(frame, event, arg):
        pass

    old_sys, old_thread = sys.getprofile(), threading.getprofile()
    sys.setprofile(previous)
    threading.setprofile(previous_threads)
    try:
        m = Measurement(tmp_path)
        m.start()
        assert sys.getprofile() is not previous
        run_cell(m, "cell [1]", "x = 1\n")
        m.stop()
        assert sys.getprofile() is previous
        assert threading.getprofile() is previous_threads
    finally:
        sys.setprofile(old_sys)
        threading.setprofile(old_thread)
    assert sys.getprofile() is old_sys


def test_stop_leaves_no_profiler_and_the_import_hook_removed(tmp_path):
    import builtins

    before = builtins.__import__
    m = Measurement(tmp_path)
    m.start()
    assert builtins.__import__ is not before
    run_cell(m, "cell [1]", "y = 2\n")
    m.stop()
    assert sys.getprofile() is None and threading.getprofile() is None
    assert builtins.__import__ is before


def test_c_functions_are_optional(tmp_path):
    source = "import time\ndef f():\n    time.sleep(0.01)\n    return len([1])\nf()\n"
    rec, _, _ = measure(tmp_path, source)
    assert "time:sleep" not in names(rec)
    rec, _, _ = measure(tmp_path, source, MeasureConfig(c_functions=True))
    got = calls(rec)
    assert [c.parent for c in got if c.name == "time:sleep"] == ["__main__:f"]
    assert "builtins:len" in {c.name for c in got}


def test_only_one_measurement_at_a_time(tmp_path):
    m = Measurement(tmp_path)
    m.start()
    try:
        with pytest.raises(RuntimeError, match="another Measurement"):
            Measurement(tmp_path).start()
        with pytest.raises(RuntimeError, match="already started"):
            m.start()
    finally:
        m.stop()
    with pytest.raises(RuntimeError, match="needs a running"):
        m.stop()


def test_functions_from_earlier_notebook_cells_are_main(tmp_path):
    # defined by a cell that ran before the measurement, in ipykernel's cell file layout
    earlier = compile(
        "def from_earlier():\n    return 1\n", "/tmp/ipykernel_4242/0f3a9c.py", "exec"
    )
    ns = {"__name__": "__main__"}
    exec(earlier, ns)
    m = Measurement(tmp_path)
    m.start()
    run_cell(m, "cell [5]", "from_earlier()\n", ns)
    rec = m.stop()
    got = calls(rec)
    assert [(c.name, c.parent) for c in got if c.depth == 1] == [
        ("__main__:from_earlier", "cell [5]")
    ]


def test_a_cell_that_raises_is_recorded_up_to_the_exception(tmp_path):
    m = Measurement(tmp_path)
    m.start()
    with pytest.raises(ZeroDivisionError):
        run_cell(
            m,
            "cell [1]",
            "def inner():\n    return 1 / 0\ndef outer():\n    return inner()\nouter()\n",
        )
    run_cell(m, "cell [2]", "z = 3\n")
    rec = m.stop()
    got = calls(rec)
    assert [(c.name, c.parent) for c in got if c.depth >= 1] == [
        ("__main__:outer", "cell [1]"),
        ("__main__:inner", "__main__:outer"),
    ]
    assert [c.name for c in got if c.depth == 0] == ["cell [1]", "cell [2]"]


def test_a_thread_still_running_at_stop_is_closed_there(tmp_path):
    import threading as th

    release = th.Event()
    m = Measurement(tmp_path)
    m.start()
    ns = {"__name__": "__main__", "release": release}
    run_cell(
        m,
        "cell [1]",
        (
            "import threading\n"
            "def background():\n"
            "    release.wait(5)\n"
            "t = threading.Thread(target=background, name='bg', daemon=True)\n"
            "t.start()\n"
        ),
        ns,
    )
    rec = m.stop()
    release.set()
    ns["t"].join(5)
    got = calls(rec)
    bg = [c for c in got if c.name == "__main__:background"]
    assert len(bg) == 1 and bg[0].thread == "Thread 1 (bg)"
    assert bg[0].end <= rec.end_ns and bg[0].end >= max(
        c.end for c in got if c.thread == "Master thread"
    )
    assert sys.getprofile() is None


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_runs_untraced(tmp_path):
    m = Measurement(tmp_path)
    m.start()
    code, filename = compile_cell(
        "import os, sys, threading, builtins\n"
        "r, w = os.pipe()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    ok = sys.getprofile() is None and threading.getprofile() is None\n"
        "    ok = ok and type(builtins.__import__).__name__ == 'builtin_function_or_method'\n"
        "    os.write(w, b'1' if ok else b'0')\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "child_ok = os.read(r, 1)\n"
    )
    ns = {"__name__": "__main__"}
    with m.cell("cell [1]", code_filename=filename):
        exec(code, ns)
    m.stop()
    assert ns["child_ok"] == b"1"


def test_threads_running_before_start_are_not_recorded(tmp_path):
    import json
    import threading as th

    go, done = th.Event(), th.Event()
    holder = {}

    def machinery():
        go.wait(5)
        holder["m"]._tracer.install_here()  # traced from here on, as 3.12's sys.monitoring would
        for _ in range(3):
            json.dumps([1])
        sys.setprofile(None)
        done.set()

    host = th.Thread(target=machinery, name="iopub-like")
    host.start()
    m = holder["m"] = Measurement(tmp_path)
    m.start()
    run_cell(
        m,
        "cell [1]",
        "started = threading.Thread(target=lambda: None, name='new'); "
        "started.start(); started.join()\n",
        {"__name__": "__main__", "threading": th},
    )
    go.set()
    done.wait(5)
    rec = m.stop()
    host.join()
    assert [t.name for t in rec.threads] == ["Master thread", "Thread 1 (new)"]


def test_a_tracer_that_stopped_by_itself_is_reported(tmp_path):
    m = Measurement(tmp_path)
    m.start()
    run_cell(m, "cell [1]", "def early():\n    return 1\nearly()\n")
    m._tracer.halt()  # what VizTracer does on a return that does not match its stack
    run_cell(m, "cell [2]", "def late():\n    return 2\nlate()\n")
    rec = m.stop()
    assert "__main__:early" in names(rec) and "__main__:late" not in names(rec)
    assert any("stopped recording before the end" in msg for msg in rec.notes["messages"])
    assert rec.notes["cap_reached"] is False
