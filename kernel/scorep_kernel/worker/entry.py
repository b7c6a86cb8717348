"""The worker process: runs profiled cells for the kernel, under measurement.

Started by the kernel (``worker.client``) as either

    python -m scorep_kernel.worker --fd N                        (builtin backend)
    python -m scorep <binding args> <this file> --fd N           (Score-P backend)

or forked from the builtin backend's spare template (``--template``, worker.template).

where N is the worker's end of a private socketpair. The worker waits (with the modules
the notebook uses already imported) until the kernel sends a run, then executes the run's
cells in a headless IPython shell, sending outputs as they happen and the namespace after
each cell. It lives for exactly one measured run: Score-P writes its experiment when the
process ends, and a fresh process keeps one run's measurement out of the next.
"""

from __future__ import annotations

import builtins
import dataclasses
import faulthandler
import os
import signal
import socket
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):  # run as a script by `python -m scorep <file>`
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from scorep_kernel.state import Packet, transfer
from scorep_kernel.worker import lifeline
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.import_watch import ImportWatch, import_all
from scorep_kernel.worker.protocol import BlockingChannel, ChannelClosed
from scorep_kernel.worker.shell import (
    ForwardingStream,
    cell_code_filename,
    flush_streams,
    make_input,
    make_shell,
    start_flusher,
)

if TYPE_CHECKING:
    from scorep_kernel.formats.recording import Recording
    from scorep_kernel.measure.session import Measurement
    from scorep_kernel.worker.scorep_session import ScorePSession


def _scorep_session(backend: str, instrument: bool) -> ScorePSession | None:
    """Score-P's bindings when this process runs under ``python -m scorep``; for the
    builtin backend, the shim that lets code written for the bindings run unchanged."""
    if backend == "scorep":
        from scorep_kernel.worker.scorep_session import ScorePSession

        return ScorePSession(instrument)
    from scorep_kernel.shim import install_scorep_shim

    install_scorep_shim()
    return None


class Worker:
    def __init__(self, channel: BlockingChannel, backend: str = "builtin", instrument: bool = True):
        self.channel = channel
        self.shell = make_shell(channel)
        self.scorep = _scorep_session(backend, instrument)
        self.measurement: Measurement | None = None
        self.in_cell = False
        self.interrupt_pending = False
        self.pending_packet: Packet | None = None
        self.stopped: tuple[Recording | None, msg.RunStopped] | None = None
        self.sent_names: tuple[str, ...] = ()
        self.transport: str | None = None  # "shm" once the kernel's state came that way
        self._open_cell: Any = None  # the builtin tracer's cell region while a cell runs
        self.run_started = False
        self.imports = ImportWatch(
            lambda module: channel.send(msg.ImportStarted(module)), lambda: self.shell.user_ns
        )
        self.imports.install()
        # time.monotonic() when the message in hand arrived; the worker's replies carry
        # "stamps" on this clock (CLOCK_MONOTONIC, shared with the kernel on one host) so
        # the kernel can tell its waiting apart from the worker's work.
        self.received_at = 0.0
        if self.scorep is not None:
            # Only the cells' own statements are measured (see scorep_session).
            from scorep_kernel.worker.scorep_session import MeasuredCompiler

            self.shell.compile = MeasuredCompiler()

    # --- signals -------------------------------------------------------------------

    def on_sigint(self, signum: int, frame: Any) -> None:
        # The kernel forwards the user's interrupt only while a cell of ours is under way;
        # one that arrives while the cell is being set up stops it before it starts.
        if self.in_cell:
            raise KeyboardInterrupt
        self.interrupt_pending = True

    # --- messages ------------------------------------------------------------------

    def serve(self) -> None:
        backend = "scorep" if self.scorep is not None else "builtin"
        note = "Score-P bindings loaded" if self.scorep is not None else "builtin tracer"
        self.channel.send(msg.Ready(os.getpid(), True, note, backend))
        handlers = self.handlers()
        while True:
            try:
                message = self.channel.recv()
            except ChannelClosed:
                return
            self.received_at = time.monotonic()
            # Release the namespace packet only once the kernel has it: a late reply (an
            # InputReply for an interrupted input()) must not free it under the kernel.
            if self.pending_packet is not None and isinstance(message, _RELEASING):
                self.pending_packet.release()
                self.pending_packet = None
            if isinstance(message, msg.FinishRun):
                self.finish_run()
                if not message.keep:
                    return
                self.run_over()
                continue
            if isinstance(message, msg.Shutdown):
                return
            msg.dispatch(message, handlers, "profiling worker")

    def handlers(self) -> dict[type[msg.Message], Callable[[Any], None]]:
        """What each message from the kernel does (an MPI rank handles a few more)."""
        return {
            msg.Preload: lambda m: self.preload(m.modules),
            msg.StartRun: self.start_run,
            msg.Cell: self.run_cell,
            msg.StateReceived: lambda m: None,  # releases the packet (serve)
        }

    def apply_state(self, namespace: dict[str, Any], unpacked: Any) -> None:
        """The kernel's namespace into this process's (an MPI rank keeps its launcher's
        environment, see mpi.rank)."""
        transfer.apply_in_worker(namespace, unpacked, self.sent_names)

    def pack_state(self, namespace: dict[str, Any]) -> Packet:
        """The namespace the kernel gets back after a cell (an MPI rank other than 0 sends
        only the gathered names), the way the kernel's came when that was through shared
        memory files (%%marshalling_settings MODE=disk, or no direct reading allowed)."""
        return transfer.pack(namespace, self.transport)

    def preload(self, modules: list[str]) -> None:
        loaded = import_all(modules)
        if self.scorep is None:  # builtin: torch.profiler's start-up paid here, not in the cell
            from scorep_kernel.accel.torch_session import warm_up

            warm_up()
        self.channel.send(msg.Preloaded(modules, loaded))

    def start_run(self, start: msg.StartRun) -> None:
        self.run_started = True
        lifeline.in_run.set()
        # Score-P's variables belong to this process; the kernel's environment, applied
        # before each cell, leaves SCOREP_* alone (transfer.ENVIRON_IGNORE).
        os.environ.update(start.env)
        error = None
        if self.scorep is not None:
            if start.measure is not None:
                self.scorep.imports_as_regions = start.measure.imports_as_regions
            self.scorep.begin_measurement()
        if self.scorep is None and start.measure is not None:
            # Imported here: a Score-P worker never loads the builtin tracer.
            from scorep_kernel.measure.session import Measurement
            from scorep_kernel.shim import preload_scorep_shim

            try:
                preload_scorep_shim()
                self.measurement = Measurement(start.exp_dir, start.measure)
                self.measurement.start()
            except Exception as e:  # the run goes on unmeasured, and says why
                self.measurement = None
                error = f"{type(e).__name__}: {e}"
        path = start.measure.instrumenter_file if start.measure is not None else None
        if path and error is None:
            from scorep_kernel.binding_args import run_instrumenter_file

            try:
                run_instrumenter_file(str(path))
            except Exception as e:  # the run goes on, and says why
                error = f"--instrumenter-file={path}: {type(e).__name__}: {e}"
        stamps = {"received": self.received_at, "started": time.monotonic()}
        self.channel.send(msg.RunStarted(self._measured(), error, stamps))

    def _measured(self) -> bool:
        return self.scorep is not None or self.measurement is not None

    def _cell_begin(self, label: str, code_filename: str) -> None:
        # Plain calls, not a context manager: under Score-P, a frame of contextlib entered
        # before the instrumenter is on must not return while it is (see scorep_session).
        if self.scorep is not None:
            self.scorep.cell_begin(label, code_filename)
        elif self.measurement is not None:
            self._open_cell = self.measurement.cell(label, code_filename=code_filename)
            self._open_cell.__enter__()

    def _cell_end(self, label: str) -> None:
        if self.scorep is not None:
            self.scorep.cell_end(label)
        elif self._open_cell is not None:
            self._open_cell.__exit__(None, None, None)
            self._open_cell = None

    def run_cell(self, cell: msg.Cell) -> None:
        shell = self.shell
        ns = shell.user_ns
        stamps = {"received": self.received_at}
        try:
            unpacked = transfer.unpack(cell.state)
        except Exception as e:
            self.channel.send(msg.StateReceived())
            text = (
                f"The notebook's variables could not be sent to the profiling process "
                f"({type(e).__name__}: {e}); the cell did not run."
            )
            self.channel.send(msg.Error("NamespaceTransferError", text, [text]))
            self.channel.send(
                msg.CellDone("error", False, None, "NamespaceTransferError", text, [text])
            )
            return
        # The kernel may release its packet as soon as unpack returned.
        stamps["unpacked"] = time.monotonic()
        self.transport = "shm" if unpacked.transport == "shm" else None
        self.channel.send(msg.StateReceived())
        self.apply_state(ns, unpacked)
        if cell.colors:
            try:
                shell.colors = cell.colors
            except Exception:
                pass
        count = int(cell.execution_count or shell.execution_count)
        shell.execution_count = count
        code_filename = cell_code_filename(shell, cell.code, count)
        shell.last_error = None
        interrupted = False
        result = None
        stamps["applied"] = time.monotonic()
        modules_before = set(sys.modules)
        start = time.perf_counter()
        label = cell.label or f"cell [{count}]"
        stamps["cell_begin"] = time.monotonic()  # where the trace's cell region begins
        self._cell_begin(label, code_filename)
        try:
            self.in_cell = self.imports.active = True
            if self.interrupt_pending:
                raise KeyboardInterrupt
            result = shell.run_cell(cell.code, store_history=True, cell_id=cell.cell_id)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            self.in_cell = self.imports.active = False
            self._cell_end(label)
        self.interrupt_pending = False
        wall = time.perf_counter() - start
        stamps["cell_end"] = time.monotonic()
        flush_streams()
        error: dict[str, Any] | None = shell.last_error
        if result is not None and not result.success and error is None:
            exc = result.error_before_exec or result.error_in_exec
            error = {"ename": type(exc).__name__, "evalue": str(exc), "traceback": []}
        if error is not None and error["ename"] == "KeyboardInterrupt":
            interrupted = True
        if interrupted and error is None:
            error = {"ename": "KeyboardInterrupt", "evalue": "", "traceback": []}
        # The last expression's value travels with the namespace (so `_ is x` holds in the
        # kernel when the cell ended with `x`); the kernel moves it into Out / _.
        if result is not None and result.result is not None:
            ns[transfer.RESULT_NAME] = result.result
        try:
            packet = self.pack_state(ns)
        finally:
            ns.pop(transfer.RESULT_NAME, None)
        self.pending_packet = packet
        self.sent_names = tuple(n for n in packet.names if n != transfer.RESULT_NAME)
        self.channel.send(
            msg.CellDone(
                status="error" if error else "ok",
                interrupted=interrupted,
                state=packet.header,
                **(error or {}),
                skipped=dict(packet.skipped),
                wall_s=wall,
                imported=_imported_since(modules_before),
                stamps={**stamps, "packed": time.monotonic()},
                payload=shell.take_payload(),
            )
        )
        if cell.last:
            self.stop_measurement()

    def stop_measurement(self) -> None:
        """Stop measuring and build the Recording (or keep the error), with the figures the
        kernel shows; Score-P finalizes. Called right after the run's last cell was sent
        back, so that this work overlaps with the kernel taking the namespace in; else by
        finish_run (Score-P: at the process's exit)."""
        if self.scorep is not None and self.stopped is None:
            notes = {"python_threads": self.scorep.thread_names()}
            self.stopped = (None, msg.RunStopped(measured=True, notes=notes))
            self.scorep.end_measurement()
        if self.measurement is None or self.stopped is not None:
            return
        begin = time.monotonic()
        try:
            recording = self.measurement.stop()
        except Exception as e:
            self.stopped = (None, msg.RunStopped(False, error=f"{type(e).__name__}: {e}"))
            return
        stopped_at = time.monotonic()
        from scorep_kernel.measure.top_regions import top_and_measured_or_empty

        top, measured_s = top_and_measured_or_empty(recording)
        report = msg.RunStopped(
            measured=True,
            events=recording.event_count,
            top=top,
            measured_s=measured_s,
            notes=dict(recording.notes or {}),
            stamps={"stop_begin": begin, "stopped": stopped_at, "summarized": time.monotonic()},
            stop_timings=dict(self.measurement.stop_timings),
        )
        self.stopped = (recording, report)

    def finish_run(self) -> None:
        lifeline.writing_files.set()
        if self.measurement is None:
            if self.stopped is not None:  # Score-P, finalized after the last cell
                self._tell(self.stopped[1])
            elif self.scorep is not None:  # finalized at the exit
                notes = {"python_threads": self.scorep.thread_names()}
                self._tell(msg.RunStopped(measured=True, notes=notes))
            else:
                self._tell(msg.RunStopped(measured=False))
            self._tell(msg.FilesDone("exit"))
            return
        self.stop_measurement()
        assert self.stopped is not None
        recording, report = self.stopped
        self._tell(
            dataclasses.replace(report, stamps={**report.stamps, "received": self.received_at})
        )
        if recording is None:
            self._tell(msg.FilesDone("failed", [report.error or "the measurement failed"]))
            return
        self._tell(self.write_recording(recording))

    def run_over(self) -> None:
        """The run is over and this process stays for the next one (an MPI rank the
        kernel keeps up): the namespace stays, the measurement goes."""
        self.measurement = None
        self.stopped = None
        self.run_started = False
        lifeline.writing_files.clear()

    def write_recording(self, recording: Any) -> msg.FilesDone:
        """The experiment's files from the run's recording (an MPI rank writes its share)."""
        assert self.measurement is not None
        try:
            self.measurement.write_files(recording, background=False)
        except Exception as e:
            return msg.FilesDone(
                "failed", [f"writing the experiment files failed: {type(e).__name__}: {e}"]
            )
        return msg.FilesDone("ready", [])

    def _tell(self, message: msg.Message) -> None:
        # After the run the kernel may be gone (shut down); the files are written anyway.
        try:
            self.channel.send(message)
        except OSError:
            pass


# Not worth a spare's preload: the worker's own machinery and the notebook's __main__.
_NOT_PRELOADED = ("__main__", "scorep_kernel", "scorep", "IPython", "ipykernel")


def _imported_since(before: set[str]) -> list[str]:
    """Modules the cell imported, in import order (a package before what it pulls in): a
    next worker imports them ahead of time, as a plain kernel would still have them."""
    return [
        name for name, module in list(sys.modules.items())
        if name not in before and isinstance(module, types.ModuleType)
        and not name.startswith(_NOT_PRELOADED)
    ][:10_000]  # fmt: skip


_RELEASING = (msg.StateReceived, msg.Cell, msg.FinishRun, msg.Shutdown)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--fd" not in argv:
        raise SystemExit("usage: python -m scorep_kernel.worker --fd N (started by the kernel)")
    fd = int(argv[argv.index("--fd") + 1])
    parent = int(os.environ.pop("SCOREP_KERNEL_PARENT_PID", "0") or 0) or os.getppid()
    if "--template" in argv:  # the builtin backend's spare template (worker.template)
        from scorep_kernel.worker.template import serve_template

        child = serve_template(fd, int(argv[argv.index("--template") + 1]), parent)
        if child is None:
            return
        run(child.fd, child.parent, kernel=child.kernel)  # from here on, as any worker
        return
    backend = argv[argv.index("--backend") + 1] if "--backend" in argv else "builtin"
    run(fd, parent, backend, "--no-python-instrumenter" not in argv)


def run(
    fd: int,
    parent: int,
    backend: str = "builtin",
    instrument: bool = True,
    kernel: int | None = None,
) -> None:
    """Serve the kernel on socket ``fd`` until the run ends; ``parent`` is the process
    whose end ends this one (the kernel), or the template this worker was forked from, when
    ``kernel`` too is gone.
    Everything with a thread starts here, never in a template (it forks)."""
    sock = socket.socket(fileno=fd)
    channel = BlockingChannel(sock)
    assert sys.__stderr__ is not None  # the kernel starts the worker with stderr piped
    faulthandler.enable(file=sys.__stderr__)
    sys.stdout = ForwardingStream("stdout", channel, 1)
    sys.stderr = ForwardingStream("stderr", channel, 2)
    start_flusher()
    lifeline.continue_when_the_kernel_dies()
    threading.Thread(target=lifeline.watch_parent, args=(parent, kernel), daemon=True).start()
    import getpass

    builtins.input = make_input(channel, password=False)
    getpass.getpass = make_input(channel, password=True)
    worker = Worker(channel, backend, instrument)
    signal.signal(signal.SIGINT, worker.on_sigint)
    try:
        worker.serve()
    except OSError:  # the kernel went away while this worker was starting or sending
        pass
    finally:
        flush_streams()
        if worker.pending_packet is not None:
            worker.pending_packet.release()
    if worker.scorep is not None and not worker.run_started:
        # A Score-P worker no run took (a spare of a kernel that went away): nothing to
        # write, so no Score-P finalization either (it would fill the directory it made).
        lifeline.remove_unused_experiment()
        os._exit(0)


if __name__ == "__main__":
    main()
