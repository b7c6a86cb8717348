"""File I/O under the builtin tracer with ``io: posix`` (measure.io_recorder): Python's
open, read, write and close as regions holding OTF2 I/O events with their bytes; open
itself is back as it was after the run, and threads the run does not record get plain
file objects."""

from __future__ import annotations

import _io
import builtins
import io
import threading

from test_tracer_util import calls, run_cell

from scorep_kernel.measure.measure_config import MeasureConfig
from scorep_kernel.measure.session import Measurement


def measure(tmp_path, source, namespace=None):
    m = Measurement(tmp_path / "exp", MeasureConfig(io="posix"))
    m.start()
    try:
        run_cell(m, "cell [1]", source, {"__name__": "__main__", **(namespace or {})})
    finally:
        rec = m.stop()
    return rec


def test_reads_and_writes_with_their_bytes(tmp_path):
    path = tmp_path / "data.txt"
    source = (
        "import pathlib\n"
        f"p = pathlib.Path({str(path)!r})\n"
        "p.write_text('ab\\ncde\\n')\n"
        "with open(p) as f:\n"
        "    lines = [line for line in f]\n"
        "with open(p, 'rb') as f:\n"
        "    head = f.read(2)\n"
    )
    rec = measure(tmp_path, source)
    io_calls = [c.name for c in calls(rec) if c.name in ("open", "read", "write", "close")]
    # write_text: open, write, close; iteration: a read per line and the last empty one
    assert io_calls == ["open", "write", "close", "open", "read", "read", "read", "close",
                        "open", "read", "close"]  # fmt: skip
    (thread,) = rec.threads
    assert thread.markers is not None
    moved = [(m.name, m.nbytes) for m in thread.markers.items if m.kind == "io_complete"]
    assert moved == [("write", 7), ("read", 3), ("read", 4), ("read", 0), ("read", 2)]
    assert rec.io_handles == [str(path)] * 3
    assert builtins.open is _io.open and io.open is _io.open


def test_threads_the_run_does_not_record_get_plain_files(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("x")
    seen = []
    ready, opened = threading.Event(), threading.Event()

    def kernel_thread():  # started before the run: a kernel's own thread
        ready.wait(30)
        with open(path) as f:
            seen.append(type(f))
        opened.set()

    t = threading.Thread(target=kernel_thread)
    t.start()
    rec = measure(
        tmp_path, "_ready.set()\n_opened.wait(30)\n", {"_ready": ready, "_opened": opened}
    )
    t.join(30)
    assert seen == [io.TextIOWrapper]
    assert rec.io_handles == []
