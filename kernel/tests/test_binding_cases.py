"""Score-P's Python bindings' own test cases (kernel/tests/data/scorep_binding, vendored
unchanged) as profiled cells in a fresh Score-P kernel, with the assertions of that
project's test/test_scorep.py, under the builtin tracer in both isolations and under real
Score-P where it is installed (the oracle: what the bindings write is what the builtin
tracer must write).

Adapted only where a notebook differs from ``python -m scorep case.py``: the cell is
``__main__``, so its regions are ``__main__:...`` as the script's are; the kernel adds a cell
region and ``import:`` regions; the binding arguments come from
``%%scorep_python_binding_arguments`` (without ``--instrumenter-type``: the bindings' default
instrumenter is the one the kernel runs); the module the cases import
(``instrumentation2.py``) lies in the kernel's working folder, as it lies beside the cases
in the bindings' tests. The trace is read with ``otf2-print``, as the bindings' tests do.
Cases that test the bindings' launcher rather than a measurement (``call_main``,
``--instrumenter-type=dummy``, ``--help``), ``numpy_dot`` (skipped there for numpy >= 1.22)
and ``mpi`` (MPI cells have their own tests) are not run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_kernel_harness import CellResult, KernelHandle, wait_files

pytestmark = pytest.mark.timeout(300)

CASES = Path(__file__).parent / "data" / "scorep_binding"
HAVE_SCOREP = shutil.which("scorep-config") is not None
OTF2_PRINT = shutil.which("otf2-print")

MODES = {
    "builtin-inprocess": {"backend": "builtin", "isolation": "inprocess"},
    "builtin-subprocess": {"backend": "builtin", "isolation": "subprocess"},
    "scorep": {"backend": "scorep", "isolation": "subprocess"},
}


@pytest.fixture(params=list(MODES))
def mode(request) -> str:
    if request.param == "scorep" and not HAVE_SCOREP:
        pytest.skip("Score-P is not installed here")
    if OTF2_PRINT is None:
        pytest.skip("otf2-print is not installed here")
    return request.param


class Trace:
    """test/utils.py's OTF2_Trace: the otf2-print text of an archive, searched as there."""

    def __init__(self, anchor: Path):
        out = subprocess.run([str(OTF2_PRINT), str(anchor)], capture_output=True, text=True)
        assert out.stderr == "", out.stderr
        self.text = out.stdout
        self.anchor = anchor

    def cpu_locations(self) -> dict[int, str]:
        """{location id: name} of the CPU thread locations (``otf2-print -G``)."""
        out = subprocess.run(
            [str(OTF2_PRINT), "-G", str(self.anchor)], capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        pattern = r'^LOCATION\s+(\d+)\s+Name: "(.*)" <\d+>, Type: CPU_THREAD,'
        return {int(i): name for i, name in re.findall(pattern, out.stdout, re.MULTILINE)}

    def events_of(self, location: int) -> list[tuple[str, str]]:
        """(event, the rest of its line and of its ADDITIONAL ATTRIBUTES line) of one
        location, in its order."""
        out: list[tuple[str, str]] = []
        current = None  # the location of the event line before
        for line in self.text.split("\n"):
            m = re.match(r"^([A-Z_]+)\s+(\d+)\s+\d+\s+(.*)$", line)
            if m:
                current = int(m.group(2))
                if current == location:
                    out.append((m.group(1), m.group(3)))
            elif line.lstrip().startswith("ADDITIONAL ATTRIBUTES:") and current == location:
                out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
        return out

    def _region(self, event: str, region: str) -> str:
        return f'{event}[ ]*[0-9 ]*[0-9 ]*Region: "{re.escape(region)}"'

    def has_region(self, region: str) -> bool:
        return all(re.search(self._region(e, region), self.text) for e in ("ENTER", "LEAVE"))

    def findall(self, region: str) -> list[str]:
        return [
            f for e in ("ENTER", "LEAVE") for f in re.findall(self._region(e, region), self.text)
        ]

    def has_parameter(self, parameter: str, value: str) -> bool:
        pattern = (
            f'PARAMETER_STRING[ ]*[0-9 ]*[0-9 ]*Parameter: "{re.escape(parameter)}" <[0-9]*>, '
            f'Value: "{re.escape(value)}"'
        )
        return re.search(pattern, self.text) is not None

    def __str__(self) -> str:
        return self.text


@dataclass
class Ran:
    cell: CellResult
    manifest: dict
    trace: Trace

    @property
    def stdout(self) -> str:
        return self.cell.stdout()

    @property
    def stderr(self) -> str:
        return self.cell.stderr()


def run_case(
    tmp_path: Path, mode: str, case: str, binding_args: list[str], env: dict | None = None,
    settings: dict | None = None,
) -> Ran:  # fmt: skip
    """The case's source as one profiled cell of a fresh kernel in ``tmp_path``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    shutil.copy(CASES / "instrumentation2.py", tmp_path / "instrumentation2.py")
    kernel = KernelHandle(tmp_path, {"SCOREP_ENABLE_TRACING": "true", **(env or {})})
    try:
        if binding_args:
            magic = "%%scorep_python_binding_arguments\n" + " ".join(binding_args)
            assert kernel.run(magic).status == "ok"
        source = (CASES / f"{case}.py").read_text()
        meta = {"scorep": {"profile": True, **MODES[mode], **(settings or {})}}
        cell = kernel.run(source, meta, timeout=240)
        assert cell.status == "ok", (cell.reply, cell.stderr())
        path = Path(cell.bundle()["path"])
        manifest = wait_files(path, timeout=120)
    finally:
        kernel.shutdown()
    assert manifest["files_status"] == "ready", manifest["errors"]
    return Ran(cell, manifest, Trace(path / "traces.otf2"))


def test_user_regions(tmp_path, mode):
    ran = run_case(tmp_path, mode, "user_regions", ["--nopython"])
    assert ran.stderr == ""
    assert ran.stdout == "hello world\nhello world\nhello world3\nhello world3\nhello world4\n"
    assert ran.trace.has_region("user:test_region")
    assert ran.trace.has_region("user:test_region_2")
    assert len(ran.trace.findall("__main__:foo3")) == 4
    assert ran.trace.has_region("user:test_region_4")
    assert ran.manifest["binding_args"] == ["--nopython"]


def test_context(tmp_path, mode):
    ran = run_case(tmp_path, mode, "context", ["--noinstrumenter"])
    assert ran.stderr == ""
    assert ran.stdout == "hello world\nhello world\nhello world\n"
    assert ran.trace.has_region("user:test_region")
    assert ran.trace.has_region("__main__:foo")


def test_decorator(tmp_path, mode):
    ran = run_case(tmp_path, mode, "decorator", ["--noinstrumenter"])
    assert ran.stderr == ""
    assert ran.stdout == "hello world\nhello world\nhello world\n"
    assert len(ran.trace.findall("__main__:foo")) == 6


def test_user_rewind(tmp_path, mode):
    ran = run_case(tmp_path, mode, "user_rewind", [])
    assert ran.stderr == ""
    assert ran.stdout == "hello world\nhello world\n"
    assert re.search("MEASUREMENT_ON_OFF[ ]*[0-9 ]*[0-9 ]*Mode: OFF", str(ran.trace))
    assert re.search("MEASUREMENT_ON_OFF[ ]*[0-9 ]*[0-9 ]*Mode: ON", str(ran.trace))


def test_instrumentation(tmp_path, mode):
    ran = run_case(tmp_path, mode, "instrumentation", ["--nocompiler"])
    assert ran.stderr == ""
    assert ran.stdout == "hello world\nbaz\nbar\n"
    assert ran.manifest["binding_args"] == ["--nocompiler"]
    if mode.startswith("builtin"):  # Score-P's own option: named, in the panel too
        assert ran.manifest["binding_args_not_applicable"] == ["--nocompiler"]
        assert "--nocompiler" in ran.cell.bundle()["summary"]["message"]
    assert ran.trace.has_region("__main__:foo")
    assert ran.trace.has_region("instrumentation2:bar")
    assert ran.trace.has_region("instrumentation2:baz")


def test_user_instrumentation(tmp_path, mode):
    ran = run_case(tmp_path, mode, "user_instrumentation", ["--nocompiler", "--noinstrumenter"])
    assert ran.stderr == ""
    assert ran.stdout == "hello world\nbar\nhello world2\nbaz\n"
    assert ran.trace.has_region("__main__:foo")
    assert ran.trace.has_region("__main__:foo2")
    assert ran.trace.has_region("instrumentation2:bar")
    assert ran.trace.has_region("instrumentation2:baz")


def test_external_user_instrumentation(tmp_path, mode):
    shutil.copy(CASES / "external_instrumentation.py", tmp_path / "external_instrumentation.py")
    args = ["--nocompiler", "--noinstrumenter", "--instrumenter-file=external_instrumentation.py"]
    ran = run_case(tmp_path, mode, "instrumentation", args)
    assert ran.stderr == ""
    assert ran.stdout == "hello world\nbaz\nbar\n"
    assert ran.trace.has_region("instrumentation2:bar")
    assert ran.trace.has_region("instrumentation2:baz")


def test_error_region(tmp_path, mode):
    ran = run_case(tmp_path, mode, "error_region", ["--nocompiler", "--noinstrumenter"])
    assert ran.stderr == (
        "SCOREP_BINDING_PYTHON ERROR: There was a region exit without an enter!\n"
        'SCOREP_BINDING_PYTHON ERROR: For details look for "error_region" in the trace or profile.\n'
    )
    assert ran.stdout == ""
    assert ran.trace.has_region("error_region")
    assert ran.trace.has_parameter("leave-region", "user:test_region")
    assert ran.trace.has_parameter("leave-region", "user:test_region_2")


def test_classes(tmp_path, mode):
    ran = run_case(tmp_path, mode, "classes", ["--nocompiler"])
    assert ran.stderr == ""
    assert ran.stdout == "foo-2\ndoo\nfoo\nbar\nasdgh\nfoo-2\n"
    assert ran.trace.has_region("__main__:foo")
    assert ran.trace.has_region("__main__.TestClass:foo")
    assert ran.trace.has_region("__main__.TestClass2:foo")


def test_threads(tmp_path, mode):
    ran = run_case(tmp_path, mode, "use_threads", ["--nocompiler"])
    assert ran.stderr == "" or "warning: Thread after main " in ran.stderr
    assert "hello world\n" in ran.stdout
    assert "Thread 0 started\n" in ran.stdout
    assert "Thread 1 started\n" in ran.stdout
    assert "bar\n" in ran.stdout
    assert "baz\n" in ran.stdout
    assert ran.trace.has_region("__main__:foo")
    assert ran.trace.has_region("instrumentation2:bar")
    assert ran.trace.has_region("instrumentation2:baz")
    # Score-P's pthread records: THREAD_BEGIN first (ThreadId attribute: the native id) and
    # THREAD_END last on each thread's location but the master's, which has neither.
    locations = ran.trace.cpu_locations()
    workers = [ref for ref, name in locations.items() if name != "Master thread"]
    assert len(workers) >= 2, locations
    thread_ids = set()
    for ref in workers:
        events = ran.trace.events_of(ref)
        kinds = [kind for kind, _rest in events]
        assert kinds[0] == "THREAD_BEGIN" and kinds[-1] == "THREAD_END", (locations[ref], kinds)
        assert "THREAD_BEGIN" not in kinds[1:] and "THREAD_END" not in kinds[:-1]
        for _kind, rest in (events[0], events[-1]):
            assert re.match(
                r'Thread Contingent: "" <\d+>, Sequence Count: 18446744073709551615', rest
            )
        found = re.search(r'\("ThreadId" <\d+>; UINT64; (\d+)\)', events[0][1])
        assert found, events[0]
        thread_ids.add(int(found.group(1)))
    assert len(thread_ids) == len(workers) and 0 not in thread_ids
    master = [ref for ref, name in locations.items() if name == "Master thread"]
    assert len(master) == 1
    assert not {"THREAD_BEGIN", "THREAD_END"} & {k for k, _ in ran.trace.events_of(master[0])}


def test_force_finalize(tmp_path, mode):
    ran = run_case(tmp_path, mode, "force_finalize", [])
    assert ran.stderr == ""
    assert ran.stdout == "foo\nbar\n"
    assert ran.trace.has_region("__main__:foo")
    assert not ran.trace.has_region("__main__:bar")


def test_io(tmp_path, mode):
    """The bindings' test_io with the setting ``io: posix`` (Score-P 8.4 needs more than
    its ``SCOREP_IO_POSIX=true``: the setting gives it ``--io=runtime:posix`` too). The
    builtin tracer records Python's open, read, write and close (no lseek: Python asks for
    none at this level); Score-P's adapter the POSIX calls beneath them."""
    args = ["--nocompiler", "--noinstrumenter"]
    ran = run_case(tmp_path, mode, "file_io", args, settings={"io": "posix"})
    assert ran.stderr == ""
    assert "test\n" in ran.stdout
    file_regex = r"[\[\]\w /:.-]*test\.txt"
    ops = {
        "open": {"ENTER": "open(64)?", "IO_CREATE_HANDLE": file_regex, "LEAVE": "open(64)?"},
        "seek": {"ENTER": "lseek(64)?", "IO_SEEK": file_regex, "LEAVE": "lseek(64)?"},
        "write": {
            "ENTER": "write",
            "IO_OPERATION_BEGIN": file_regex,
            "IO_OPERATION_COMPLETE": file_regex,
            "LEAVE": "write",
        },
        "read": {
            "ENTER": "read",
            "IO_OPERATION_BEGIN": file_regex,
            "IO_OPERATION_COMPLETE": file_regex,
            "LEAVE": "read",
        },
        "close": {"ENTER": "close", "IO_DESTROY_HANDLE": file_regex, "LEAVE": "close"},
    }
    if mode.startswith("builtin"):
        del ops["seek"]
    io_trace, inside = "", False
    for line in str(ran.trace).split("\n"):
        if "user_instrumenter:expect io" in line:
            inside = not inside
        if inside:
            io_trace += line + "\n"
    for details in ops.values():
        for event, data in details.items():
            pattern = f'{event}[ ]*[0-9 ]*[0-9 ]*(Region|Handle): "{data}"'
            assert re.search(pattern, io_trace), (pattern, io_trace)


COMPARED = {
    "classes": ["--nocompiler"],
    "decorator": ["--noinstrumenter"],
    "user_instrumentation": ["--nocompiler", "--noinstrumenter"],
    "error_region": ["--nocompiler", "--noinstrumenter"],
}


@pytest.mark.skipif(not HAVE_SCOREP, reason="Score-P is not installed here")
@pytest.mark.parametrize("case", list(COMPARED))
def test_a_compare_with_score_p_matches_function_by_function(tmp_path, case):
    """The panel's Compare of the same cell under Score-P and the builtin tracer (both
    isolations): every function in both, with the same visits, nothing unmatched
    (``import scorep.user`` is no region under either backend). The cell's region is
    ``cell [n]`` in all three profiles, as written (Score-P's bindings would write
    ``:cell [n]``), and Compare matches it by that name."""
    from jupyterlab_scorep.analysis.compare import compare_trees
    from jupyterlab_scorep.trace.calltree import from_cubex

    trees, cells = {}, set()
    for mode in MODES:
        ran = run_case(tmp_path / mode, mode, case, COMPARED[case])
        profile = Path(ran.cell.bundle()["path"]) / "profile.cubex"
        cell = f"cell [{ran.manifest['cells'][0]['execution_count']}]"
        assert cell_regions_written(profile) == [cell], mode
        cells.add(cell)
        trees[mode] = from_cubex(profile)
    for mode in ("builtin-inprocess", "builtin-subprocess"):
        c = compare_trees(trees["scorep"], trees[mode])
        unmatched = [(f.name, f.status) for f in c.functions if f.status != "both"]
        assert not unmatched, mode
        visits = [
            (f.name, f.visits.a, f.visits.b)
            for f in c.functions
            if f.visits_changed and f.status == "both"
        ]
        assert not visits, (mode, visits)
        assert [f.name for f in c.functions if f.module == "cell"] == sorted(cells), mode
        assert any(f.status == "both" and f.module != "cell" for f in c.functions)


def cell_regions_written(profile: Path) -> list[str]:
    """The names of the profile's regions that are a cell's, as written (pycubexr)."""
    from pycubexr import CubexParser

    with CubexParser(profile) as cube:
        names = {cube.get_region(c).name for c in cube.all_cnodes()}
    return sorted(n for n in names if re.fullmatch(r":?cell \[\d+\]", n))


def test_a_region_left_open_is_closed_at_the_cell_end(tmp_path, mode):
    """Better than both (issue 26.9): under Score-P such a cell crashed the worker
    ("Inconsistent profile"), the builtin tracer closed it silently at the run's end."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    kernel = KernelHandle(tmp_path, {"SCOREP_ENABLE_TRACING": "true"})
    source = "import scorep.user\nscorep.user.region_begin('left open')\nprint('done')\n"
    try:
        cell = kernel.run(source, {"scorep": {"profile": True, **MODES[mode]}}, timeout=240)
        path = Path(cell.bundle()["path"])
        manifest = wait_files(path, timeout=120)
    finally:
        kernel.shutdown()
    assert cell.status == "ok", cell.reply
    assert cell.stdout() == "done\n"
    assert "'left open' left open by the cell: closed at its end" in cell.stderr()
    assert manifest["status"] == "ok" and manifest["files_status"] == "ready", manifest
    assert Trace(path / "traces.otf2").has_region("user:left open")
