"""The merge of a builtin MPI run's rank recordings, on recordings built by hand (no MPI
needed): one OTF2 archive with a location group per rank, the MPI events between their
call's Enter and Leave, a remote rank's clock mapped onto the kernel's, calls whose region
was filtered out counted, and a CUBE4 profile with a process per rank."""

from __future__ import annotations

import json
import pickle
import re

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


def _with_workers(exp, ranks=(0, 1)):
    """Each rank gets a worker thread "Thread 1 (work)" with a span: rank 0's has no MPI
    calls (its file is encoded with numpy), rank 1's makes a Send (through libotf2)."""
    from dataclasses import replace

    from scorep_kernel.formats.recording import ThreadEvents, ThreadSpan

    for r, tid in ((0, 100), (1, 200)):
        if r not in ranks:
            continue
        data = pickle.loads(rank_file(exp, r).read_bytes())
        rec, mpi = data["recording"], data["mpi"]
        base = int(rec.threads[0].times[0])
        regions = list(rec.regions)
        for extra in (WORK, SEND):
            if extra not in regions:
                regions.append(extra)
        work, send = regions.index(WORK), regions.index(SEND)
        rows = [(base + MS, work, 1), (base + 3 * MS // 2, send, 1),
                (base + 8 * MS // 5, send, 0), (base + 2 * MS, work, 0)]  # fmt: skip
        t, reg, k = zip(*rows)
        worker = ThreadEvents("Thread 1 (work)", tid, np.array(t, np.int64),
                              np.array(reg, np.int32), np.array(k, np.int8),
                              span=ThreadSpan(base + 4 * MS // 5, base + 11 * MS // 5))  # fmt: skip
        data["recording"] = replace(rec, regions=regions, threads=[*rec.threads, worker])
        if r == 1:  # the worker's Send: a call on its thread, one MpiSend
            names = [*mpi.region_names, mpi_calls.region_name("Send")]
            call = len(mpi.call_t0)

            def add(a, v, dtype=np.int64):
                return np.append(a, np.asarray([v], dtype)).astype(a.dtype)

            data["mpi"] = replace(
                mpi,
                region_names=names,
                call_thread=add(mpi.call_thread, tid),
                call_t0=add(mpi.call_t0, base + 3 * MS // 2),
                call_t1=add(mpi.call_t1, base + 8 * MS // 5),
                call_region=add(mpi.call_region, len(names) - 1),
                ev_call=add(mpi.ev_call, call),
                ev_kind=add(mpi.ev_kind, mpi_calls.SEND),
                ev_comm=add(mpi.ev_comm, 0),
                ev_peer=add(mpi.ev_peer, 0),
                ev_tag=add(mpi.ev_tag, 9),
                ev_bytes=add(mpi.ev_bytes, 16),
                ev_bytes_recv=add(mpi.ev_bytes_recv, 0),
                ev_op=add(mpi.ev_op, 0),
                ev_request=add(mpi.ev_request, 0),
            )
        rank_file(exp, r).write_bytes(pickle.dumps(data))
    return exp


def test_merge_writes_each_ranks_thread_records_on_the_runs_clock(run_dir, monkeypatch):
    """Score-P's THREAD_BEGIN / THREAD_END per rank (python -m scorep --mpp=mpi
    --thread=pthread): one GROUP PTHREAD of all thread locations, per rank its own
    SCOREP_GROUP_PTHREAD and COMM "", the thread's lifetime on the run's clock; through both
    of the merge's engines (numpy's encoders, libotf2 around a thread's MPI events)."""
    import shutil
    import subprocess

    from scorep_kernel.formats import _otf2_encode, otf2_threads
    from scorep_kernel.mpi import otf2_ranks

    _with_workers(run_dir)
    engines: list[str] = []
    encode, around = _otf2_encode.encode, otf2_threads.around

    def spy_encode(*args, thread=None, **kw):
        engines.append("numpy" if thread is not None else "numpy, no thread")
        return encode(*args, thread=thread, **kw)

    def spy_around(writer, rec, defs, events):
        engines.append("libotf2" if rec is not None else "libotf2, no thread")
        return around(writer, rec, defs, events)

    def spy_mpi(*args, **kw):
        engines.append("numpy with MPI events")
        return encode_mpi(*args, **kw)

    encode_mpi = otf2_ranks.mpi_encode.encode_location
    monkeypatch.setattr(otf2_ranks._otf2_encode, "encode", spy_encode)
    monkeypatch.setattr(otf2_ranks.otf2_threads, "around", spy_around)
    monkeypatch.setattr(otf2_ranks.mpi_encode, "encode_location", spy_mpi)
    assert merge.main([str(run_dir)]) == 0
    assert mf.read_manifest(run_dir)["files_status"] == "ready"
    # the master threads hold the MPI events: numpy's MPI encoder; the workers' threads
    # with THREAD_BEGIN: the encoder, or libotf2 around one's MPI event
    assert sorted(engines) == [
        "libotf2", "numpy", "numpy with MPI events", "numpy with MPI events"
    ]  # fmt: skip
    got: dict[tuple[str, str], list] = {}
    with otf2.reader.open(str(run_dir / "traces.otf2")) as trace:
        for location, event in trace.events:
            got.setdefault((location.group.name, location.name), []).append(event)
    assert sorted(got) == [("MPI Rank 0", "Master thread"), ("MPI Rank 0", "Thread 1 (work)"),
                           ("MPI Rank 1", "Master thread"), ("MPI Rank 1", "Thread 1 (work)")]  # fmt: skip
    contingents = []
    for (group, name), evs in got.items():
        kinds = [type(e).__name__ for e in evs]
        if name == "Master thread":
            assert "ThreadBegin" not in kinds and "ThreadEnd" not in kinds
            continue
        # both workers' lives on the kernel's clock: rank 1's mapped 3 ms forward
        assert [(k, e.time - EPOCH) for k, e in zip(kinds, evs)][::len(evs) - 1] == [
            ("ThreadBegin", 4 * MS // 5), ("ThreadEnd", 11 * MS // 5)
        ]  # fmt: skip
        first, last = evs[0], evs[-1]
        assert {a.name: v for a, v in first.attributes.items()} == {
            "ThreadId": 100 if group == "MPI Rank 0" else 200
        }
        assert first.sequence_count == last.sequence_count == 2**64 - 1
        assert first.thread_contingent is last.thread_contingent
        contingents.append((group, first.thread_contingent))
        inner = [(k, e.time - EPOCH) for k, e in zip(kinds[1:-1], evs[1:-1])]
        mpi_send = [("MpiSend", 3 * MS // 2)] if group == "MPI Rank 1" else []
        assert inner == [("Enter", MS), ("Enter", 3 * MS // 2), *mpi_send,
                         ("Leave", 8 * MS // 5), ("Leave", 2 * MS)]  # fmt: skip
    # a COMM "" per rank, its group that rank's locations
    assert len({id(c) for _g, c in contingents}) == 2
    for _group, comm in contingents:
        assert comm.name == "" and comm.group.name == "SCOREP_GROUP_PTHREAD"
        assert str(comm.group.group_type).endswith("COMM_GROUP")
        assert str(comm.group.paradigm).endswith("PTHREAD")
    otf2_print = shutil.which("otf2-print") or "/opt/scorep/bin/otf2-print"
    defs = subprocess.run([otf2_print, "-G", str(run_dir / "traces.otf2")],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert re.search(r'^PARADIGM +\d+ +PTHREAD, Name: "Pthread" <\d+>, Class: THREAD_CREATE_WAIT',
                     defs, re.M)  # fmt: skip
    pthread = re.findall(r'^GROUP .*Name: "PTHREAD" <\d+>, Type: COMM_LOCATIONS, .*4 Members: (.*)$',
                         defs, re.M)  # fmt: skip
    assert len(pthread) == 1
    assert re.findall(r'"([^"]+)" <\d+>', pthread[0]) == ["Master thread", "Thread 1 (work)"] * 2
    per_rank = re.findall(r'^GROUP .*Name: "SCOREP_GROUP_PTHREAD" <\d+>, Type: COMM_GROUP, '
                          r'Paradigm: "Pthread" <\d+>, Flags: NONE, 2 Members: (.*)$', defs, re.M)  # fmt: skip
    assert [re.findall(r"(\d+) \(\"", m) for m in per_rank] == [["0", "1"], ["2", "3"]]
    assert (
        len(re.findall(r'^COMM .*Name: "" <\d+>, Group: "SCOREP_GROUP_PTHREAD"', defs, re.M)) == 2
    )


def test_a_rank_without_threads_still_has_its_contingent(run_dir):
    """As Score-P (--mpp=mpi --thread=pthread, a thread on rank 0 only): rank 1's master
    alone in its own SCOREP_GROUP_PTHREAD and COMM "", and no thread records there."""
    import shutil
    import subprocess

    _with_workers(run_dir, ranks=(0,))
    assert merge.main([str(run_dir)]) == 0
    otf2_print = shutil.which("otf2-print") or "/opt/scorep/bin/otf2-print"
    defs = subprocess.run([otf2_print, "-G", str(run_dir / "traces.otf2")],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    per_rank = re.findall(r'^GROUP .*Name: "SCOREP_GROUP_PTHREAD" .*Members?: (.*)$', defs, re.M)
    assert [re.findall(r'(\d+) \("', m) for m in per_rank] == [["0", "1"], ["2"]]
    assert len(re.findall(r'^COMM .*Group: "SCOREP_GROUP_PTHREAD"', defs, re.M)) == 2
    events = subprocess.run([otf2_print, str(run_dir / "traces.otf2")],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert [line.split()[:2] for line in events.splitlines() if line.startswith("THREAD_")] == [
        ["THREAD_BEGIN", "1"], ["THREAD_END", "1"]
    ]  # fmt: skip
