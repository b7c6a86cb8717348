"""The merge of a builtin MPI run's rank recordings, on recordings built by hand (no MPI
needed): one OTF2 archive with a location group per rank, the MPI events between their
call's Enter and Leave, a remote rank's clock mapped onto the kernel's, calls whose region
was filtered out counted, and a CUBE4 profile with a process per rank."""

from __future__ import annotations

import json
import pickle

import numpy as np
import otf2
import pytest

from scorep_kernel import manifest as mf
from scorep_kernel.formats.recording import ROLE_CELL, ROLE_FUNCTION, Recording, Region
from scorep_kernel.measure import mpi_calls
from scorep_kernel.measure.mpi_calls import RankMpi
from scorep_kernel.mpi import merge
from scorep_kernel.mpi.common import RANKS_DIR, RANKS_JSON, rank_file

MS = 1_000_000
T0 = 5_000_000_000
EPOCH = 1_764_403_200_000_000_000
SHIFT = 3 * MS  # rank 1's clock runs 3 ms behind the kernel's


def region(name: str, group: str, role: str = ROLE_FUNCTION) -> Region:
    return Region(name, group, "", 0, role)


CELL = region("cell [5]", "cell", ROLE_CELL)
WORK = region("__main__:work", "__main__")
SEND = region(mpi_calls.region_name("Send"), mpi_calls.REGION_GROUP)
RECV = region(mpi_calls.region_name("Recv"), mpi_calls.REGION_GROUP)
BARRIER = region(mpi_calls.region_name("Barrier"), mpi_calls.REGION_GROUP)


def thread(rows: list[tuple[int, int, int]]):
    from scorep_kernel.formats.recording import ThreadEvents

    t, r, k = zip(*rows)
    return ThreadEvents("Master thread", 11, np.array(t, np.int64), np.array(r, np.int32),
                        np.array(k, np.int8))  # fmt: skip


def rank_mpi(rank, names, calls, events) -> RankMpi:
    """calls: (t0, t1, name index); events: (call, kind, peer, tag, bytes, recv, op)."""
    c = np.array(calls, np.int64).reshape(-1, 3)
    e = np.array(events, np.int64).reshape(-1, 7)
    return RankMpi(
        rank=rank,
        region_names=[mpi_calls.region_name(n) for n in names],
        comms=[("MPI_COMM_WORLD", (0, 1))],
        call_thread=np.full(len(c), 11, np.int64),
        call_t0=c[:, 0],
        call_t1=c[:, 1],
        call_region=c[:, 2].astype(np.int32),
        ev_call=e[:, 0],
        ev_kind=e[:, 1].astype(np.int8),
        ev_comm=np.zeros(len(e), np.int32),
        ev_peer=e[:, 2],
        ev_tag=e[:, 3],
        ev_bytes=e[:, 4],
        ev_bytes_recv=e[:, 5],
        ev_op=e[:, 6].astype(np.int16),
        ev_request=np.zeros(len(e), np.int64),
    )


@pytest.fixture
def run_dir(tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    mf.write_manifest(
        exp, mf.new_manifest("x", backend="builtin", isolation="subprocess", cells=[])
    )
    mf.update_manifest(exp, files_status=mf.FILES_PENDING)
    # rank 0: cell > work, Send(1 ms..2 ms), Barrier (4..5 ms)
    r0 = Recording(
        regions=[CELL, WORK, SEND, BARRIER],
        threads=[
            thread(
                [
                    (T0, 0, 1),
                    (T0 + 1 * MS, 1, 1),
                    (T0 + 1 * MS, 2, 1),
                    (T0 + 2 * MS, 2, 0),
                    (T0 + 3 * MS, 1, 0),
                    (T0 + 4 * MS, 3, 1),
                    (T0 + 5 * MS, 3, 0),
                    (T0 + 6 * MS, 0, 0),
                ]
            )
        ],
        clock_offset_ns=EPOCH - T0,
        start_ns=T0,
        end_ns=T0 + 6 * MS,
        hostname="a",
    )
    mpi0 = rank_mpi(
        0, ["Send", "Barrier", "Send"],
        # the third call was filtered out of the recording (no region at 9 ms)
        [(T0 + 1 * MS, T0 + 2 * MS, 0), (T0 + 4 * MS, T0 + 5 * MS, 1), (T0 + 9 * MS, T0 + 9 * MS, 2)],
        [(0, mpi_calls.SEND, 1, 7, 800, 0, 0),
         (1, mpi_calls.COLL_BEGIN, mpi_calls.UNDEFINED, 0, 0, 0, 0),
         (1, mpi_calls.COLL_END, mpi_calls.UNDEFINED, 0, 0, 0, 0),
         (2, mpi_calls.SEND, 1, 7, 8, 0, 0)],
    )  # fmt: skip
    # rank 1 (another host, its clock 3 ms behind): cell, Recv(0.5..2.5 ms), Barrier
    b = T0 - SHIFT
    r1 = Recording(
        regions=[RECV, CELL, BARRIER],
        threads=[
            thread(
                [
                    (b, 1, 1),
                    (b + MS // 2, 0, 1),
                    (b + 5 * MS // 2, 0, 0),
                    (b + 4 * MS, 2, 1),
                    (b + 5 * MS, 2, 0),
                    (b + 6 * MS, 1, 0),
                ]
            )
        ],
        clock_offset_ns=0,
        start_ns=b,
        end_ns=b + 6 * MS,
        hostname="b",
    )
    mpi1 = rank_mpi(
        1, ["Recv", "Barrier"],
        [(b + MS // 2, b + 5 * MS // 2, 0), (b + 4 * MS, b + 5 * MS, 1)],
        [(0, mpi_calls.RECV, 0, 7, 800, 0, 0),
         (1, mpi_calls.COLL_BEGIN, mpi_calls.UNDEFINED, 0, 0, 0, 0),
         (1, mpi_calls.COLL_END, mpi_calls.UNDEFINED, 0, 0, 0, 0)],
    )  # fmt: skip
    for r, (recording, mpi) in enumerate([(r0, mpi0), (r1, mpi1)]):
        path = rank_file(exp, r)
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(pickle.dumps({"rank": r, "recording": recording, "mpi": mpi}))
    (exp / RANKS_DIR / RANKS_JSON).write_text(json.dumps({
        "epoch_offset_ns": EPOCH - T0,
        "ranks": [
            {"rank": 0, "hostname": "a", "clock": {"slope": 1.0, "offset_ns": 0.0}},
            {"rank": 1, "hostname": "b", "clock": {"slope": 1.0, "offset_ns": float(SHIFT)}},
        ],
    }))  # fmt: skip
    return exp


def test_merge_writes_one_archive_with_mpi_events(run_dir):
    assert merge.main([str(run_dir)]) == 0
    manifest = mf.read_manifest(run_dir)
    assert manifest["files_status"] == "ready"
    assert manifest["measurement"]["merge"]["mpi_calls_without_region"] == 1
    assert any("1 MPI calls' events were left out" in e for e in manifest["errors"])
    assert not (run_dir / RANKS_DIR).exists()
    got: dict[str, list] = {}
    with otf2.reader.open(str(run_dir / "traces.otf2")) as trace:
        groups = [g.name for g in trace.definitions.location_groups]
        assert groups == ["MPI Rank 0", "MPI Rank 1"]
        roles = {r.name: str(r.region_role).rsplit(".", 1)[-1] for r in trace.definitions.regions}
        assert roles[SEND.name] == "POINT2POINT" and roles[BARRIER.name] == "BARRIER"
        for location, event in trace.events:
            got.setdefault(location.group.name, []).append(event)
    e0 = [(type(e).__name__, e.time - EPOCH) for e in got["MPI Rank 0"]]
    assert e0 == [
        ("Enter", 0), ("Enter", MS), ("Enter", MS), ("MpiSend", MS), ("Leave", 2 * MS),
        ("Leave", 3 * MS), ("Enter", 4 * MS), ("MpiCollectiveBegin", 4 * MS),
        ("MpiCollectiveEnd", 5 * MS), ("Leave", 5 * MS), ("Leave", 6 * MS),
    ]  # fmt: skip
    send = got["MPI Rank 0"][3]
    assert (send.receiver, send.msg_tag, send.msg_length) == (1, 7, 800)
    assert send.communicator.name == "MPI_COMM_WORLD"
    # rank 1's times are on the kernel's clock: its Recv ends at 2.5 ms, as rank 0 saw it
    e1 = [(type(e).__name__, e.time - EPOCH) for e in got["MPI Rank 1"]]
    assert e1[:4] == [("Enter", 0), ("Enter", MS // 2), ("MpiRecv", 5 * MS // 2),
                      ("Leave", 5 * MS // 2)]  # fmt: skip
    recv = got["MPI Rank 1"][2]
    assert (recv.sender, recv.msg_length) == (0, 800)


def test_merge_writes_a_profile_with_a_process_per_rank(run_dir):
    from pycubexr import CubexParser

    assert merge.main([str(run_dir)]) == 0
    with CubexParser(str(run_dir / "profile.cubex")) as cube:
        assert [loc.name for loc in cube.get_locations()] == ["Master thread"] * 2
        visits = cube.get_metric_values(cube.get_metric_by_name("visits"))
        by_name = {cube.get_region(c).name: list(visits.cnode_values(c)) for c in cube.all_cnodes()}
    assert by_name[SEND.name] == [1, 0] and by_name[RECV.name] == [0, 1]
    assert by_name[BARRIER.name] == [1, 1] and by_name["cell [5]"] == [1, 1]
    anchor = (run_dir / "profile.cubex").read_bytes()
    assert b"MPI Rank 0" in anchor and b"MPI Rank 1" in anchor


def test_a_missing_rank_recording_fails_in_words(run_dir):
    rank_file(run_dir, 0).unlink()
    rank_file(run_dir, 1).unlink()
    assert merge.main([str(run_dir)]) == 1
    manifest = mf.read_manifest(run_dir)
    assert manifest["files_status"] == "failed"
    assert "no rank left a recording" in manifest["errors"][-1]
