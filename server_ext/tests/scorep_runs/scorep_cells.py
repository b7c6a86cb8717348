"""The cells the Score-P run tests measure, running them in a kernel, and reading the
results with Score-P's own tools and as name paths of a call tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from jupyterlab_scorep.trace import calltree
from scorep_kernel import region_words as rw
from scorep_kernel.measure.detect import detect_scorep

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "kernel" / "tests"))
from test_kernel_harness import KernelHandle, wait_files

SCOREP = detect_scorep()
PROFILE = {"scorep": {"profile": True}}  # backend auto: Score-P, where it is installed
# Score-P's default filter heuristics take regions under 1 µs per visit; a trivial function
# measures 0.3-0.9 µs here and may exceed 1 µs on a loaded machine: a wider bound keeps the
# tests' suggested filters independent of the machine's speed
HEURISTICS = "bufferpercent=1,timepervisit=20"
BUILTIN = {"scorep": {"profile": True, "backend": "builtin", "isolation": "subprocess"}}

# The same code under both backends: only the cell's own functions and a class.
SAME = """
class Acc:
    def __init__(self):
        self.total = 0

    def add(self, v):
        self.total += v

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def work(acc, n):
    for i in range(n):
        acc.add(fib(i))

acc = Acc()
work(acc, 7)
total = acc.total
"""

# A thread Score-P does not see created ("Orphan thread 1"), a user region and an import.
THREADS = """
import threading
import scorep.user
import xml.dom.minidom

def leaf(x):
    return x * 2

def work(n):
    for i in range(n):
        leaf(i)

with scorep.user.region("setup"):
    doc = xml.dom.minidom.parseString("<a/>")
helper = threading.Thread(target=work, args=(3,))
helper.start()
work(2)
helper.join()
"""

OFF = """
import scorep.user

def f(n):
    return sum(range(n))

f(1)
scorep.user.disable_recording()
f(2)
scorep.user.enable_recording()
f(3)
"""

FLUSH = """
def h(i):
    return i

for i in range(60000):
    h(i)
"""

RUSAGE = """
def w():
    return sum(range(20000))

for _ in range(10):
    w()
"""

# Many calls of a function too small to measure (Score-P's heuristics filter it), and one
# that is not; TINY2 adds a second small one, for a filter suggested on a filtered run.
TINY = """
import time

def tiny(x):
    return x

def slow():
    time.sleep(0.002)

for i in range(20000):
    tiny(i)
for _ in range(3):
    slow()
"""
TINY2 = (
    TINY
    + """
def tiny2(x):
    return x

for i in range(20000):
    tiny2(i)
"""
)


def run_cell(kernel: KernelHandle, code: str, metadata=PROFILE) -> Path:
    result = kernel.run(code, metadata, timeout=240)
    assert result.status == "ok", result.reply
    exp = Path(result.bundle()["path"])
    manifest = wait_files(exp, 120)
    assert manifest["files_status"] == "ready", manifest["errors"]
    return exp


def scorep_tool(name: str) -> str:
    config = shutil.which("scorep-config")
    assert config
    return str(Path(config).resolve().parent / name)


def nodes(node, path=()):
    """(path of names, node) of every node of a call tree answer, depth first."""
    here = (*path, node["name"])
    yield here, node
    for child in node["children"]:
        yield from nodes(child, here)


def visits_by_path(root, *, cells_as="cell") -> dict[tuple[str, ...], int]:
    """{name path: visits} (below the server's synthetic root, if any), a cell's name
    replaced by ``cells_as`` (execution counts differ between runs)."""
    out = {}
    skip = 1 if root["id"] == -1 else 0  # the server's root named after the run
    for path, node in nodes(root):
        if len(path) > skip:
            names = path[skip:]
            key = tuple(cells_as if rw.cell_region_count(n) is not None else n for n in names)
            out[key] = node["visits"]
    return out


def tree_paths(tree: calltree.CallTree) -> dict[tuple[str, ...], int]:
    """{name path: visits over all locations} of a CallTree, without its frame."""
    body = calltree.to_json(tree, None, "run", max_nodes=10**6)
    return visits_by_path(body["root"])


def otf2_print_header(exp: Path) -> str:
    out = subprocess.run(
        [scorep_tool("otf2-print"), "-G", str(exp / "traces.otf2")],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    return out.stdout
