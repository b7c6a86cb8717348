"""Round trips kernel -> real worker process -> kernel through scorep_kernel.state.

Each row of CASES: kernel-side setup code, the cell run in the worker, and a check run in the
kernel's namespace afterwards (asserts comparing with the expected namespace).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import scorep_kernel
from scorep_kernel.state import apply, pack, unpack

HARNESS = Path(__file__).with_name("state_worker_harness.py")
KERNEL_DIR = str(Path(scorep_kernel.__file__).resolve().parent.parent)
sys.path.insert(0, str(Path(__file__).parent))
from state_worker_harness import read, write  # noqa: E402 (after the path set-up)


def run_in_worker(namespace: dict, cell: str, *, transport: str | None = None):
    """Pack `namespace`, run `cell` in a fresh worker process, apply what comes back."""
    packet = pack(namespace, transport=transport)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([KERNEL_DIR, os.environ.get("PYTHONPATH", "")])
    )
    proc = subprocess.Popen(
        [sys.executable, str(HARNESS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        write(proc.stdin, packet.header)
        write(proc.stdin, textwrap.dedent(cell).encode())
        ack = read(proc.stdout)
        assert ack == b"ack", proc.stderr.read().decode()
        packet.release()
        header = read(proc.stdout)
        if not header:
            raise AssertionError("worker failed:\n" + proc.stderr.read().decode())
        unpacked = unpack(header)
        write(proc.stdin, b"ack")
        changes = apply(namespace, unpacked, previous_names=packet.names)
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    return packet, unpacked, changes


@pytest.fixture
def kernel_ns(tmp_path, monkeypatch):
    """A notebook-like namespace; the process state (environ, sys.path, cwd) is restored after."""
    monkeypatch.chdir(tmp_path)
    saved_path = list(sys.path)
    saved_env = dict(os.environ)
    yield {"__name__": "__main__", "__builtins__": __builtins__, "TMP": str(tmp_path)}
    sys.path[:] = saved_path
    os.environ.clear()
    os.environ.update(saved_env)


CASES = [
    # id, kernel setup, cell in the worker, check in the kernel afterwards
    ("new-name", "", "y = 5", "assert y == 5"),
    ("rebind", "x = 1", "x = 'two'", "assert x == 'two'"),
    ("delete", "x = 1\nz = 3", "del x", "assert 'x' not in globals() and z == 3"),
    ("list-append", "lst = [1]", "lst.append(2)", "assert lst == [1, 2]"),
    ("dict-mutation", "d = {'a': 1}", "d['b'] = 2\ndel d['a']", "assert d == {'b': 2}"),
    (
        "numpy-inplace",
        "import numpy as np\narr = np.zeros(10)",
        "arr += 1",
        "assert (arr == 1).all()",
    ),
    ("aliasing-kept", "a = [1]\nb = a", "a.append(2)", "assert a is b and b == [1, 2]"),
    ("aliasing-new", "", "c = d = {'k': []}\ne = c['k']", "assert c is d and e is d['k']"),
    (
        "aliasing-array-view",
        "import numpy as np\nbase = np.arange(4_000_000.0)\nview = base",
        "base[0] = -1",
        "assert view is base and base[0] == -1",
    ),
    (
        "function-globals",
        "x = 1\ndef f(): return x",
        "r1 = f()\nx = 5\nr2 = f()",
        "assert (r1, r2, f()) == (1, 5, 5)\nx = 9\nassert f() == 9",
    ),
    (
        "function-new-in-worker",
        "x = 1",
        "def h(v): return v + x",
        "assert h(1) == 2\nx = 10\nassert h(1) == 11",
    ),
    ("lambda", "k = 3\ng = lambda v: v * k", "out = g(2)", "assert out == 6 and g(3) == 9"),
    (
        "closure",
        "def make(n):\n    def add(v): return v + n\n    return add\nadd5 = make(5)",
        "r = add5(1)\nadd7 = make(7)",
        "assert r == 6 and add7(1) == 8 and add5(0) == 5",
    ),
    (
        "class-and-instance",
        "scale = 2\nclass Point:\n    def __init__(self, x): self.x = x\n    def norm(self): return abs(self.x) * scale\np = Point(3)",
        "p.x = 4\nq = Point(-1)\nsame = isinstance(p, Point)",
        "assert same and isinstance(p, Point) and isinstance(q, Point)\nassert p.norm() == 8 and q.norm() == 2\n"
        "scale = 10\nassert p.norm() == 40",
    ),
    (
        "class-new-in-worker",
        "",
        "class W:\n    def hi(self): return 'hi'\nw = W()",
        "assert type(w) is W and w.hi() == 'hi'",
    ),
    (
        "lru-cache",
        "import functools\n@functools.lru_cache(maxsize=None)\ndef fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)",
        "r = fib(30)\ninfo = fib.cache_info().currsize",
        "assert r == 832040 and info == 31 and fib(10) == 55 and fib.cache_info().maxsize is None",
    ),
    (
        "decorated-function",
        "import functools\ndef logged(fn):\n    @functools.wraps(fn)\n    def wrapper(*a):\n        calls.append(fn.__name__)\n        return fn(*a)\n    return wrapper\ncalls = []\n@logged\ndef sq(v): return v * v",
        "r = sq(3)",
        "assert r == 9 and calls == ['sq'] and sq(2) == 4 and calls == ['sq', 'sq'] and sq.__name__ == 'sq'",
    ),
    (
        "dataclass-enum-namedtuple",
        "import dataclasses, enum, typing\n@dataclasses.dataclass\nclass P:\n    x: int\n    y: int = 0\n"
        "class Color(enum.Enum):\n    RED = 1\n    BLUE = 2\nclass Pair(typing.NamedTuple):\n    a: int\n    b: str\n"
        "p = P(1)\nc = Color.RED\npr = Pair(1, 'x')",
        "p.y = 5\nc2 = Color.BLUE\nsame = c is Color.RED\npr2 = pr._replace(a=2)",
        "assert p == P(1, 5) and same and c is Color.RED and c2 is Color.BLUE and pr2 == Pair(2, 'x')",
    ),
    (
        "modules",
        "import numpy as np\nimport os.path as osp",
        "import json",
        "import numpy, os\nassert np is numpy and osp is os.path and json is __import__('json')",
    ),
    (
        "environ",
        "import os\nos.environ['SKST_GONE'] = 'x'",
        "os.environ['SKST_NEW'] = '1'\ndel os.environ['SKST_GONE']",
        "assert os.environ.get('SKST_NEW') == '1' and 'SKST_GONE' not in os.environ",
    ),
    (
        "sys-path",
        "",
        "import sys\nsys.path.append('/skst/extra')",
        "import sys\nassert sys.path[-1] == '/skst/extra'",
    ),
    (
        "cwd",
        "import os\nos.makedirs(os.path.join(TMP, 'sub'))",
        "import os\nos.chdir('sub')",
        "import os\nassert os.getcwd() == os.path.join(TMP, 'sub')",
    ),
    (
        "views-of-names",
        "import numpy as np\nbig = np.arange(3_000_000.0)\nhead = big[:10]\nodd = big[1::2]",
        "big[0] = -1\nodd[0] = -3\ntail = big[-5:]\nrev = big[::-1]",
        "assert head.base is big and odd.base is big and tail.base is big and rev.base is big\n"
        "assert head[0] == -1 and big[1] == -3 and rev[0] == big[-1]\n"
        "big[-1] = 7\nassert tail[-1] == 7 and rev[0] == 7\nhead[1] = 9\nassert big[1] == 9",
    ),
    (
        "large-array",
        "import numpy as np\nbig = np.arange(3_000_000, dtype=np.float64)",
        "big[0] = -1\ntwice = big * 2",
        "assert big[0] == -1 and big[1] == 1 and twice[2] == 4 and big.flags.writeable",
    ),
    (
        "bytes",
        "blob = bytes(range(256)) * 8192\nsmall = b'abc'",
        "n = len(blob)\nhead = blob[:3]",
        "assert n == 2 << 20 and head == bytes([0, 1, 2]) and blob[-1] == 255 and small == b'abc'",
    ),
    (
        "bytearray-memoryview",
        "buf = bytearray(3 << 20)\nmv = memoryview(bytearray(b'xyz' * 500_000))",
        "buf[0] = 7\nfirst = bytes(mv[:3])",
        "assert buf[0] == 7 and len(buf) == 3 << 20 and first == b'xyz'",
    ),
    (
        "unpicklables-stay",
        "import threading, socket\nfh = open(__file__ if False else TMP + '/f.txt', 'w+')\nfh.write('hello')\nfh.flush()\n"
        "gen = (i for i in range(3))\nlock = threading.Lock()\nsock = socket.socket()",
        "msg = ''\ntry:\n    fh.read()\nexcept Exception as exc:\n    msg = str(exc)\n"
        "lock_repr = repr(lock)",
        "assert msg.startswith('`fh` (an open file) stays in the kernel: it cannot be sent to the profiling process.')\n"
        "assert not fh.closed and next(gen) == 0 and lock.acquire(blocking=False)\nassert 'lock' in lock_repr\nsock.close()",
    ),
    ("placeholder-rebound-in-worker", "fh = open(TMP + '/g.txt', 'w')", "fh = 5", "assert fh == 5"),
    (
        "unpicklable-created-in-worker",
        "",
        "g2 = (i for i in range(3))\nok = 1",
        "assert 'g2' not in globals() and ok == 1",
    ),
]


def run_check(check: str, namespace: dict) -> None:
    """Run a check in the kernel's namespace: its ``assert`` statements are this test's own
    asserts (an exec'd assert fails with a bare AssertionError, and not at all under -O),
    showing the expression and the values of the names in it."""
    for statement in ast.parse(check).body:
        if not isinstance(statement, ast.Assert):
            exec(compile(ast.Module([statement], []), "<check>", "exec"), namespace)
            continue
        holds = eval(compile(ast.Expression(statement.test), "<check>", "eval"), namespace)
        names = sorted({n.id for n in ast.walk(statement.test) if isinstance(n, ast.Name)})
        shown = ", ".join(f"{n}={namespace[n]!r:.120}" for n in names if n in namespace)
        assert holds, f"{ast.unparse(statement.test)}  ({shown})"


@pytest.mark.parametrize("setup, cell, check", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_round_trip(kernel_ns, setup, cell, check):
    exec(setup, kernel_ns)
    run_in_worker(kernel_ns, cell)
    run_check(check, kernel_ns)


@pytest.mark.parametrize("transport", ["pull", "shm"])
def test_large_buffers_travel_out_of_band(kernel_ns, transport, monkeypatch):
    import numpy as np

    # travels to the worker with os.environ, so its pack() uses the same transport
    monkeypatch.setenv("SCOREP_KERNEL_STATE_TRANSPORT", transport)

    kernel_ns["big"] = np.arange(4_000_000, dtype=np.float64)  # 32 MB
    kernel_ns["blob"] = b"\x01" * (4 << 20)
    packet, unpacked, _ = run_in_worker(
        kernel_ns, "big *= 2\nblob2 = blob + b'!'", transport=transport
    )
    assert packet.transport == transport and unpacked.transport == transport
    assert packet.nbytes > 36_000_000
    assert len(packet.header) < 64 * 1024, "the arrays must not be in the pickle stream"
    assert kernel_ns["big"][3] == 6.0 and kernel_ns["blob2"][-1:] == b"!"


def test_class_identity_survives_the_round_trip(kernel_ns):
    exec("class Model:\n    def __init__(self): self.w = [1]\nm = Model()", kernel_ns)
    original = kernel_ns["Model"]
    run_in_worker(kernel_ns, "m.w.append(2)\nm2 = Model()")
    assert kernel_ns["Model"] is original
    assert type(kernel_ns["m"]) is original and type(kernel_ns["m2"]) is original
    assert kernel_ns["m"].w == [1, 2]


def test_skipped_names_reported_and_kept(kernel_ns):
    exec("import threading\nlock = threading.Lock()\ngen = (i for i in range(2))\nx = 1", kernel_ns)
    lock = kernel_ns["lock"]
    packet, unpacked, changes = run_in_worker(kernel_ns, "x = 2\nnew_gen = (i for i in range(2))")
    assert packet.skipped == {"lock": "a lock", "gen": "a generator"}
    # the worker held placeholders for them; they never travel back
    assert set(unpacked.skipped) == {"lock", "gen", "new_gen"}
    assert kernel_ns["lock"] is lock and kernel_ns["x"] == 2
    assert changes.kept["new_gen"] == "a generator"


def test_module_missing_in_worker_becomes_placeholder(kernel_ns):
    import types

    module = types.ModuleType("skst_only_in_kernel")
    exec("class Thing:\n    pass\n", module.__dict__)
    sys.modules["skst_only_in_kernel"] = module
    try:
        kernel_ns["mod"] = module
        kernel_ns["thing"] = module.Thing()
        kernel_ns["x"] = 1
        _, unpacked, changes = run_in_worker(
            kernel_ns,
            "msg = ''\ntry:\n    thing.attr\nexcept Exception as exc:\n    msg = str(exc)\nx = 2",
        )
        assert kernel_ns["mod"] is module and type(kernel_ns["thing"]) is module.Thing
        assert kernel_ns["x"] == 2 and kernel_ns["msg"].startswith(
            "`thing` (could not be rebuilt here"
        )
    finally:
        del sys.modules["skst_only_in_kernel"]


def test_array_changed_in_place_comes_back_into_its_memory(kernel_ns, monkeypatch):
    """pull: the worker's in-place change lands in the kernel's own array memory, so a reference
    that did not travel sees it, as if the cell had run in the kernel."""
    import numpy as np

    monkeypatch.setenv("SCOREP_KERNEL_STATE_TRANSPORT", "pull")
    original = np.zeros(1 << 20)  # 8 MiB
    kernel_ns["arr"] = original
    holder = [original]  # not in the namespace
    run_in_worker(kernel_ns, "arr += 1\nfresh = arr * 3")
    assert kernel_ns["arr"] is original, "the kernel's array object itself took the change"
    assert holder[0][0] == 1 and kernel_ns["arr"][-1] == 1
    assert not np.shares_memory(kernel_ns["fresh"], original) and kernel_ns["fresh"][0] == 3


def test_rebound_array_does_not_touch_the_original(kernel_ns, monkeypatch):
    import numpy as np

    monkeypatch.setenv("SCOREP_KERNEL_STATE_TRANSPORT", "pull")
    original = np.zeros(1 << 20)
    kernel_ns["arr"] = original
    run_in_worker(kernel_ns, "arr = arr + 5")
    assert original[0] == 0 and kernel_ns["arr"][0] == 5
    assert not np.shares_memory(kernel_ns["arr"], original)


def test_overlapping_views_keep_the_changes_to_the_base(kernel_ns, monkeypatch):
    """A contiguous view packed beside its base travels as a copy (numpy pickling); writing both
    back in place would let the stale view overwrite the base's change."""
    import numpy as np

    monkeypatch.setenv("SCOREP_KERNEL_STATE_TRANSPORT", "pull")
    kernel_ns["base"] = np.zeros(1 << 20)
    kernel_ns["head"] = kernel_ns["base"][: 1 << 19]
    run_in_worker(kernel_ns, "base[0] = 5")
    assert kernel_ns["base"][0] == 5


@pytest.mark.parametrize("transport", ["pull", "shm"])
def test_nothing_left_behind(kernel_ns, transport, monkeypatch):
    import numpy as np

    monkeypatch.setenv("SCOREP_KERNEL_STATE_TRANSPORT", transport)
    shm_before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    fds_before = len(os.listdir("/proc/self/fd"))
    kernel_ns["a"] = np.ones(1 << 19)
    kernel_ns["b"] = np.ones(1 << 19)
    run_in_worker(kernel_ns, "a += 1\nc = b * 2")
    assert len(os.listdir("/proc/self/fd")) == fds_before, "a memfd or mapping fd stayed open"
    if os.path.isdir("/dev/shm"):
        assert set(os.listdir("/dev/shm")) == shm_before
    assert kernel_ns["a"][0] == 2 and kernel_ns["c"][0] == 2


def test_two_arrays_over_one_returned_memory_stay_shared(kernel_ns, monkeypatch):
    import numpy as np

    monkeypatch.setenv("SCOREP_KERNEL_STATE_TRANSPORT", "pull")
    original = np.zeros(1 << 20)
    kernel_ns["arr"] = original
    run_in_worker(kernel_ns, "arr[0] = 4\nsquare = arr.reshape(1024, 1024)")
    assert kernel_ns["arr"] is original and original[0] == 4
    assert np.shares_memory(kernel_ns["square"], original) and kernel_ns["square"][0, 0] == 4


def test_arrays_inside_objects_come_back_as_copies(kernel_ns, monkeypatch):
    """Only arrays bound to names take data back in place: a library holding arrays (pandas'
    copy-on-write tracks who shares a block) must not see them change behind its back."""
    import numpy as np

    monkeypatch.setenv("SCOREP_KERNEL_STATE_TRANSPORT", "pull")
    inner = np.zeros(1 << 20)
    kernel_ns["box"] = {"x": inner}
    run_in_worker(kernel_ns, "box['x'] += 1")
    assert inner[0] == 0 and kernel_ns["box"]["x"][0] == 1
    assert not np.shares_memory(kernel_ns["box"]["x"], inner)
