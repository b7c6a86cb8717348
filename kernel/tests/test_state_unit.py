"""scorep_kernel.state within one process: names, placeholders, skipping, header, cleanup."""

from __future__ import annotations

import gc
import os
import pickle
import signal
import subprocess
import sys
import threading
import types

import numpy as np
import pytest

from scorep_kernel.state import (
    NotTransferredError,
    StateTransferError,
    apply,
    is_bookkeeping,
    pack,
    placeholder_for,
    unpack,
)


def round_trip(namespace: dict, target: dict | None = None, **apply_kwargs):
    packet = pack(namespace, process_state=False)
    try:
        unpacked = unpack(packet.header)
    finally:
        packet.release()
    target = {} if target is None else target
    changes = apply(target, unpacked, **apply_kwargs)
    return packet, unpacked, target, changes


def test_ipython_bookkeeping_never_travels():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell()
    try:
        shell.run_cell("x = 1\nx")
        shell.run_cell("_helper = 2\ny = [x]")
        packet = pack(shell.user_ns, process_state=False)
        assert sorted(packet.names) == ["_helper", "x", "y"]
        packet.release()
    finally:
        shell.cleanup()
        InteractiveShell.clear_instance()


@pytest.mark.parametrize(
    "name, bookkeeping",
    [
        ("In", True),
        ("Out", True),
        ("_", True),
        ("__", True),
        ("___", True),
        ("_7", True),
        ("_i", True),
        ("_ii", True),
        ("_iii", True),
        ("_i12", True),
        ("_ih", True),
        ("_oh", True),
        ("_dh", True),
        ("get_ipython", True),
        ("exit", True),
        ("quit", True),
        ("__builtins__", True),
        ("__name__", True),
        ("_exit_code", True),
        ("x", False),
        ("_helper", False),
        ("_x1", False),
        ("i", False),
        ("open", False),
    ],
)
def test_bookkeeping_names(name, bookkeeping):
    assert is_bookkeeping(name, object()) is bookkeeping


def test_placeholder_message_and_every_use_raises():
    ph = placeholder_for("f", "an open file")
    message = (
        "`f` (an open file) stays in the kernel: it cannot be sent to the profiling process. "
        "Open it inside the profiled cell, or run this cell without profiling."
    )
    assert "f" in repr(ph) and "an open file" in repr(ph)
    uses = [
        lambda: ph.read,
        lambda: ph(),
        lambda: iter(ph),
        lambda: len(ph),
        lambda: ph[0],
        lambda: ph + 1,
        lambda: bool(ph),
        lambda: str(ph),
        lambda: setattr(ph, "a", 1),
        lambda: ph == 1,
        lambda: 1 in ph,
    ]
    for use in uses:
        with pytest.raises(NotTransferredError) as info:
            use()
        assert str(info.value) == message
    generic = placeholder_for("g", "a generator")
    with pytest.raises(
        NotTransferredError, match=r"^`g` \(a generator\) stays in the kernel: .* Create it inside"
    ):
        next(generic)
    back = placeholder_for("g", "a generator", where="worker", origin="cell [4]")
    with pytest.raises(
        NotTransferredError,
        match=r"^`g` \(a generator\) was made by cell \[4\] in its profiling process .* "
        r"To keep it, run that cell in the kernel: unprofiled, or profiled in-process",
    ):
        back.send
    assert repr(back) == (
        "<g: a generator, made by cell [4] in its profiling process, not brought back>"
    )


def test_placeholder_never_travels_back_and_kernel_object_stays():
    lock = threading.Lock()
    kernel = {"lock": lock, "x": 1}
    _, _, worker, _ = round_trip(kernel, bind_placeholders=True)
    assert type(worker["lock"]).__name__ == "Placeholder"
    with pytest.raises(NotTransferredError):
        pickle.dumps(worker["lock"])
    worker["x"] = 2
    worker["nested"] = [worker["lock"]]
    packet, unpacked, _, changes = round_trip(worker, target=kernel)
    assert packet.skipped == {"lock": "a lock", "nested": "contains an object that stayed behind"}
    assert kernel["lock"] is lock and kernel["x"] == 2 and "nested" not in kernel
    assert changes.kept == packet.skipped


def test_skip_argument_and_unpicklables_are_reported():
    import socket

    sock = socket.socket()
    namespace = {
        "ok": 1,
        "gen": (i for i in range(2)),
        "sock": sock,
        "fh": open(__file__),  # noqa: SIM115 (an open file is the point)
        "co": None,
        "keep_out": 5,
        "inner": {"lock": threading.RLock()},
        "closure": (lambda lock=threading.Lock(): lock),  # noqa: B008
    }
    try:
        packet = pack(namespace, skip=["keep_out"], process_state=False)
        assert packet.skipped["keep_out"] == "left out on request"
        assert packet.skipped["gen"] == "a generator" and packet.skipped["sock"] == "a socket"
        assert (
            packet.skipped["fh"] == "an open file" and packet.skipped["inner"] == "contains a lock"
        )
        assert packet.skipped["closure"] == "contains a lock"
        assert set(packet.names) == {"ok", "co"}
        packet.release()
    finally:
        sock.close()
        namespace["fh"].close()


def test_many_unpicklables_among_many_names_are_all_found():
    namespace = {f"v{i}": [i] * 3 for i in range(2000)}
    bad = {f"v{i}" for i in range(0, 2000, 97)}
    for name in bad:
        namespace[name] = {"inner": threading.Lock()}
    namespace["shared"] = namespace["v1"]
    packet = pack(namespace, process_state=False)
    assert set(packet.skipped) == bad
    unpacked = unpack(packet.header)
    packet.release()
    target = {}
    apply(target, unpacked)
    assert target["shared"] is target["v1"] and target["v1999"] == [1999] * 3


def test_aliasing_and_cycles_survive():
    a = [1, 2]
    cyc: dict = {}
    cyc["self"] = cyc
    _, _, t, _ = round_trip({"a": a, "b": a, "t": (a, a), "cyc": cyc})
    assert t["a"] is t["b"] and t["t"][0] is t["a"] and t["cyc"]["self"] is t["cyc"]


def test_large_arrays_stay_out_of_the_header():
    ns = {
        "big": np.arange(2_000_000.0),
        "also": None,
        "blob": b"z" * (3 << 20),
        "ba": bytearray(2 << 20),
    }
    ns["also"] = ns["big"]
    packet = pack(ns, process_state=False)
    assert len(packet.header) < 4096
    assert packet.nbytes >= 16_000_000 + (5 << 20)
    unpacked = unpack(packet.header)
    packet.release()
    t = {}
    apply(t, unpacked)
    assert t["also"] is t["big"] and t["big"][123] == 123.0 and t["big"].flags.writeable
    assert t["blob"] == b"z" * (3 << 20) and t["ba"] == bytearray(2 << 20)


def test_functions_see_the_target_namespace_even_when_built_early():
    src = {"__name__": "__main__"}
    exec(
        "x = 1\ndef f(): return x\nclass K:\n    def m(self): return x\n    @staticmethod\n    def s(): return x",
        src,
    )
    packet = pack(src, process_state=False)
    unpacked = unpack(packet.header)
    packet.release()
    assert unpacked.namespace["f"]() == 1  # built before apply: lives in unpacked.namespace
    target = {"__name__": "__main__"}
    apply(target, unpacked)
    target["x"] = 42
    assert target["f"]() == 42 and target["K"]().m() == 42 and target["K"].s() == 42
    assert target["f"].__globals__ is target


def test_deleted_names_follow_previous_names_and_skipped_stay():
    kernel = {"a": 1, "b": 2, "lock": threading.Lock()}
    sent = pack(kernel, process_state=False)
    worker: dict = {}
    apply(worker, unpack(sent.header), bind_placeholders=True)
    del worker["a"]
    back = pack(worker, process_state=False)
    changes = apply(kernel, unpack(back.header), previous_names=sent.names)
    sent.release()
    back.release()
    assert "a" not in kernel and kernel["b"] == 2 and "lock" in kernel
    assert changes.deleted == ["a"] and "lock" in changes.kept


def test_process_state(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SKST_KEEP", "1")
    monkeypatch.setenv("SCOREP_MINE", "kernel")
    saved_path = list(sys.path)
    try:
        packet = pack({"x": 1})
        (tmp_path / "sub").mkdir()
        os.chdir(tmp_path / "sub")
        monkeypatch.setenv("SKST_NEW", "2")
        monkeypatch.delenv("SKST_KEEP")
        monkeypatch.setenv("SCOREP_MINE", "worker")
        sys.path.append("/skst")
        changes = apply({}, unpack(packet.header), environ_ignore=("SCOREP_",))
        packet.release()
        assert os.getcwd() == str(tmp_path) and changes.cwd == str(tmp_path)
        assert os.environ["SKST_KEEP"] == "1" and "SKST_NEW" not in os.environ
        assert os.environ["SCOREP_MINE"] == "worker"  # ignored prefix: per process
        assert sys.path == saved_path and changes.sys_path_changed
        assert "SKST_NEW" in changes.environ_removed and "SKST_KEEP" in changes.environ_set
        without = pack({"x": 1}, process_state=False)
        assert unpack(without.header).process_state is None
        without.release()
    finally:
        sys.path[:] = saved_path


def test_modules_travel_by_name_and_missing_ones_become_placeholders():
    fake = types.ModuleType("skst_fake_module")
    sys.modules["skst_fake_module"] = fake
    try:
        packet = pack({"np": np, "fake": fake, "osp": os.path}, process_state=False)
        assert len(packet.header) < 1000
    finally:
        del sys.modules["skst_fake_module"]
    t = {}
    apply(t, unpack(packet.header))
    packet.release()
    assert t["np"] is np and t["osp"] is os.path
    with pytest.raises(NotTransferredError, match="cannot be imported here"):
        t["fake"].anything


def test_bad_headers_have_clear_errors():
    with pytest.raises(StateTransferError, match="bad magic"):
        unpack(b"nonsense-header-bytes")
    with pytest.raises(StateTransferError, match="too short"):
        unpack(b"SK")
    header = bytearray(pack({}, process_state=False).header)
    header[4] = 99
    with pytest.raises(StateTransferError, match="different versions"):
        unpack(bytes(header))


def test_unpack_after_release_is_a_clear_error():
    packet = pack({"a": np.ones(1 << 18)}, process_state=False, transport="shm")
    packet.release()
    packet.release()  # idempotent
    with pytest.raises(StateTransferError, match=r"released|gone"):
        unpack(packet.header)


def _shm_names() -> set:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def test_shm_file_fallback_names_are_unique_and_removed(monkeypatch):
    monkeypatch.delattr(os, "memfd_create")  # as on macOS
    before = _shm_names()
    first = pack({"a": np.ones(1 << 18)}, process_state=False, transport="shm")
    second = pack({"a": np.ones(1 << 18)}, process_state=False, transport="shm")
    created = _shm_names() - before
    assert len(created) == 2 and all(n.startswith("scorep-state-") for n in created)
    t = {}
    apply(t, unpack(first.header))
    with first:
        pass
    del second
    gc.collect()
    assert _shm_names() == before
    assert t["a"][0] == 1.0


def test_memfd_release_and_gc_close_everything():
    fds = len(os.listdir("/proc/self/fd"))
    packet = pack(
        {f"a{i}": np.ones(1 << 18) for i in range(20)}, process_state=False, transport="shm"
    )
    assert len(os.listdir("/proc/self/fd")) == fds + 1, "small buffers share one segment"
    t = {}
    apply(t, unpack(packet.header))
    del packet
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) == fds
    assert t["a19"].sum() == 1 << 18


def test_killed_sender_leaves_nothing_in_dev_shm():
    before = _shm_names()
    code = (
        "import os, signal, numpy as np\nfrom scorep_kernel.state import pack\n"
        "p = pack({'a': np.ones(1 << 20)}, transport='shm')\nprint(len(p.header), flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    assert proc.returncode == -signal.SIGKILL and proc.stdout.strip()
    assert _shm_names() == before


def test_pandas_frames_travel_out_of_band():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": np.arange(300_000.0), "b": np.arange(300_000)})
    packet = pack({"df": frame}, process_state=False)
    assert len(packet.header) < 64 * 1024
    t = {}
    apply(t, unpack(packet.header))
    packet.release()
    assert t["df"].equals(frame)


class _RaisesOnPickle:
    def __reduce__(self):
        raise ValueError("refuses to be pickled")


class _StateFails:
    def __getstate__(self):
        raise RuntimeError("state is not available")


def test_odd_objects_never_fail_the_pack():
    deep: list = []
    node = deep
    for _ in range(100_000):
        node.append([])
        node = node[0]
    ns = {
        "reduce": _RaisesOnPickle(),
        "state": _StateFails(),
        "deep": deep,
        "fine": {"a": (1, 2.0, "x")},
    }
    packet = pack(ns, process_state=False)
    assert set(packet.skipped) == {"reduce", "state", "deep"}
    assert "refuses to be pickled" in packet.skipped["reduce"]
    assert "recursion" in packet.skipped["deep"]
    t = {}
    apply(t, unpack(packet.header))
    packet.release()
    assert t == {"fine": {"a": (1, 2.0, "x")}}


def test_large_bytes_alias_stays_one_object():
    blob = bytes(3 << 20)
    packet = pack({"blob": blob, "same": blob}, process_state=False)
    assert len(packet.header) < 4096
    t = {}
    apply(t, unpack(packet.header))
    packet.release()
    assert t["blob"] is t["same"] and len(t["blob"]) == 3 << 20


def test_transport_choice(monkeypatch):
    from scorep_kernel.state import choose_transport

    monkeypatch.delenv("SCOREP_KERNEL_STATE_TRANSPORT", raising=False)
    assert choose_transport("shm") == "shm" and choose_transport("pull") == "pull"
    assert choose_transport() in ("pull", "shm")
    monkeypatch.setenv("SCOREP_KERNEL_STATE_TRANSPORT", "shm")
    assert choose_transport() == "shm"
    monkeypatch.setenv("SCOREP_KERNEL_STATE_TRANSPORT", "carrier-pigeon")
    with pytest.raises(ValueError, match="SCOREP_KERNEL_STATE_TRANSPORT"):
        choose_transport()
