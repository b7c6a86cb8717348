"""The worker process: runs profiled cells for the kernel, under measurement.

Started by the kernel (``worker.client``) as either

    python -m scorep_kernel.worker --fd N                        (builtin backend)
    python -m scorep <binding args> <this file> --fd N           (Score-P backend)

where N is the worker's end of a private socketpair. The worker waits (with the modules
the notebook uses already imported) until the kernel sends a run, then executes the run's
cells in a headless IPython shell, sending outputs as they happen and the namespace after
each cell. It lives for exactly one measured run: Score-P writes its experiment when the
process ends, and a fresh process keeps one run's measurement out of the next.
"""

from __future__ import annotations

import builtins
import faulthandler
import importlib
import os
import signal
import socket
import sys
import threading
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

if __package__ in (None, ""):  # run as a script by `python -m scorep <file>`
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from scorep_kernel.measure.top_regions import top_regions_or_empty
from scorep_kernel.state import transfer
from scorep_kernel.worker.protocol import BlockingChannel, ChannelClosed
from scorep_kernel.worker.shell import (
    ForwardingStream,
    cell_code_filename,
    flush_streams,
    make_input,
    make_shell,
    start_flusher,
)


def _scorep_bindings(backend: str) -> Any:
    """The Score-P bindings when this process runs under ``python -m scorep``; for the
    builtin backend, the shim that lets code written for the bindings run unchanged."""
    if backend == "scorep":
        import scorep.instrumenter
        import scorep.user

        return scorep
    try:
        from scorep_kernel.measure import install_scorep_shim

        install_scorep_shim()
    except ImportError:
        pass
    return None


class Worker:
    def __init__(self, channel: BlockingChannel, backend: str = "builtin"):
        self.channel = channel
        self.shell = make_shell(channel)
        self.scorep = _scorep_bindings(backend)
        self.measurement: Any = None
        self.in_cell = False
        self.interrupt_pending = False
        self.pending_packet: Any = None
        self.stopped: tuple[Any, dict[str, Any]] | None = None  # (Recording, run_stopped report)
        self.sent_names: tuple[str, ...] = ()
        # time.monotonic() when the message in hand arrived; the worker's replies carry
        # "stamps" on this clock (CLOCK_MONOTONIC, shared with the kernel on one host) so
        # the kernel can tell its waiting apart from the worker's work.
        self.received_at = 0.0
        if self.scorep is not None:
            # Only the cells are measured, not the worker's own machinery.
            # (register/unregister exist in every version of the bindings.)
            self.scorep.instrumenter.unregister()

    # --- signals -------------------------------------------------------------------

    def on_sigint(self, signum: int, frame: Any) -> None:
        # The kernel forwards the user's interrupt only while a cell of ours is under way;
        # one that arrives while the cell is being set up stops it before it starts.
        if self.in_cell:
            raise KeyboardInterrupt
        self.interrupt_pending = True

    # --- messages ------------------------------------------------------------------

    def serve(self) -> None:
        measure_ok, message = self._measure_available()
        self.channel.send(
            "ready",
            {
                "pid": os.getpid(),
                "measure": measure_ok,
                "message": message,
                "backend": "scorep" if self.scorep is not None else "builtin",
            },
        )
        while True:
            try:
                kind, payload = self.channel.recv()
            except ChannelClosed:
                return
            self.received_at = time.monotonic()
            # Release the namespace packet only once the kernel has it: a late reply (an
            # input_reply for an interrupted input()) must not free it under the kernel.
            if self.pending_packet is not None and kind in _RELEASING:
                self.pending_packet.release()
                self.pending_packet = None
            if kind == "preload":
                self.preload(payload.get("modules", []))
            elif kind == "start_run":
                self.start_run(payload)
            elif kind == "cell":
                self.run_cell(payload)
            elif kind == "state_received":
                pass
            elif kind == "finish_run":
                self.finish_run()
                return
            elif kind == "shutdown":
                return

    def _measure_available(self) -> tuple[bool, str]:
        if self.scorep is not None:
            return True, "Score-P bindings loaded"
        try:
            from scorep_kernel.measure import Measurement  # noqa: F401
        except ImportError as e:
            return False, f"the builtin tracer is not installed ({e})"
        return True, "builtin tracer"

    def preload(self, modules: list[str]) -> None:
        failed = []
        for name in modules:
            if name in sys.modules:
                continue
            try:
                importlib.import_module(name)
            except BaseException:  # a module that fails here fails again in the cell
                failed.append(name)
        self.channel.send("preloaded", {"modules": modules, "failed": failed})

    def start_run(self, payload: dict[str, Any]) -> None:
        # Score-P's variables belong to this process; the kernel's environment, applied
        # before each cell, leaves SCOREP_* alone (transfer.ENVIRON_IGNORE).
        os.environ.update(payload.get("env") or {})
        error = None
        if self.scorep is None and payload.get("measure") is not None:
            try:
                from scorep_kernel.measure import MeasureConfig, Measurement

                config = MeasureConfig.from_mapping(payload["measure"])
                self.measurement = Measurement(payload["exp_dir"], config)
                self.measurement.start()
            except ImportError as e:
                self.measurement = None
                error = f"the builtin tracer is not installed ({e})"
            except Exception as e:
                self.measurement = None
                error = f"{type(e).__name__}: {e}"
        self.channel.send("run_started", {"error": error, "measured": self._measured(),
                                          "stamps": {"received": self.received_at,
                                                     "started": time.monotonic()}})  # fmt: skip

    def _measured(self) -> bool:
        return self.scorep is not None or self.measurement is not None

    @contextmanager
    def _region(self, label: str, code_filename: str) -> Iterator[None]:
        if self.scorep is not None:
            with self.scorep.user.region(label):
                self.scorep.instrumenter.register()
                try:
                    yield
                finally:
                    self.scorep.instrumenter.unregister()
        elif self.measurement is not None:
            with self.measurement.cell(label, code_filename=code_filename):
                yield
        else:  # nothing measures this run
            yield

    def run_cell(self, payload: dict[str, Any]) -> None:
        shell = self.shell
        ns = shell.user_ns
        stamps = {"received": self.received_at}
        try:
            unpacked = transfer.unpack(payload["state"])
        except Exception as e:
            self.channel.send("state_received", {})
            message = (f"The notebook's variables could not be sent to the profiling process "
                       f"({type(e).__name__}: {e}); the cell did not run.")  # fmt: skip
            self.channel.send("error", {"ename": "NamespaceTransferError", "evalue": message,
                                        "traceback": [message]})  # fmt: skip
            self.channel.send("cell_done", {"status": "error", "ename": "NamespaceTransferError",
                                            "evalue": message, "traceback": [message],
                                            "interrupted": False, "state": None,
                                            "skipped": {}})  # fmt: skip
            return
        # The kernel may release its packet as soon as unpack returned.
        stamps["unpacked"] = time.monotonic()
        self.channel.send("state_received", {})
        transfer.apply_in_worker(ns, unpacked, self.sent_names)
        if payload.get("colors"):
            try:
                shell.colors = payload["colors"]
            except Exception:
                pass
        code = payload["code"]
        count = int(payload.get("execution_count") or shell.execution_count)
        shell.execution_count = count
        code_filename = cell_code_filename(shell, code, count)
        shell.last_error = None
        interrupted = False
        result = None
        stamps["applied"] = time.monotonic()
        modules_before = set(sys.modules)
        start = time.perf_counter()
        try:
            with self._region(payload.get("label") or f"cell [{count}]", code_filename):
                self.in_cell = True
                try:
                    if self.interrupt_pending:
                        raise KeyboardInterrupt
                    result = shell.run_cell(
                        code, store_history=True, cell_id=payload.get("cell_id")
                    )
                finally:
                    self.in_cell = False
        except KeyboardInterrupt:
            interrupted = True
        self.interrupt_pending = False
        wall = time.perf_counter() - start
        stamps["cell_end"] = time.monotonic()
        flush_streams()
        error = shell.last_error
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
            packet = transfer.pack(ns)
        finally:
            ns.pop(transfer.RESULT_NAME, None)
        self.pending_packet = packet
        self.sent_names = tuple(n for n in packet.names if n != transfer.RESULT_NAME)
        self.channel.send(
            "cell_done",
            {
                "status": "error" if error else "ok",
                "interrupted": interrupted,
                **(error or {}),
                "state": packet.header,
                "skipped": dict(packet.skipped),
                "wall_s": wall,
                "imported": _imported_since(modules_before),
                "stamps": {**stamps, "packed": time.monotonic()},
            },
        )
        if payload.get("last"):
            self.stop_measurement()

    def stop_measurement(self) -> None:
        """Stop measuring and build the Recording (or keep the error), with the figures the
        kernel shows. Called right after the run's last cell was sent back, so that this
        work overlaps with the kernel taking the namespace in; else by finish_run."""
        if self.measurement is None or self.stopped is not None:
            return
        begin = time.monotonic()
        try:
            recording = self.measurement.stop()
        except Exception as e:
            self.stopped = (None, {"measured": False, "error": f"{type(e).__name__}: {e}"})
            return
        stopped_at = time.monotonic()
        top = top_regions_or_empty(recording)
        self.stopped = (recording, {
            "measured": True,
            "events": recording.event_count,
            "top": top,
            "notes": dict(getattr(recording, "notes", {}) or {}),
            "stamps": {"stop_begin": begin, "stopped": stopped_at,
                       "summarized": time.monotonic()},
            "stop_timings": dict(getattr(self.measurement, "stop_timings", {}) or {}),
        })  # fmt: skip

    def finish_run(self) -> None:
        _writing_files.set()
        if self.measurement is None:
            self._tell("run_stopped", {"measured": self.scorep is not None})
            self._tell("files_done", {"status": "exit", "errors": []})
            return
        self.stop_measurement()
        assert self.stopped is not None
        recording, report = self.stopped
        report["stamps"] = {**report.get("stamps", {}), "received": self.received_at}
        self._tell("run_stopped", report)
        if recording is None:
            self._tell("files_done", {"status": "failed", "errors": [report["error"]]})
            return
        errors: list[str] = []
        status = "ready"
        try:
            self.measurement.write_files(recording, background=False)
        except Exception as e:
            status = "failed"
            errors.append(f"writing the experiment files failed: {type(e).__name__}: {e}")
        self._tell("files_done", {"status": status, "errors": errors})

    def _tell(self, kind: str, payload: dict[str, Any]) -> None:
        # After the run the kernel may be gone (shut down); the files are written anyway.
        try:
            self.channel.send(kind, payload)
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


_RELEASING = ("state_received", "cell", "finish_run", "shutdown")


_writing_files = threading.Event()


def _watch_parent(parent: int) -> None:
    # A worker must not outlive its kernel, even when the kernel was killed mid-cell; but
    # once the run is over it finishes writing the experiment, kernel or not.
    while True:
        time.sleep(1.0)
        if os.getppid() != parent and not _writing_files.is_set():
            os._exit(70)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--fd" not in argv:
        raise SystemExit("usage: python -m scorep_kernel.worker --fd N (started by the kernel)")
    fd = int(argv[argv.index("--fd") + 1])
    parent = int(os.environ.pop("SCOREP_KERNEL_PARENT_PID", "0") or 0) or os.getppid()
    sock = socket.socket(fileno=fd)
    channel = BlockingChannel(sock)
    faulthandler.enable(file=sys.__stderr__)
    sys.stdout = ForwardingStream("stdout", channel, 1)
    sys.stderr = ForwardingStream("stderr", channel, 2)
    start_flusher()
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    backend = argv[argv.index("--backend") + 1] if "--backend" in argv else "builtin"
    import getpass

    builtins.input = make_input(channel, password=False)
    getpass.getpass = make_input(channel, password=True)
    worker = Worker(channel, backend)
    signal.signal(signal.SIGINT, worker.on_sigint)
    try:
        worker.serve()
    finally:
        flush_streams()
        if worker.pending_packet is not None:
            worker.pending_packet.release()


if __name__ == "__main__":
    main()
