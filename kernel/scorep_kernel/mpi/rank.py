"""One rank of an MPI cell: a worker (``worker.entry``) that its MPI launcher started.

Started by ``mpi.run`` through the launcher as

    <launcher> -n N ... python -m scorep_kernel.mpi.rank               (builtin)
    <launcher> -n N ... python -m scorep --mpp=mpi ... <this file> --backend scorep

A socketpair does not cross the launcher, so the rank connects back over TCP to the
address in ``SCOREP_KERNEL_MPI_ADDRESS`` and proves itself with the run's token
(``SCOREP_KERNEL_MPI_TOKEN``, 32 random bytes, hex; both variables are removed from the
rank's environment at once, so the cell never sees them). Before connecting it imports
mpi4py when it can (MPI_Init: the rank then knows its rank for sure, Score-P's MPI adapter
has its communicator, and the cell's own ``from mpi4py import MPI`` is free); without
mpi4py the rank comes from the launcher's environment (Open MPI, PMI, Slurm).

Then it is the subprocess worker with these differences:

- a reader thread takes the kernel's messages as they come: ClockProbe is answered at once
  (also while a cell runs), InterruptCell raises KeyboardInterrupt in the cell, a lost
  connection ends the rank (unless it is writing its files);
- the namespace's process state leaves the rank's launcher and MPI environment alone
  (``ENVIRON_IGNORE``): each rank keeps its own OMPI_COMM_WORLD_RANK, and nothing of it
  reaches the kernel;
- after a cell rank 0 sends its whole namespace back and the others only the gathered
  names (``RankSetup``); mpi4py's module and objects never travel (the kernel must not
  initialise MPI); with ``in_band`` (some rank on another host) arrays travel inside the
  messages instead of through shared memory;
- under the builtin tracer, mpi4py's calls are recorded (``measure.mpi_calls``), the
  system is not sampled here (the kernel samples the node once, ``mpi.metrics``), and at
  the run's end the rank pickles its Recording into ``<experiment>/.ranks/rank<r>.pkl``
  for the kernel's merge (``mpi.merge``) instead of writing OTF2 and CUBE4 itself;
- ``input()`` raises: N ranks cannot all ask the notebook;
- a rank the kernel keeps up (``FinishRun(keep=True)``, builtin backend) writes its
  recording and then serves the next run with its namespace as it was; ``Shutdown`` ends
  it (MPI_Finalize through mpi4py, then exit).
"""

from __future__ import annotations

import builtins
import faulthandler
import os
import pickle
import queue
import signal
import socket
import sys
import threading
import time
from typing import Any

if __package__ in (None, ""):  # run as a script by `python -m scorep <file>`
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from scorep_kernel import state
from scorep_kernel.mpi.common import (
    ENV_ADDRESS,
    ENV_TOKEN,
    ENVIRON_IGNORE,
    HANDSHAKE,
    NO_OUT_OF_BAND,
    boot_id,
    rank_file,
)
from scorep_kernel.state import Packet, transfer
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.entry import Worker
from scorep_kernel.worker.protocol import BlockingChannel, ChannelClosed
from scorep_kernel.worker.shell import ForwardingStream, flush_streams, start_flusher

CONNECT_TIMEOUT_S = 60.0
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID",
                  "MV2_COMM_WORLD_RANK")  # fmt: skip
SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "MV2_COMM_WORLD_SIZE")


def _from_environ(names: tuple[str, ...]) -> int | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


def init_mpi(backend: str) -> tuple[int, int, str]:
    """(rank, size, MPI library version or "") with MPI initialised through mpi4py when it
    is installed. Under Score-P with MPI_THREAD_FUNNELED: the rank's own threads never call
    MPI, and Score-P 8.4 warns that MULTIPLE is experimental."""
    try:
        import mpi4py
    except ImportError:
        if backend == "scorep":
            raise SystemExit(
                "Score-P measures MPI cells through MPI: install mpi4py for this Python "
                f"({sys.executable} -m pip install mpi4py)"
            ) from None
        rank, size = _from_environ(RANK_VARIABLES), _from_environ(SIZE_VARIABLES)
        if rank is None or size is None:
            raise SystemExit(
                "this rank cannot tell its rank: the launcher set none of "
                f"{', '.join(RANK_VARIABLES)}, and mpi4py is not installed"
            ) from None
        return rank, size, ""
    if backend == "scorep":
        mpi4py.rc.thread_level = "funneled"
    from mpi4py import MPI

    version = MPI.Get_library_version().strip().splitlines()[0]
    return MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size(), version


def connect(address: str, token: bytes) -> socket.socket:
    host, _, port = address.rpartition(":")
    sock = socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S)
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(HANDSHAKE + token)
    return sock


_finishing = threading.Event()  # the run is over: the kernel may go, the files are written


class RankChannel(BlockingChannel):
    """The rank's end: a reader thread takes every message as it arrives (see the module
    docstring); the worker's ``recv`` gets the rest in order."""

    def __init__(self, sock: socket.socket):
        super().__init__(sock)
        self._inbox: queue.SimpleQueue[msg.Message | None] = queue.SimpleQueue()
        self._reader = threading.Thread(target=self._read, name="scorep-rank-reader", daemon=True)

    def start(self) -> None:
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                message = BlockingChannel.recv(self)
            except (ChannelClosed, OSError):
                self._inbox.put(None)
                if not _finishing.is_set():
                    # The kernel is gone (killed, or it stopped the run): nobody waits for
                    # this rank, and MPI_Finalize could wait for ranks that are gone.
                    os._exit(70)
                return
            if isinstance(message, msg.ClockProbe):
                try:
                    self.send(msg.ClockReply(message.seq, time.perf_counter_ns()))
                except OSError:
                    pass
            elif isinstance(message, msg.InterruptCell):
                os.kill(os.getpid(), signal.SIGINT)
            else:
                self._inbox.put(message)

    def recv(self) -> msg.Message:
        message = self._inbox.get()
        if message is None:
            self._inbox.put(None)
            raise ChannelClosed("the kernel closed the connection")
        return message


class RankWorker(Worker):
    def __init__(self, channel: RankChannel, backend: str, instrument: bool, rank: int):
        if backend != "scorep":
            # The node is sampled once, from outside (mpi.metrics); the session's sampler
            # thread still ticks, for the event cap.
            from scorep_kernel.measure import session

            session.MetricSampler = _CapTicker  # type: ignore[misc]
        super().__init__(channel, backend, instrument)
        if self.scorep is not None:  # Score-P finalizes in MPI_Finalize, with every rank
            self.scorep.finalize_after_last_cell = False
        self.rank = rank
        self.gather: list[str] = []
        self.in_band = True
        self.mpi_calls: Any = None  # measure.mpi_calls.Recorder while the run measures
        self.node_sampler: Any = None  # mpi.metrics.NodeSampler on a remote host's first rank

    def handlers(self) -> dict[type[msg.Message], Any]:
        return {**super().handlers(), msg.RankSetup: self.setup, msg.SampleNode: self.sample}

    def sample(self, request: msg.SampleNode) -> None:
        """Sample this host for the kernel (it is not the kernel's): mpi.metrics."""
        from scorep_kernel.mpi.metrics import NodeSampler

        ranks = {int(r): pid for r, pid in request.ranks.items()}
        try:
            self.node_sampler = NodeSampler(request.interval_s, os.getpid(), ranks)
            self.node_sampler.start()
        except Exception:
            self.node_sampler = None

    def send_node_samples(self) -> None:
        sampler, self.node_sampler = self.node_sampler, None
        if sampler is None:
            return
        try:
            samples = sampler.stop()
            self._tell(msg.NodeSamples(socket.gethostname(), pickle.dumps(samples)))
        except Exception:
            pass

    def setup(self, setup: msg.RankSetup) -> None:
        self.gather, self.in_band = list(setup.gather), setup.in_band

    def start_run(self, start: msg.StartRun) -> None:
        super().start_run(start)
        if self.measurement is not None:
            from scorep_kernel.measure import mpi_calls

            self.mpi_calls = mpi_calls.install(self.measurement)

    def apply_state(self, namespace: dict[str, Any], unpacked: Any) -> None:
        state.apply(
            namespace,
            unpacked,
            previous_names=self.sent_names,
            bind_placeholders=True,
            placeholder_where="kernel",
            environ_ignore=ENVIRON_IGNORE,
            keep_paths=transfer.KEEP_PATHS,
        )

    def pack_state(self, namespace: dict[str, Any]) -> Packet:
        from scorep_kernel.measure.mpi_calls import is_mpi_value

        oob = NO_OUT_OF_BAND if self.in_band else state.OUT_OF_BAND_MIN
        if self.rank == 0:
            skip = [n for n, v in list(namespace.items()) if is_mpi_value(v)]
            return state.pack(namespace, skip=skip, out_of_band_min=oob)
        wanted = set(self.gather)
        skip = [n for n, v in list(namespace.items()) if n not in wanted or is_mpi_value(v)]
        return state.pack(namespace, process_state=False, skip=skip, out_of_band_min=oob)

    def stop_measurement(self) -> None:
        if self.measurement is None or self.stopped is not None:
            return
        from scorep_kernel.measure import mpi_calls

        recorder = mpi_calls.stop()
        super().stop_measurement()
        to_perf = self.measurement.to_perf
        self.mpi_calls = (
            recorder.result(self.rank, to_perf)
            if recorder is not None and to_perf is not None
            else None
        )

    def finish_run(self) -> None:
        _finishing.set()
        self.send_node_samples()
        # Score-P writes its files as the processes end (no measurement here); the
        # builtin's recording is this rank's file, merged by the kernel (write_recording)
        super().finish_run()

    def run_over(self) -> None:
        super().run_over()
        self.mpi_calls = None
        _finishing.clear()  # a lost kernel ends this rank again

    def write_recording(self, recording: Any) -> msg.FilesDone:
        assert self.measurement is not None
        path = rank_file(self.measurement.exp_dir, self.rank)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            with open(tmp, "wb") as f:
                pickle.dump(
                    {"rank": self.rank, "recording": recording, "mpi": self.mpi_calls},
                    f,
                    protocol=pickle.HIGHEST_PROTOCOL,
                )
            os.replace(tmp, path)
        except Exception as e:
            return msg.FilesDone("failed", [f"rank {self.rank}: {type(e).__name__}: {e}"])
        return msg.FilesDone("ready")


def _ticker_class() -> Any:
    from scorep_kernel.formats.recording import MetricSamples
    from scorep_kernel.measure.sampler import MetricSampler

    class CapTicker(MetricSampler):
        """The session's sampler thread without sampling: it only calls on_tick."""

        def _prepare(self) -> None:
            self.series = []

        def sample(self) -> None:
            pass

        def stop(self) -> MetricSamples:
            self._stop.set()
            if self._thread is not None:
                self._thread.join()
            import numpy as np

            return MetricSamples([], np.zeros(0, np.int64), np.zeros((0, 0)), self.interval_s)

    return CapTicker


_CapTicker = _ticker_class()


def _no_input(*args: Any, **kwargs: Any) -> str:
    from IPython.core.error import StdinNotImplementedError

    raise StdinNotImplementedError(
        "input() is not available in an MPI cell: N ranks cannot all ask the notebook. "
        "Ask in an ordinary cell and use the variable here."
    )


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    backend = argv[argv.index("--backend") + 1] if "--backend" in argv else "builtin"
    instrument = "--no-python-instrumenter" not in argv
    address = os.environ.pop(ENV_ADDRESS, "")
    token_hex = os.environ.pop(ENV_TOKEN, "")
    if not address or not token_hex:
        raise SystemExit(
            "usage: started by the Score-P kernel through an MPI launcher (the run's address "
            "and token are missing)"
        )
    assert sys.__stderr__ is not None
    faulthandler.enable(file=sys.__stderr__)
    rank, size, version = init_mpi(backend)
    sock = connect(address, bytes.fromhex(token_hex))
    channel = RankChannel(sock)
    channel.send(msg.RankHello(rank, size, os.getpid(), socket.gethostname(), boot_id(), version))
    channel.start()
    sys.stdout = ForwardingStream("stdout", channel, 1)
    sys.stderr = ForwardingStream("stderr", channel, 2)
    start_flusher()
    import getpass

    builtins.input = _no_input
    getpass.getpass = _no_input
    worker = RankWorker(channel, backend, instrument, rank)
    signal.signal(signal.SIGINT, worker.on_sigint)
    try:
        worker.serve()
    except OSError:
        pass
    finally:
        flush_streams()
        if worker.pending_packet is not None:
            worker.pending_packet.release()
    _finishing.set()


if __name__ == "__main__":
    main()
