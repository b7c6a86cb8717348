"""The fast event readers (the native scanner, otf2_scan, and the numpy decoder,
otf2_decode) read exactly what libotf2 reads (otf2_read's ctypes reader, which the public
reader checks in test_otf2_read.py), or say they cannot and leave the file to the ctypes
reader: across chunks, region refs of every compressed size, events without their own
timestamp, and damaged or foreign files. Every test runs with both."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic_trace import write_experiment

from jupyterlab_scorep.trace import otf2_decode, otf2_events, otf2_read, otf2_scan

CHUNK = 1024 * 1024  # the writer's event chunk size (the archive's anchor says so too)
Decode = Callable[[np.ndarray, int], "otf2_decode.DecodedEvents | None"]


@pytest.fixture(params=["native", "numpy"])
def decode(request) -> Decode:
    if request.param == "numpy":
        return otf2_decode.decode
    # `make setup` and the wheel build it (a source install without a compiler has none,
    # and the server uses numpy there; here it must be built)
    assert otf2_scan.available(), "libotf2_scan.so is not built: run `make setup`"
    return otf2_scan.scan


def both(
    exp: Path, decode: Decode
) -> list[tuple[otf2_events.LocationEvents, otf2_decode.DecodedEvents | None]]:
    _defs, events = otf2_read.read_trace(str(exp / "traces.otf2"), decoder="callbacks")
    decoded = [
        decode(np.fromfile(exp / "traces" / f"{ev.ref}.evt", np.uint8), CHUNK) for ev in events
    ]
    return list(zip(events, decoded))


@pytest.fixture(scope="module")
def large(tmp_path_factory) -> Path:
    # ~400k events in two threads: more than a chunk each; 400 regions (1- and 2-byte
    # refs); metrics on a metric location of their own
    return write_experiment(tmp_path_factory.mktemp("decode") / "run", 400_000, metrics=True)


def test_the_decoder_reads_what_libotf2_reads(large, decode):
    pairs = both(large, decode)
    decoded_threads = [(ev, d) for ev, d in pairs if len(ev.times)]
    assert len(decoded_threads) >= 2
    for ev, d in decoded_threads:
        assert d is not None, f"location {ev.ref} fell back"
        np.testing.assert_array_equal(d.times, ev.times)
        np.testing.assert_array_equal(d.signed_regions, ev.signed_regions)
    regions = np.concatenate([d.signed_regions for _ev, d in decoded_threads])
    regions = np.where(regions < 0, ~regions, regions)
    assert regions.max() >= 0x100 and (regions < 0x100).any()  # 1- and 2-byte refs
    files = sorted((large / "traces").glob("*.evt"), key=lambda p: p.stat().st_size)
    assert files[-1].stat().st_size > CHUNK  # across a chunk boundary


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_decoder_is_the_inverse_of_the_writers_encoder(seed, decode):
    """The builtin writer's fast encoder writes libotf2's very bytes (the kernel's engine
    test checks that); on its output, with small chunks, refs of every compressed size
    (0, 1-3 bytes) and runs of equal times, the decoder gives back what was encoded."""
    from scorep_kernel.formats._otf2_encode import encode

    rng = np.random.default_rng(seed)
    n = 40_000
    refs = np.where(rng.random(n) < 0.1, 0, rng.integers(1, 1 << 24, n) >> rng.integers(0, 24, n))
    times = np.cumsum(rng.integers(0, 3, n)) + 1  # about a third repeat the time before
    kinds = rng.integers(0, 2, n).astype(np.int8)
    chunk = 4096 + 512 * seed
    data = encode(times, refs, kinds, chunk_size=chunk)
    assert len(data) > 20 * chunk
    d = decode(data, chunk)
    assert d is not None
    np.testing.assert_array_equal(d.times, times)
    np.testing.assert_array_equal(d.signed_regions, np.where(kinds == 1, refs, ~refs))


def test_metric_records_are_read_by_the_scanner_and_left_by_numpy(large, decode):
    """The numpy decoder leaves a location with metric records to the ctypes reader; the
    native scanner reads their values as it does (the same samples, members and scale)."""
    from jupyterlab_scorep.trace.otf2_fast import location_events

    pairs = both(large, decode)
    metric_locations = [(ev, d) for ev, d in pairs if len(ev.metric_times)]
    assert metric_locations
    if decode is otf2_decode.decode:
        assert all(d is None for _ev, d in metric_locations)
        return
    defs, _events = otf2_read.read_trace(str(large / "traces.otf2"), decoder="callbacks")
    for ev, _d in metric_locations:
        data = np.fromfile(large / "traces" / f"{ev.ref}.evt", np.uint8)
        d = otf2_scan.scan(data, CHUNK, None, otf2_scan.MetricTables.of(defs))
        assert d is not None, f"location {ev.ref} fell back"
        mine = location_events(ev.ref, d, defs)
        np.testing.assert_array_equal(mine.metric_times, ev.metric_times)
        np.testing.assert_array_equal(mine.metric_members, ev.metric_members)
        np.testing.assert_array_equal(mine.metric_values, ev.metric_values)


def test_events_that_share_a_timestamp(tmp_path, decode):
    # the writer writes a timestamp only when time moves on: equal times share one
    from scorep_kernel.formats.otf2_writer import write_otf2
    from scorep_kernel.formats.recording import Recording, Region, ThreadEvents

    times = np.array([10, 10, 10, 20, 20, 30, 30, 30], np.int64)
    regions = np.array([0, 1, 1, 2, 2, 1, 3, 3], np.int32)
    kinds = np.array([1, 1, 0, 1, 0, 1, 1, 0], np.int8)
    kinds[-1], kinds[5] = 0, 1
    # balanced: 0 open; 1 in/out; 2 in/out; 1 in, 3 in/out ... close 1 and 0 at 40
    times = np.append(times, [40, 40])
    regions = np.append(regions, [1, 0]).astype(np.int32)
    kinds = np.append(kinds, [0, 0]).astype(np.int8)
    rec = Recording(
        regions=[Region(f"m:f{i}", "m") for i in range(4)],
        threads=[ThreadEvents("Master thread", 0, times, regions, kinds)],
        clock_offset_ns=1_700_000_000_000_000_000,
        start_ns=0,
        end_ns=50,
    )
    write_otf2(rec, tmp_path)
    ((ev, d),) = [(ev, d) for ev, d in both(tmp_path, decode) if len(ev.times)]
    assert d is not None
    np.testing.assert_array_equal(d.times, ev.times)
    np.testing.assert_array_equal(d.signed_regions, ev.signed_regions)
    assert len(np.unique(d.times)) == 4


def test_damaged_or_foreign_files_are_left_to_the_ctypes_reader(large, decode):
    data = np.fromfile(
        max((large / "traces").glob("*.evt"), key=lambda p: p.stat().st_size), np.uint8
    )
    rng = np.random.default_rng(0)
    assert decode(rng.integers(0, 256, 100_000, dtype=np.uint8), CHUNK) is None
    assert decode(data[:10], CHUNK) is None  # shorter than a chunk header
    cut = data[: CHUNK + 5000].copy()  # the file stops inside its second chunk
    assert decode(cut, CHUNK) is None
    flipped = data.copy()
    flipped[CHUNK + 1000 : CHUNK + 1040] = 0x1F  # metric records where events were
    assert decode(flipped, CHUNK) is None
    assert decode(data, CHUNK // 2) is None  # the wrong chunk size


def test_records_it_does_not_draw_are_stepped_over_as_libotf2_does(tmp_path, decode):
    """A file from the public otf2 writer with what the builtin writer never writes: a
    ProgramBegin long enough for the 0xFF length form (120 arguments), an attribute list
    before an Enter, a ProgramEnd. The scanner reads it as libotf2 does, ProgramBegin's
    time included; the numpy decoder may leave it to the ctypes reader, never misread it."""
    import otf2
    from otf2.enums import Type

    anchor = tmp_path / "traces.otf2"
    with otf2.writer.open(str(tmp_path), timer_resolution=1_000_000_000) as trace:
        root = trace.definitions.system_tree_node("root")
        group = trace.definitions.location_group("process", system_tree_parent=root)
        location = trace.definitions.location("Master thread", group=group)
        count = trace.definitions.attribute("count", "a count", Type.UINT64)
        f, g = trace.definitions.region("f"), trace.definitions.region("g")
        writer = trace.event_writer_from_location(location)
        writer.program_begin(10, "python3", [f"arg{i}" for i in range(120)])
        writer.enter(20, f, attributes={count: 7})
        writer.enter(30, g)
        writer.leave(30, g)
        writer.leave(40, f)
        writer.program_end(50, 0)
    data = np.fromfile(tmp_path / "traces" / "0.evt", np.uint8)
    assert list(data[27:29]) == [0x53, 0xFF]  # after a timestamp: ProgramBegin, long length
    _defs, (expected,) = otf2_read.read_trace(str(anchor), decoder="callbacks")
    d = decode(data, CHUNK)
    if d is None:
        assert decode is otf2_decode.decode, "the native scanner must read this file"
        return
    np.testing.assert_array_equal(d.times, expected.times)
    np.testing.assert_array_equal(d.signed_regions, expected.signed_regions)
    assert d.program_begin == expected.program_begin == 10


def _thread_records(begin: int, end: int, thread_id: int = 4242):
    from scorep_kernel.formats._otf2_encode import ThreadRecords

    return ThreadRecords(begin=begin, end=end, contingent=0, attribute=0, thread_id=thread_id)


def test_thread_records_are_stepped_over(decode):
    """A thread's ATTRIBUTE_LIST + THREAD_BEGIN first and THREAD_END last (the builtin
    writer's, byte for byte libotf2's: the kernel's engine test checks that), THREAD_END
    in the last chunk or in a chunk of its own: read, not left to the ctypes reader."""
    from scorep_kernel.formats._otf2_encode import encode

    rng = np.random.default_rng(3)
    n_max, chunk = 700, 4096
    refs = rng.integers(0, 1 << 17, n_max) >> rng.integers(0, 17, n_max)
    times = np.cumsum(rng.integers(0, 3, n_max)) + 10
    kinds = rng.integers(0, 2, n_max).astype(np.int8)
    chunks_seen = set()
    for n in range(395, 440):  # the first chunk fills at ~415 events
        thread = _thread_records(int(times[0]) - n % 2, int(times[n - 1]) + n % 3)
        data = encode(times[:n], refs[:n], kinds[:n], chunk_size=chunk, thread=thread)
        own_chunk = len(data) % chunk == 18 + 9 + 4 + 2  # header, time, THREAD_END, ends
        chunks_seen.add((len(data) // chunk, own_chunk))
        d = decode(data, chunk)
        assert d is not None, n
        np.testing.assert_array_equal(d.times, times[:n])
        np.testing.assert_array_equal(
            d.signed_regions, np.where(kinds[:n] == 1, refs[:n], ~refs[:n])
        )
    assert {own for _c, own in chunks_seen} == {True, False}


def test_a_written_thread_with_its_records_reads_as_libotf2_reads_it(tmp_path, decode):
    from scorep_kernel.formats.otf2_writer import write_otf2
    from scorep_kernel.formats.recording import Recording, Region, ThreadEvents, ThreadSpan

    times = np.array([10, 20, 30, 40], np.int64)
    regions, kinds = np.array([0, 1, 1, 0], np.int32), np.array([1, 1, 0, 0], np.int8)
    master = ThreadEvents("Master thread", 100, times, regions, kinds)
    worker = ThreadEvents("Thread 1", 101, times + 1, regions, kinds, span=ThreadSpan(5, 60))
    rec = Recording(
        regions=[Region("m:f", "m"), Region("m:g", "m")],
        threads=[master, worker],
        clock_offset_ns=1_700_000_000_000_000_000,
        start_ns=0,
        end_ns=70,
    )
    write_otf2(rec, tmp_path)
    assert (tmp_path / "traces" / "1.evt").read_bytes()[27] == 0x06  # ATTRIBUTE_LIST
    pairs = both(tmp_path, decode)
    assert len(pairs) == 2
    for ev, d in pairs:
        assert d is not None, f"location {ev.ref} fell back"
        np.testing.assert_array_equal(d.times, ev.times)
        np.testing.assert_array_equal(d.signed_regions, ev.signed_regions)


def test_an_mpi_runs_thread_files_read_as_libotf2_reads_them(tmp_path, decode):
    """The builtin MPI merge's archive (mpi.otf2_ranks): each rank's worker with its
    THREAD_BEGIN / THREAD_END, the contingent of its own rank (COMM refs 0 and 1); rank 1's
    worker and master also with MPI events (libotf2 wrote those files). Files without MPI
    events decode with both decoders; the native scanner reads every file; the server's
    read_trace gives what libotf2's callbacks give."""
    from scorep_kernel.formats.recording import Region, ThreadEvents, ThreadSpan
    from scorep_kernel.mpi.otf2_ranks import MpiEvents, RankLocation, write_otf2_ranks

    epoch = 1_700_000_000_000_000_000
    times = epoch + np.array([10, 20, 30, 40], np.int64)
    regions, kinds = np.array([0, 1, 1, 0], np.int32), np.array([1, 1, 0, 0], np.int8)

    def send(before: int, at: int) -> MpiEvents:
        one = np.ones(1, np.int64)
        return MpiEvents(before=one * before, time=one * at, kind=one * 1, comm=one * 0,
                         peer=one * 0, tag=one * 3, nbytes=one * 8, nbytes_recv=one * 0,
                         op=one * 0, request=one * 0)  # fmt: skip

    locations = []
    for rank in (0, 1):
        master = ThreadEvents("Master thread", 10 + rank, times, regions, kinds)
        worker = ThreadEvents("Thread 1 (work)", 20 + rank, times + 1, regions, kinds,
                              span=ThreadSpan(epoch + 5, epoch + 60))  # fmt: skip
        mpi = (None, None) if rank == 0 else (send(2, epoch + 20), send(2, epoch + 21))
        locations += [
            RankLocation(rank, "a", master, mpi[0]),
            RankLocation(rank, "a", worker, mpi[1]),
        ]
    write_otf2_ranks(locations, [Region("m:f", "m"), Region("m:Send", "MPI")],
                     [("MPI_COMM_WORLD", (0, 1))], {"m:Send": "point2point"}, tmp_path)  # fmt: skip
    for ref in (1, 3):  # the workers' files begin with THREAD_BEGIN's ATTRIBUTE_LIST
        assert (tmp_path / "traces" / f"{ref}.evt").read_bytes()[27] == 0x06
    pairs = both(tmp_path, decode)
    assert len(pairs) == 4
    for (ev, d), loc in zip(pairs, locations):
        if d is None:
            assert loc.mpi is not None and decode is otf2_decode.decode, f"{ev.ref} fell back"
            continue
        np.testing.assert_array_equal(d.times, ev.times)
        np.testing.assert_array_equal(d.signed_regions, ev.signed_regions)
    assert [d is not None for (_ev, d), loc in zip(pairs, locations) if loc.mpi is None] == [
        True
    ] * 2
    _defs, fallback = otf2_read.read_trace(str(tmp_path / "traces.otf2"), decoder="callbacks")
    _defs, served = otf2_read.read_trace(str(tmp_path / "traces.otf2"))
    for a, b in zip(fallback, served):
        np.testing.assert_array_equal(a.times, b.times)
        np.testing.assert_array_equal(a.signed_regions, b.signed_regions)


@functools.cache
def _small_file(threads: bool = False) -> np.ndarray:
    """~3000 events in 4 KiB chunks, from the writer's encoder; with ``threads``, between
    a THREAD_BEGIN and a THREAD_END."""
    from scorep_kernel.formats._otf2_encode import encode

    rng = np.random.default_rng(7)
    n = 3000
    refs = rng.integers(0, 1 << 17, n) >> rng.integers(0, 17, n)
    times = np.cumsum(rng.integers(0, 3, n)) + 1
    thread = _thread_records(1, int(times[-1]) + 5) if threads else None
    return encode(times, refs, rng.integers(0, 2, n), 4096, thread=thread)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(
        st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=6
    ),
    # anywhere, or just after a chunk's start (inside or right after its header)
    cut=st.one_of(st.none(), st.floats(0, 1), st.tuples(st.integers(0, 10), st.integers(0, 24))),
    threads=st.booleans(),
)
def test_damaged_bytes_never_crash_and_both_readers_agree(edits, cut, threads):
    """The scanner is C reading untrusted files: bytes changed anywhere and files cut
    anywhere must give None or events, never a crash or a read past the buffer; where
    both readers read a damaged file, they read the same events. (Score-P's event files,
    with their mappings, clock offsets, metrics, flushes and switches, are damaged the
    same way in test_scorep_archives.py and checked against libotf2.)"""
    data = _small_file(threads).copy()
    for where, value in edits:
        data[int(where * len(data))] = value
    if isinstance(cut, float):
        data = data[: int(cut * len(data))].copy()
    elif cut is not None:
        data = data[: cut[0] * 4096 + cut[1]].copy()
    native = otf2_scan.scan(data, 4096)
    numpy_read = otf2_decode.decode(data, 4096)
    if native is not None and numpy_read is not None:
        np.testing.assert_array_equal(native.times, numpy_read.times)
        np.testing.assert_array_equal(native.signed_regions, numpy_read.signed_regions)
