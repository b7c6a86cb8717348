"""The numpy event decoder reads exactly what libotf2 reads (otf2_read's ctypes reader, which
the public reader checks in test_otf2_read.py), or says it cannot and leaves the file to
the ctypes reader: across chunks, region refs of every compressed size, events without
their own timestamp, and damaged or foreign files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from synthetic_trace import write_experiment

from jupyterlab_scorep import otf2_decode, otf2_read

CHUNK = 1024 * 1024  # the writer's event chunk size (the archive's anchor says so too)


def both(exp: Path) -> list[tuple[otf2_read.LocationEvents, otf2_decode.DecodedEvents | None]]:
    _defs, events = otf2_read.read_trace(str(exp / "traces.otf2"))
    decoded = [
        otf2_decode.decode(np.fromfile(exp / "traces" / f"{ev.ref}.evt", np.uint8), CHUNK)
        for ev in events
    ]
    return list(zip(events, decoded))


@pytest.fixture(scope="module")
def large(tmp_path_factory) -> Path:
    # ~400k events in two threads: more than a chunk each; 400 regions (1- and 2-byte
    # refs); metrics on a metric location of their own
    return write_experiment(tmp_path_factory.mktemp("decode") / "run", 400_000, metrics=True)


def test_the_decoder_reads_what_libotf2_reads(large):
    pairs = both(large)
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
def test_the_decoder_is_the_inverse_of_the_writers_encoder(seed):
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
    d = otf2_decode.decode(data, chunk)
    assert d is not None
    np.testing.assert_array_equal(d.times, times)
    np.testing.assert_array_equal(d.signed_regions, np.where(kinds == 1, refs, ~refs))


def test_a_location_with_metric_records_goes_to_the_ctypes_reader(large):
    pairs = both(large)
    metric_locations = [d for ev, d in pairs if len(ev.metric_times)]
    assert metric_locations and all(d is None for d in metric_locations)


def test_events_that_share_a_timestamp(tmp_path):
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
    ((ev, d),) = [(ev, d) for ev, d in both(tmp_path) if len(ev.times)]
    assert d is not None
    np.testing.assert_array_equal(d.times, ev.times)
    np.testing.assert_array_equal(d.signed_regions, ev.signed_regions)
    assert len(np.unique(d.times)) == 4


def test_damaged_or_foreign_files_are_left_to_the_ctypes_reader(large):
    data = np.fromfile(
        max((large / "traces").glob("*.evt"), key=lambda p: p.stat().st_size), np.uint8
    )
    rng = np.random.default_rng(0)
    assert otf2_decode.decode(rng.integers(0, 256, 100_000, dtype=np.uint8), CHUNK) is None
    assert otf2_decode.decode(data[:10], CHUNK) is None  # shorter than a chunk header
    cut = data[: CHUNK + 5000].copy()  # the file stops inside its second chunk
    assert otf2_decode.decode(cut, CHUNK) is None
    flipped = data.copy()
    flipped[CHUNK + 1000 : CHUNK + 1040] = 0x1F  # metric records where events were
    assert otf2_decode.decode(flipped, CHUNK) is None
    assert otf2_decode.decode(data, CHUNK // 2) is None  # the wrong chunk size
