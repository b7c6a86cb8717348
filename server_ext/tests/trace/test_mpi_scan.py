"""The MPI records by the native scanner (mpi_scan, otf2_scan.c's otf2_scan_mpi) and GET
ranks' traffic made of them (mpi_read): the same fields as the otf2 package's reader, the
same traffic as libotf2's callbacks, number for number, on a hand-made run with every
record kind, two communicators, an unmatched send and a message too large to sum in
float64, and on a 1,024-rank run the size of benchmarks/mpi_1024_ranks.py's; damaged
files never crash the scanner, and where it reads one, the callbacks read the same.
(Score-P's own MPI archive: test_scorep_archives.py.)"""

from __future__ import annotations

import functools
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import otf2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyterlab_scorep.trace import mpi_read, mpi_scan, otf2_scan
from scorep_kernel import experiment as ex
from scorep_kernel.formats.recording import ROLE_CELL, ROLE_FUNCTION, Region, ThreadEvents
from scorep_kernel.mpi import otf2_mpi_encode as enc
from scorep_kernel.mpi.otf2_ranks import MpiEvents, RankLocation, write_otf2_ranks

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not otf2_scan.available(), reason="libotf2_scan.so is not built"),
]
MS = 1_000_000
T0 = 1_764_403_200_000_000_000
HUGE = 2**60  # one message past float64's exact integers: summed by the callbacks
NONE = -1  # an undefined root
REGIONS = [
    Region("cell [1]", "cell", "", 0, ROLE_CELL),
    Region("MPI_Send", "MPI", "", 0, ROLE_FUNCTION),
]
WORLD, PAIR = 0, 1  # communicators: all four ranks; ranks 2 and 3
COMMS = [("MPI_COMM_WORLD", (0, 1, 2, 3)), ("pair", (2, 3))]
# per rank: (kind, comm, peer, tag, bytes, bytes received, op, request)
RECORDS: dict[int, list[tuple[int, ...]]] = {
    0: [(enc.SEND, WORLD, 1, 7, 800, 0, 0, 0), (enc.ISEND, WORLD, 3, 8, 100, 0, 0, 5),
        (enc.ISEND_COMPLETE, 0, 0, 0, 0, 0, 0, 5), (enc.SEND, WORLD, 9, 1, 50, 0, 0, 0),
        (enc.COLL_BEGIN, 0, 0, 0, 0, 0, 0, 0), (enc.COLL_END, WORLD, NONE, 0, 8, 8, 11, 0)],
    1: [(enc.RECV, WORLD, 0, 7, 800, 0, 0, 0), (enc.COLL_BEGIN, 0, 0, 0, 0, 0, 0, 0),
        (enc.COLL_END, WORLD, NONE, 0, 8, 8, 11, 0)],
    2: [(enc.SEND, PAIR, 1, 3, 4096, 0, 0, 0), (enc.IRECV_REQUEST, 0, 0, 0, 0, 0, 0, 9),
        (enc.IRECV, PAIR, 1, 4, 64, 0, 0, 9), (enc.COLL_BEGIN, 0, 0, 0, 0, 0, 0, 0),
        (enc.COLL_END, PAIR, 0, 0, 64, 0, 2, 0)],
    3: [(enc.RECV, PAIR, 0, 3, 4096, 0, 0, 0), (enc.RECV, WORLD, 0, 8, 100, 0, 0, 0),
        (enc.ISEND, PAIR, 0, 4, 64, 0, 0, 2), (enc.SEND, WORLD, 0, 5, HUGE, 0, 0, 0),
        (enc.COLL_BEGIN, 0, 0, 0, 0, 0, 0, 0), (enc.COLL_END, PAIR, 0, 0, 0, 64, 2, 0)],
}  # fmt: skip


P2P_TYPES = {"MpiSend": mpi_scan.MPI_SEND, "MpiIsend": mpi_scan.MPI_ISEND,
             "MpiRecv": mpi_scan.MPI_RECV, "MpiIrecv": mpi_scan.MPI_IRECV}  # fmt: skip


def _rank(rank: int) -> RankLocation:
    """The cell around one MPI call whose Enter and Leave hold the rank's MPI records."""
    times = np.array([T0, T0 + MS, T0 + 5 * MS, T0 + 10 * MS], np.int64)
    thread = ThreadEvents("Master thread", 1, times, np.array([0, 1, 1, 0], np.int32),
                          np.array([1, 1, 0, 0], np.int8))  # fmt: skip
    rows = np.array(RECORDS[rank], np.int64).reshape(-1, 8)
    n = len(rows)
    ev = MpiEvents(np.full(n, 2), T0 + MS + 1000 * np.arange(1, n + 1), *rows.T.copy())
    return RankLocation(rank, "a", thread, ev)


def write_run(exp: Path) -> Path:
    exp.mkdir(parents=True)
    write_otf2_ranks([_rank(r) for r in RECORDS], REGIONS, COMMS, {"MPI_Send": "point2point"}, exp)
    return exp


@functools.cache
def _run(root: str) -> Path:
    return write_run(Path(root) / "kinds")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return _run(str(tmp_path_factory.mktemp("mpi-scan")))


def _anchor(exp: Path) -> str:
    return str(exp / ex.OTF2_ANCHOR)


def _fell_back(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "callbacks" in r.getMessage()]


def test_the_scanner_reads_every_field_the_otf2_reader_reads(run):
    """Each location's rows, column by column, against the otf2 package's events."""
    chunk = _chunk_size(run)
    with otf2.reader.open(_anchor(run)) as trace:
        expected: dict[int, dict[str, list]] = {}
        for location, event in trace.events:
            rows = expected.setdefault(location._ref, {"p2p": [], "coll": []})
            name = type(event).__name__
            if name in P2P_TYPES:
                peer = event.receiver if name.endswith("end") else event.sender
                rows["p2p"].append((P2P_TYPES[name], peer,
                                    event.communicator._ref, event.msg_tag, event.msg_length))  # fmt: skip
            elif name == "MpiCollectiveEnd":
                rows["coll"].append((event.collective_op.value, event.communicator._ref, event.root,
                                     event.size_sent, event.size_received))  # fmt: skip
    assert len(expected) == 4
    for ref, want in expected.items():
        data = np.fromfile(run / ex.OTF2_EVENTS_DIR / f"{ref}.evt", np.uint8)
        got = mpi_scan.scan_mpi_or_reason(data, chunk)
        assert not isinstance(got, str), got
        p, c = got.p2p, got.collectives
        assert list(zip(*(a.tolist() for a in (p.type, p.peer, p.comm, p.tag, p.bytes))))\
            == want["p2p"]  # fmt: skip
        assert list(zip(*(a.tolist() for a in (c.op, c.comm, c.root, c.sent, c.received))))\
            == want["coll"]  # fmt: skip
    assert {len(v["p2p"]) for v in expected.values()} == {1, 2, 3, 4}


def test_every_record_kind_sums_to_the_same_traffic_both_ways(run, caplog):
    caplog.set_level("INFO", logger="jupyterlab_scorep.trace.mpi_read")
    scanned = mpi_read.read_traffic(_anchor(run))
    # only rank 3, with its 2**60-byte message, was left to the callbacks
    (why,) = _fell_back(caplog)
    assert "location 3:" in why and "byte counts" in why, why
    assert scanned == mpi_read.read_traffic(_anchor(run), decoder="callbacks")
    assert scanned["bytes"] == [[0, 800, 0, 100], [0] * 4, [0, 0, 0, 4096], [HUGE, 0, 64, 0]]
    assert scanned["messages"] == [[0, 1, 0, 1], [0] * 4, [0, 0, 0, 1], [1, 0, 1, 0]]
    assert scanned["unmatched"] == 1  # rank 0's send to rank 9 of four
    assert scanned["received"] == [{"bytes": b, "messages": m} for b, m in
                                   ((0, 0), (800, 1), (64, 1), (4196, 2))]  # fmt: skip
    assert scanned["collectives"] == [
        {"calls": 1, "bytes_sent": s, "bytes_received": r}
        for s, r in ((8, 8), (8, 8), (64, 0), (0, 64))
    ]


def _chunk_size(exp: Path) -> int:
    import _otf2  # type: ignore[import-untyped]

    handle = _otf2.Reader_Open(_anchor(exp))
    try:
        return int(_otf2.Reader_GetChunkSize(handle)[0])
    finally:
        _otf2.Reader_Close(handle)


def test_a_1024_rank_run_reads_the_same_both_ways(tmp_path, caplog):
    """benchmarks/mpi_1024_ranks.py's size: 1,024 ranks, ~2.1M events, 4 neighbours each."""
    import synthetic_mpi as sm

    exp = tmp_path / "stencil"
    info = sm.write_mpi_experiment(exp, ranks=1024, events=2_100_000)
    caplog.set_level("INFO", logger="jupyterlab_scorep.trace.mpi_read")
    scanned = mpi_read.read_traffic(_anchor(exp))
    assert not _fell_back(caplog)
    called = mpi_read.read_traffic(_anchor(exp), decoder="callbacks")
    for key in ("bytes", "messages", "received", "collectives", "unmatched", "processes"):
        assert scanned[key] == called[key], key  # type: ignore[literal-required]
    steps = info["iterations"]
    b = np.array(scanned["bytes"])
    assert b.shape == (1024, 1024) and (np.count_nonzero(b, axis=1) == 4).all()
    assert set(b[b > 0].tolist()) == {steps * sm.HALO_BYTES}
    assert {c["calls"] for c in scanned["collectives"]} == {steps}


def test_without_the_library_the_callbacks_read_it(run, monkeypatch):
    expected = mpi_read.read_traffic(_anchor(run))
    monkeypatch.setattr(otf2_scan, "available", lambda: False)
    assert mpi_read.read_traffic(_anchor(run)) == expected


# ---- damaged files ----------------------------------------------------------------------

EDITS = st.lists(
    st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=6
)
# rank 0: sends, an Isend and its completion, a collective; rank 2: the sub-communicator, an
# Irecv and its request (rank 3's 2**60 bytes would send it to the callbacks either way)
FUZZ_RANKS = st.sampled_from([0, 2])


def _damaged(rank: int, edits, cut: float | None = None) -> tuple[Path, np.ndarray, int]:
    exp = _run(str(_fuzz_root()))
    data = np.fromfile(exp / ex.OTF2_EVENTS_DIR / f"{rank}.evt", np.uint8)
    for where, value in edits:
        data[int(where * len(data))] = value
    if cut is not None:
        data = data[: int(cut * len(data))].copy()
    return exp, data, _chunk_size(exp)


@functools.cache
def _fuzz_root() -> Path:
    import atexit
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="mpi-scan-fuzz-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)  # the forked readers skip it
    return root


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rank=FUZZ_RANKS, edits=EDITS, cut=st.one_of(st.none(), st.floats(0, 1)))
def test_damaged_mpi_files_never_crash_the_scanner(rank, edits, cut):
    """C reading untrusted bytes, in this process: records or a reason, never a crash or
    a read past the buffer."""
    _exp, data, chunk = _damaged(rank, edits, cut)
    got = mpi_scan.scan_mpi_or_reason(data, chunk)
    if not isinstance(got, str):
        assert got.p2p.type.size == got.p2p.bytes.size == got.p2p.comm.size
        assert got.collectives.op.size == got.collectives.received.size
        assert set(got.p2p.type.tolist()) <= {14, 15, 18, 19}


def _in_child(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a forked child (libotf2 may crash on a damaged file): its answer,
    or None where it raised or died."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer, never return into pytest
        try:
            payload = pickle.dumps(fn(*args))
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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rank=FUZZ_RANKS, edits=EDITS)
def test_where_the_scanner_reads_a_damaged_file_the_callbacks_read_the_same(rank, edits):
    exp, data, chunk = _damaged(rank, edits)
    if isinstance(mpi_scan.scan_mpi_or_reason(data, chunk), str):
        return  # left to the callbacks: the same reader both ways
    work = _fuzz_root() / f"work-{os.getpid()}-{rank}"
    if not work.exists():
        shutil.copytree(exp, work)
    data.tofile(work / ex.OTF2_EVENTS_DIR / f"{rank}.evt")
    scanned = _in_child(mpi_read.read_traffic, _anchor(work))
    called = _in_child(mpi_read.read_traffic, _anchor(work), "callbacks")
    if called is None:
        return  # libotf2 refuses a field the scanner steps over (or the definitions)
    assert scanned == called
