"""Score-P's own archives through the native scanner: the same events as libotf2's
callbacks (otf2_read's ctypes path) on real Score-P 8.4 traces with threads, rusage
metrics, buffer flushes, recording switched off, a filter, and MPI ranks with region
mappings and clock offsets; the independent otf2-print counts the same Enter/Leave; and
damaged Score-P event files never crash the scanner, which, where it reads one, reads what
libotf2 reads."""

from __future__ import annotations

import functools
import os
import pickle
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scorep_traces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyterlab_scorep.trace import mpi_read, mpi_scan, otf2_read, otf2_scan
from jupyterlab_scorep.trace.otf2_local_defs import LocalDefsReader, has_no_records

pytestmark = [
    pytest.mark.skipif(not scorep_traces.available(), reason="Score-P is not installed"),
    pytest.mark.skipif(not otf2_scan.available(), reason="libotf2_scan.so is not built"),
]
FIELDS = ("times", "signed_regions", "metric_times", "metric_members", "metric_values")
RUSAGE = {"SCOREP_METRIC_RUSAGE": "ru_maxrss,ru_utime"}
NEEDS_MPI = pytest.mark.skipif(
    not scorep_traces.mpi_available(), reason="no mpirun or mpi4py (the test extra has it)"
)
KINDS = ["threads", "flush", "off", "filtered", pytest.param("mpi", marks=NEEDS_MPI)]


@functools.cache
def _root() -> Path:
    import atexit
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="scorep-archives-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)  # the forked readers skip it
    return root


@functools.cache
def archive(kind: str) -> Path:
    """The experiment directory of one kind of Score-P run (recorded once per session)."""
    out = _root() / kind
    st = scorep_traces
    if kind == "threads":
        return st.record(out, st.THREADS, env=RUSAGE, binding_args=("--thread=pthread",))
    if kind == "flush":
        return st.record(out, st.FLUSH, env={"SCOREP_TOTAL_MEMORY": "2M"})
    if kind == "off":
        return st.record(out, st.OFF)
    if kind == "filtered":
        (_root() / "filter.txt").write_text(st.FILTER)
        env = {"SCOREP_FILTERING_FILE": str(_root() / "filter.txt")}
        return st.record(out, st.THREADS, env=env, binding_args=("--thread=pthread",))
    if kind == "mpi_comms":
        return st.record(out, st.MPI_COMMS, ranks=3)
    assert kind == "mpi"
    env = {"SCOREP_TOTAL_MEMORY": "2M", "SCOREP_METRIC_RUSAGE": "ru_utime,ru_minflt"}
    return st.record(out, st.MPI_EVERYTHING, env=env, ranks=2)


def both_paths(exp: Path, caplog) -> tuple[list, list, otf2_read.Definitions]:
    caplog.clear()
    with caplog.at_level("INFO", logger="jupyterlab_scorep.trace.otf2_fast"):
        defs, fast = otf2_read.read_trace(str(exp / "traces.otf2"), decoder="auto")
    fell_back = [r.getMessage() for r in caplog.records if "callbacks" in r.getMessage()]
    assert not fell_back, fell_back  # every location went through the native scanner
    _defs, slow = otf2_read.read_trace(str(exp / "traces.otf2"), decoder="callbacks")
    return fast, slow, defs


@pytest.mark.parametrize("kind", KINDS)
def test_the_scanner_reads_what_libotf2_reads(kind, caplog):
    fast, slow, defs = both_paths(archive(kind), caplog)
    assert len(fast) == len(slow) >= 1
    for a, b in zip(fast, slow):
        for name in FIELDS:
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        assert (a.ref, a.program_begin, a.synthetic) == (b.ref, b.program_begin, b.synthetic)
    # what each archive was made to hold is there
    entered = np.concatenate([e.signed_regions[e.signed_regions >= 0] for e in fast])
    names = {defs.regions[int(r)]["name"] for r in np.unique(entered)}
    assert fast[0].program_begin is not None  # the process began in the trace
    if kind in ("threads", "filtered"):
        assert len(fast) == 2 and all(e.times.size for e in fast)  # the thread's own location
    if kind == "threads":
        assert all(e.metric_times.size for e in fast)
        assert len(np.unique(np.concatenate([e.metric_members for e in fast]))) == 2
        # ru_utime in µs, ru_maxrss in KiB: the members' scales are applied
        assert {m["scale"] for m in defs.metric_members.values()} == {1e-6, 1024.0}
    if kind == "filtered":
        assert not any("leaf" in n for n in names) and any(":work" in n for n in names)
    if kind in ("flush", "mpi"):
        assert defs.flush_region in {int(r) for e in fast for r in e.signed_regions}
    if kind in ("off", "mpi"):
        assert defs.off_region in {int(r) for e in fast for r in e.signed_regions}
    if kind == "mpi":
        assert len(fast) == 2 and all(e.metric_times.size for e in fast)


def local_definitions(
    exp: Path, anchored: bool = False
) -> dict[int, otf2_scan.LocalDefinitions | str]:
    """Each location's local definitions as libotf2's definition reader collects them
    (``anchored``: as read_trace collects them, files without records not opened)."""
    import otf2

    local: dict[int, otf2_scan.LocalDefinitions | str] = {}
    anchor = str(exp / "traces.otf2")
    with otf2.reader.open(anchor) as trace:
        import _otf2

        otf2_read.open_event_files(trace, local, anchor if anchored else None)
        _otf2.Reader_CloseEvtFiles(trace.handle)
    return local


@NEEDS_MPI
def test_region_mappings_and_clock_offsets_are_applied():
    """The MPI archive maps a rank's region ids and corrects its clock: without its local
    definitions the scanner would read other regions and times than libotf2 does."""
    exp = archive("mpi")
    local = local_definitions(exp)
    assert all(isinstance(v, otf2_scan.LocalDefinitions) for v in local.values()), local
    mapped = [r for r, v in local.items() if v.region_map is not None]  # type: ignore[union-attr]
    skewed = [r for r, v in local.items() if np.any(v.clock_offsets != 0)]  # type: ignore[union-attr]
    assert mapped and skewed, "Score-P wrote no region mapping or no clock offset here"
    chunk = _chunk_size(exp)
    for ref in set(mapped) | set(skewed):
        data = np.fromfile(exp / "traces" / f"{ref}.evt", np.uint8)
        bare = otf2_scan.scan(data, chunk)  # as recorded: local ids, the rank's own clock
        full = otf2_scan.scan(data, chunk, local[ref])  # type: ignore[arg-type]
        assert bare is not None and full is not None
        if ref in mapped:
            assert not np.array_equal(bare.signed_regions, full.signed_regions)
        if ref in skewed:
            assert not np.array_equal(bare.times, full.times)


def _chunk_size(exp: Path) -> int:
    import _otf2
    import otf2

    with otf2.reader.open(str(exp / "traces.otf2")) as trace:
        return int(_otf2.Reader_GetChunkSize(trace.handle)[0])


@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="no otf2-print")
@pytest.mark.parametrize("kind", ["threads", pytest.param("mpi", marks=NEEDS_MPI)])
def test_otf2_print_counts_the_same_calls(kind, caplog):
    """otf2-print, a reader of its own, sees as many Enter/Leave per location."""
    exp = archive(kind)
    fast, _slow, _defs = both_paths(exp, caplog)
    text = subprocess.run(
        ["otf2-print", str(exp / "traces.otf2")], capture_output=True, text=True, check=True
    ).stdout
    counts: dict[int, int] = {}
    for m in re.finditer(r"^(?:ENTER|LEAVE)\s+(\d+)\s", text, re.MULTILINE):
        counts[int(m.group(1))] = counts.get(int(m.group(1)), 0) + 1
    assert counts == {e.ref: int(e.times.size) - e.synthetic for e in fast}


# ---- damaged Score-P event files -------------------------------------------------------


@functools.cache
def fuzz_source() -> tuple[Path, int, int]:
    """(experiment, location ref, chunk size) of the richest archive here: an MPI rank with
    mapped regions, clock offsets, metrics, a flush and recording off (else the threads')."""
    kind = "mpi" if scorep_traces.mpi_available() else "threads"
    exp = archive(kind)
    local = local_definitions(exp)
    ref = max(local, key=lambda r: (getattr(local[r], "region_map", None) is not None, r))
    return exp, ref, _chunk_size(exp)


def _libotf2_reads(exp: Path, ref: int, data: np.ndarray) -> dict | None:
    """libotf2's reading of location ``ref`` with its event file replaced by ``data``, in
    a child process (libotf2 may crash on a damaged file): None if it refused or died."""
    work = _root() / f"fuzz-{os.getpid()}"
    if not work.exists():
        shutil.copytree(exp, work)
    data.tofile(work / "traces" / f"{ref}.evt")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: read, send, never return into pytest
        try:
            _defs, events = otf2_read.read_trace(str(work / "traces.otf2"), decoder="callbacks")
            (ev,) = [e for e in events if e.ref == ref]
            payload = pickle.dumps(
                {f: getattr(ev, f) for f in (*FIELDS, "program_begin", "synthetic")}
            )
        except Exception:
            payload = pickle.dumps(None)
        with os.fdopen(write, "wb") as f:
            f.write(payload)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        payload = f.read()
    os.waitpid(pid, 0)
    return pickle.loads(payload) if payload else None


EDITS = st.lists(
    st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=6
)
CUTS = st.one_of(st.none(), st.floats(0, 1), st.tuples(st.integers(0, 2), st.integers(0, 24)))


def _damaged(edits, cut) -> tuple[np.ndarray, Path, int, int]:
    exp, ref, chunk = fuzz_source()
    data = np.fromfile(exp / "traces" / f"{ref}.evt", np.uint8)
    for where, value in edits:
        data[int(where * len(data))] = value
    if isinstance(cut, float):
        data = data[: int(cut * len(data))].copy()
    elif cut is not None:
        data = data[: cut[0] * chunk + cut[1]].copy()
    return data, exp, ref, chunk


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=EDITS, cut=CUTS)
def test_damaged_scorep_files_never_crash_the_scanner(edits, cut):
    """C reading untrusted bytes: a Score-P event file changed or cut anywhere gives events
    or a reason, never a crash or a read past the buffer (mappings and offsets applied);
    the same for its MPI records (mpi_scan)."""
    data, exp, ref, chunk = _damaged(edits, cut)
    tables = otf2_scan.MetricTables.of(_definitions(exp))
    result = otf2_scan.scan_or_reason(data, chunk, _cached_local(exp, ref), tables)
    if not isinstance(result, str):
        assert result.times.size == result.signed_regions.size
        assert result.metric_times.size == result.metric_values.size
        assert result.metric_members.size == result.metric_values.size
    records = mpi_scan.scan_mpi_or_reason(data, chunk, _cached_local(exp, ref))
    if not isinstance(records, str):
        assert records.p2p.type.size == records.p2p.bytes.size
        assert records.collectives.op.size == records.collectives.sent.size


@functools.cache
def _cached_local(exp: Path, ref: int) -> otf2_scan.LocalDefinitions:
    defs = local_definitions(exp)[ref]
    assert isinstance(defs, otf2_scan.LocalDefinitions)
    return defs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=EDITS)
def test_where_both_read_a_damaged_scorep_file_they_agree(edits):
    """Bytes changed in a Score-P event file: where the scanner reads it, libotf2 reads the
    same events (or refuses the file: a field it checks that the scanner steps over)."""
    from jupyterlab_scorep.trace.otf2_fast import location_events

    data, exp, ref, chunk = _damaged(edits, None)
    defs = _definitions(exp)
    scanned = otf2_scan.scan(data, chunk, _cached_local(exp, ref), otf2_scan.MetricTables.of(defs))
    if scanned is None:
        return
    expected = _libotf2_reads(exp, ref, data)
    if expected is None:
        return
    mine = location_events(ref, scanned, defs)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(mine, name), expected[name], err_msg=name)
    assert (mine.program_begin, mine.synthetic) == (
        expected["program_begin"],
        expected["synthetic"],
    )


@functools.cache
def _definitions(exp: Path) -> otf2_read.Definitions:
    defs, _events = otf2_read.read_trace(str(exp / "traces.otf2"), decoder="callbacks")
    return defs


def test_the_definition_reader_collects_nothing_from_builtin_archives(tmp_path):
    """The builtin writer's local definitions are empty: no mapping, no clock offset."""
    from synthetic_trace import write_experiment

    exp = write_experiment(tmp_path / "run", 2000)
    local = local_definitions(exp)
    assert local and all(
        isinstance(v, otf2_scan.LocalDefinitions)
        and v.region_map is None
        and v.metric_map is None
        and v.clock_times.size == 0
        for v in local.values()
    )
    empty = LocalDefsReader().result()
    assert isinstance(empty, otf2_scan.LocalDefinitions) and empty.region_map is None
    # read_trace does not open them at all, and has the same (nothing) for each location
    assert all(has_no_records(str(p)) for p in (exp / "traces").glob("*.def"))
    assert_same_local(local_definitions(exp, anchored=True), local)


@pytest.mark.parametrize("kind", KINDS)
def test_scorep_definitions_by_ctypes_are_the_packages(kind):
    """Score-P's global definitions (groups of regions, metric classes and instances, MPI
    ranks' location groups) read by read_trace's callbacks: what the otf2 package reads."""
    from test_otf2_read import both_definitions

    public, native = both_definitions(str(archive(kind) / "traces.otf2"))
    assert public.regions and public.locations
    assert native == public


def assert_same_local(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for ref in a:
        x, y = a[ref], b[ref]
        assert type(x) is type(y), ref
        if isinstance(x, str):
            assert x == y
            continue
        for name in ("region_map", "metric_map", "clock_times", "clock_offsets", "comm_map"):
            u, v = getattr(x, name), getattr(y, name)
            assert (u is None) == (v is None), (ref, name)
            if u is not None:
                assert u.dtype == v.dtype, (ref, name)
                np.testing.assert_array_equal(u, v, err_msg=f"{ref} {name}")


@pytest.mark.parametrize("kind", KINDS)
def test_scorep_local_definitions_are_all_read(kind):
    """Score-P's local definitions files hold records (mappings, clock offsets): none is
    taken for empty, and read_trace's way collects what libotf2's reader collects."""
    exp = archive(kind)
    defs = sorted((exp / "traces").glob("*.def"))
    assert defs and not any(has_no_records(str(p)) for p in defs)
    assert_same_local(local_definitions(exp, anchored=True), local_definitions(exp))


@NEEDS_MPI
def test_what_the_scanner_cannot_apply_goes_to_the_callbacks_with_the_reason(monkeypatch, caplog):
    """A mapping table too sparse for the scanner's tables (here: any, by lowering the
    bound) leaves that rank to libotf2's callbacks, says why, and reads the same."""
    from jupyterlab_scorep.trace import otf2_local_defs

    exp = archive("mpi")
    _fast, slow, _defs = both_paths(exp, caplog)
    monkeypatch.setattr(otf2_local_defs, "MAX_DENSE", 1)
    caplog.clear()
    with caplog.at_level("INFO", logger="jupyterlab_scorep.trace.otf2_fast"):
        _defs, mixed = otf2_read.read_trace(str(exp / "traces.otf2"), decoder="auto")
    reasons = [r.getMessage() for r in caplog.records if "callbacks" in r.getMessage()]
    mapped = [r for r, v in local_definitions(exp).items() if isinstance(v, str)]
    assert mapped and len(reasons) == len(mapped)
    assert all("mapping table with local ids up to" in m for m in reasons), reasons
    for a, b in zip(mixed, slow):
        for name in FIELDS:
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@NEEDS_MPI
@pytest.mark.parametrize("kind", ["mpi", "mpi_comms"])
def test_scorep_mpi_traffic_is_the_same_both_ways(kind, caplog):
    """GET ranks' traffic of Score-P's MPI archives (communicators mapped by each rank's
    local definitions): the native scanner's, for every rank, is libotf2's callbacks'."""
    exp = archive(kind)
    anchor = str(exp / "traces.otf2")
    with caplog.at_level("INFO", logger="jupyterlab_scorep.trace.mpi_read"):
        scanned = mpi_read.read_traffic(anchor)
    assert not [r.getMessage() for r in caplog.records if "callbacks" in r.getMessage()]
    assert scanned == mpi_read.read_traffic(anchor, decoder="callbacks")
    if kind == "mpi":
        # rank 0's comm.send to rank 1 (mpi4py receives it with MPI_Mrecv: no MpiRecv);
        # allreduce and Barrier on both ranks
        assert scanned["messages"][0][1] >= 1
        assert all(c["calls"] >= 2 for c in scanned["collectives"])
        return
    # MPI_COMMS: 8 (r + 1) bytes from rank r to each other rank, through the reversed
    # communicator, whose local ids each rank's mapping table turns into global ones
    assert scanned["bytes"] == [[0 if d == r else 8 * (r + 1) for d in range(3)] for r in range(3)]
    assert scanned["received"] == [{"bytes": 8 * 6 - 8 * (r + 1), "messages": 2} for r in range(3)]
    maps = [v.comm_map for v in local_definitions(exp).values() if not isinstance(v, str)]
    assert any(m is not None and (m != np.arange(m.size)).any() for m in maps), maps
