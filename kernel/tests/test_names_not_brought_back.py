"""Names a cell profiled in a subprocess binds to what cannot come back (a generator, a
running thread, a lock, an open file): never a stale value, never a bare NameError, and
said once in words in the cell's output; finished threads come back as such."""

from __future__ import annotations

import pickle
import threading

import pytest
from test_kernel_harness import KernelHandle

from scorep_kernel import state
from scorep_kernel.state import transfer
from scorep_kernel.state.placeholder import NotTransferredError, is_placeholder

pytestmark = pytest.mark.timeout(240)

SUB = {"scorep": {"profile": True, "backend": "builtin", "isolation": "subprocess"}}
SCOREP_SUB = {"scorep": {"profile": True, "backend": "scorep", "isolation": "subprocess"}}


def _error_of(result) -> str:
    errors = result.of("error")
    assert len(errors) == 1, result.messages
    return f"{errors[0]['ename']}: {errors[0]['evalue']}"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    handle = KernelHandle(tmp_path_factory.mktemp("lost"))
    yield handle
    handle.shutdown()


def test_a_rebound_name_never_keeps_its_old_value(kernel):
    assert kernel.run("gen = 'old value'").status == "ok"
    cell = kernel.run("gen = (i for i in range(3))\nkept = 1", SUB)
    assert cell.status == "ok", cell.reply
    count = cell.reply["execution_count"]
    # said once, in words, in the cell's own output; nothing red
    assert cell.stderr() == "" and cell.stdout() == ""
    message = cell.bundle()["summary"]["message"]
    assert message.count("Not brought back from the profiling process") == 1
    assert "gen (a generator)" in message and '"isolation": "inprocess"' in message
    shown = kernel.run("print(repr(gen), kept)")
    assert shown.stdout() == (
        f"<gen: a generator, made by cell [{count}] in its profiling process, not brought back> 1\n"
    )
    used = kernel.run("next(gen)")
    assert used.status == "error"
    words = _error_of(used)
    assert words.startswith("NotTransferredError: `gen` (a generator) was made by ")
    assert f"cell [{count}]" in words and "profiled in-process" in words


def test_a_new_name_is_never_missing(kernel):
    cell = kernel.run(
        "import threading\nhold = threading.Event()\n"
        "t = threading.Thread(target=hold.wait, daemon=True)\nt.start()\n"
        "lock = threading.Lock()\nfh = open('made-in-the-cell.txt', 'w')",
        SUB,
    )
    assert cell.status == "ok", cell.reply
    message = cell.bundle()["summary"]["message"]
    for words in ("t (a running thread)", "lock (a lock)", "fh (an open file)"):
        assert words in message
    for name in ("t", "lock", "fh"):
        used = kernel.run(f"{name}.__class__, {name}.name if False else {name}()")
        assert used.status == "error"
        assert _error_of(used).startswith(f"NotTransferredError: `{name}` (")
    # a placeholder of a gone object goes into the next profiled cell as itself
    again = kernel.run("try:\n    t.join()\nexcept Exception as e:\n    said = str(e)", SUB)
    assert again.status == "ok" and "Not brought back" not in again.bundle()["summary"]["message"]
    assert kernel.value("said").startswith("`t` (a running thread) was made by cell [")


def test_the_quickstart_cell_brings_its_finished_thread_back_without_a_word(kernel):
    kernel.run(
        "import threading, time\n"
        "def background_io(seconds):\n    for _ in range(5):\n        time.sleep(seconds / 5)\n"
    )
    cell = kernel.run(
        'worker = threading.Thread(target=background_io, args=(0.05,), name="io")\n'
        "worker.start()\nworker.join()\nprint('done')",
        SUB,
    )
    assert cell.status == "ok", cell.reply
    assert cell.stdout() == "done\n" and cell.stderr() == ""
    assert "Not brought back" not in cell.bundle()["summary"]["message"]
    assert kernel.value(
        "(worker.name, worker.is_alive(), worker.join(), type(worker).__name__)"
    ) == (
        "io",
        False,
        None,
        "Thread",
    )


def test_a_thread_subclass_keeps_what_its_run_stored(kernel):
    kernel.run(
        "import threading\nclass Summer(threading.Thread):\n"
        "    def __init__(self, n):\n        super().__init__(name='summer')\n        self.n = n\n"
        "    def run(self):\n        self.total = sum(range(self.n))\n"
    )
    cell = kernel.run("s = Summer(10)\ns.start()\ns.join()\nfresh = Summer(3)", SUB)
    assert cell.status == "ok" and "Not brought back" not in cell.bundle()["summary"]["message"]
    assert kernel.value("(s.total, s.n, s.is_alive(), isinstance(s, Summer))") == (
        45,
        10,
        False,
        True,
    )
    # never started: it starts here, in the kernel
    assert kernel.value("(fresh.start(), fresh.join(), fresh.total)") == (None, None, 3)


@pytest.mark.skipif(not __import__("shutil").which("scorep-config"), reason="Score-P not found")
def test_the_same_under_score_p(kernel):
    assert kernel.run("gen2 = 'old value'").status == "ok"
    cell = kernel.run("gen2 = (i for i in range(3))", SCOREP_SUB)
    assert cell.status == "ok", cell.reply
    assert "gen2 (a generator)" in cell.bundle()["summary"]["message"]
    assert kernel.value("gen2").startswith("<gen2: a generator, made by cell [")


def test_the_sender_marks_placeholders_and_the_kernel_binds_lost_ones():
    # worker side: "fh" was a placeholder (the kernel has it), "gen" was made there
    worker = {
        "fh": state.placeholder_for("fh", "an open file"),
        "gen": (i for i in range(2)),
        "x": 2,
    }
    packet = state.pack(worker)
    assert packet.stayed == frozenset({"fh"}) and set(packet.skipped) == {"fh", "gen"}
    kernel_file = object()
    kernel = {"fh": kernel_file, "gen": "stale", "x": 1}
    sent = state.pack({"x": 1})
    result, lost = transfer.apply_in_kernel(
        kernel, state.unpack(packet.header), sent, origin="cell [7]"
    )
    packet.release()
    sent.release()
    assert result is None and lost == {"gen": "a generator"}
    assert kernel["fh"] is kernel_file and kernel["x"] == 2 and is_placeholder(kernel["gen"])
    with pytest.raises(NotTransferredError, match=r"cell \[7\]"):
        list(kernel["gen"])
    # a placeholder for a gone object pickles as itself; one for a living object never does
    again = pickle.loads(pickle.dumps(kernel["gen"]))
    assert repr(again) == repr(kernel["gen"])
    with pytest.raises(NotTransferredError):
        pickle.dumps(worker["fh"])


def test_threads_travel_finished_or_unstarted_never_running():
    done = threading.Thread(target=lambda: None, name="done", daemon=True)
    done.start()
    done.join()
    unstarted = threading.Thread(target=print, args=("hi",), name="later")
    sent = state.pack({"done": done, "unstarted": unstarted})
    unpacked = state.unpack(sent.header)
    ns = unpacked.namespace
    sent.release()
    assert ns["done"].name == "done" and ns["done"].daemon and not ns["done"].is_alive()
    assert ns["done"].join(timeout=0) is None
    assert ns["unstarted"].name == "later" and ns["unstarted"].ident is None
    hold = threading.Event()
    running = threading.Thread(target=hold.wait)
    running.start()
    try:
        packet = state.pack({"running": running})
        assert packet.skipped == {"running": "a running thread"}
        packet.release()
    finally:
        hold.set()
        running.join()
