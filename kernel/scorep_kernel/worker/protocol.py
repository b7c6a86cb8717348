"""The messages between the kernel and its worker process, one typed definition each, and
their framing.

Each message is a frozen dataclass below, pickled whole and preceded by its length (8
bytes, big-endian). Both ends are our own code on one machine, connected by a private
``socket.socketpair()`` made per worker, so pickle is safe here and no file or pipe name
can clash between kernels. The namespace itself travels as the opaque header from
``state.pack`` inside a message (large buffers go through shared memory, not this socket).

The order of one run (the kernel's ``runs.subprocess_run`` and the worker's ``entry``)::

    worker: Ready                       (then Preloaded after each Preload)
    kernel: StartRun      worker: RunStarted
    kernel: Cell          worker: StateReceived, Stream/Display/... , CellDone
    kernel: StateReceived                                (once per cell)
    kernel: FinishRun     worker: RunStopped, FilesDone, exits

``stamps`` are the worker's ``time.monotonic()`` readings of its steps (CLOCK_MONOTONIC,
shared with the kernel on one host), so the kernel can tell its waiting apart from the
worker's work. Either end dispatches through a table keyed by message type (see
``dispatch``); a message with no handler is logged, never fatal.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import socket
import struct
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from scorep_kernel.measure.measure_config import MeasureConfig

log = logging.getLogger("scorep_kernel")

_LENGTH = struct.Struct(">Q")
# One message is a control record or a state header; anything bigger is a bug upstream.
MAX_MESSAGE = 1 << 34


class ChannelClosed(EOFError):
    """The other end went away (it exited, crashed, or closed the socket)."""


@dataclass(frozen=True)
class Message:
    """Base of every message; ``kind`` names it in logs."""

    @classmethod
    def kind(cls) -> str:
        return cls.__name__


# --- kernel -> worker ---------------------------------------------------------------


@dataclass(frozen=True)
class Preload(Message):
    """Import these modules ahead of the next cell (a spare worker)."""

    modules: list[str]


@dataclass(frozen=True)
class StartRun(Message):
    """Begin one measured run: ``measure`` is the run's measurement settings, built once
    by the kernel's settings (the builtin tracer's; under Score-P the worker reads
    ``imports_as_regions`` and ``instrumenter_file``; None: the builtin tracer is not
    started), ``env`` the variables the run sets in the worker (its experiment dir).
    MeasureConfig's module loads without the tracer (measure/__init__.py)."""

    exp_dir: str
    measure: MeasureConfig | None
    env: dict[str, str]


@dataclass(frozen=True)
class Cell(Message):
    """Run one cell: ``state`` is the kernel's namespace (``state.pack``'s header);
    ``last`` says the run ends with this cell (the worker stops measuring right after)."""

    code: str
    label: str
    execution_count: int
    cell_id: str | None
    state: bytes
    colors: str | None
    last: bool


@dataclass(frozen=True)
class InputReply(Message):
    """The answer to the cell's ``input()``: ``value``, or ``error`` when there is none."""

    value: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class StateReceived(Message):
    """Sent by either side: the receiver has unpacked the state; the sender may release
    its packet."""


@dataclass(frozen=True)
class FinishRun(Message):
    """Stop measuring, write the files, exit (an MPI rank the kernel keeps up for the next
    cell, ``keep``, stays and serves the next run instead)."""

    keep: bool = False


@dataclass(frozen=True)
class Shutdown(Message):
    """Exit without finishing a run (a spare that is no longer wanted)."""


# --- worker -> kernel ---------------------------------------------------------------


@dataclass(frozen=True)
class Ready(Message):
    """The worker is up: ``measure`` says whether its backend can measure (``message``
    says why not), ``backend`` which one it runs ("scorep" | "builtin")."""

    pid: int
    measure: bool
    message: str
    backend: str


@dataclass(frozen=True)
class Preloaded(Message):
    modules: list[str]
    failed: list[str]


@dataclass(frozen=True)
class RunStarted(Message):
    measured: bool
    error: str | None = None
    stamps: dict[str, float] = field(default_factory=dict)  # received, started


@dataclass(frozen=True)
class ImportStarted(Message):
    """The cell began importing this top-level package (see worker/import_watch.py)."""

    module: str


@dataclass(frozen=True)
class InputRequest(Message):
    """The cell called ``input()`` / ``getpass()``."""

    prompt: str
    password: bool


@dataclass(frozen=True)
class Stream(Message):
    name: str  # "stdout" | "stderr"
    text: str


@dataclass(frozen=True)
class Display(Message):
    data: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)
    transient: dict[str, Any] = field(default_factory=dict)
    update: bool = False


@dataclass(frozen=True)
class ExecuteResult(Message):
    execution_count: int
    data: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClearOutput(Message):
    wait: bool = False


@dataclass(frozen=True)
class Error(Message):
    """A traceback to show (the cell raised, or could not run)."""

    ename: str
    evalue: str
    traceback: list[str]


@dataclass(frozen=True)
class CellDone(Message):
    """The cell ended. ``state`` is the worker's namespace (None when the cell never ran,
    e.g. the kernel's state could not be unpacked); ``skipped`` names what could not travel
    back and why; ``imported`` the modules the cell imported, in order."""

    status: str  # "ok" | "error"
    interrupted: bool
    state: bytes | None
    ename: str = ""
    evalue: str = ""
    traceback: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    wall_s: float | None = None
    imported: list[str] = field(default_factory=list)
    # received, unpacked, applied, cell_end, packed
    stamps: dict[str, float] = field(default_factory=dict)
    # execute_reply payloads (the pager's text for `zip?`, `set_next_input`), in order
    payload: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class RunStopped(Message):
    """Measurement stopped: what the display shows at once (events, top regions) and the
    tracer's notes for the manifest."""

    measured: bool
    events: int | None = None
    top: list[tuple[str, float]] = field(default_factory=list)
    # exclusive time of every region on every thread (s): what the shares of ``top`` are of
    measured_s: float | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    # received, stop_begin, stopped, summarized
    stamps: dict[str, float] = field(default_factory=dict)
    stop_timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class FilesDone(Message):
    """How writing the experiment's files ended: "ready" | "failed", or "exit" when the
    worker measured nothing itself (Score-P writes its files as the process exits)."""

    status: str
    errors: list[str] = field(default_factory=list)


# --- MPI ranks (mpi.run <-> mpi.rank) -----------------------------------------
#
# A rank of an MPI cell connects back over TCP (a socketpair does not cross the launcher)
# and proves itself with the run's token before any message is read (mpi.rank_pool); then
# the order is: RankHello, Ready, and per cell RankSetup before each Cell; ClockProbe /
# ClockReply any time (answered by the rank's reader thread, also while a cell runs), and
# InterruptCell while a cell runs.


@dataclass(frozen=True)
class RankHello(Message):
    """A rank is up: who and where it is. ``boot_id`` tells hosts apart (two ranks with
    one boot id share CLOCK_MONOTONIC and memory); ``mpi`` is the MPI library's version
    when mpi4py initialised MPI in the rank ("" without mpi4py)."""

    rank: int
    size: int
    pid: int
    hostname: str
    boot_id: str
    mpi: str


@dataclass(frozen=True)
class RankSetup(Message):
    """Before each cell: the names whose value every rank sends back (rank 0 sends its
    whole namespace), and whether the namespace travels inside the messages (``in_band``:
    some rank runs on another host, where shared memory cannot reach)."""

    gather: list[str]
    in_band: bool


@dataclass(frozen=True)
class ClockProbe(Message):
    """The kernel asks for the rank's clock (time.perf_counter_ns) to align the ranks'
    recordings (Cristian's method: the reply with the shortest round trip wins)."""

    seq: int


@dataclass(frozen=True)
class ClockReply(Message):
    seq: int
    t_ns: int


@dataclass(frozen=True)
class SampleNode(Message):
    """To the first rank on a host other than the kernel's, before StartRun: sample this
    host's system and the process trees of its ranks (rank -> pid) every ``interval_s``
    until the run ends, then send NodeSamples (mpi/metrics.py)."""

    ranks: dict[str, int]
    interval_s: float


@dataclass(frozen=True)
class NodeSamples(Message):
    """A host's samples (a pickled MetricSamples, times on the rank's perf_counter clock),
    sent before the rank's RunStopped."""

    host: str
    samples: bytes


@dataclass(frozen=True)
class InterruptCell(Message):
    """The user interrupted: the rank's cell gets a KeyboardInterrupt (a message, not a
    signal: the kernel cannot signal a rank on another host)."""


# --- the spare template (worker.template, kernel side worker.forking) ----------------------
#
# A template for the builtin backend runs no cells: it takes Preload like a spare, and for
# each Fork (its socket and pipes come along on a side socket, SCM_RIGHTS) it forks a child
# that becomes an ordinary worker (then: Ready ... on the child's own socket).


@dataclass(frozen=True)
class Fork(Message):
    """Fork a worker: it runs in ``cwd`` with ``env`` as its os.environ."""

    cwd: str
    env: dict[str, str]


@dataclass(frozen=True)
class Forked(Message):
    pid: int


@dataclass(frozen=True)
class Exited(Message):
    """A forked worker ended; ``returncode`` as Popen has it (negative: the signal)."""

    pid: int
    returncode: int


KERNEL_TO_WORKER: tuple[type[Message], ...] = (
    Preload,
    StartRun,
    Cell,
    InputReply,
    StateReceived,
    FinishRun,
    Shutdown,
    RankSetup,
    ClockProbe,
    InterruptCell,
    SampleNode,
    Fork,
)
WORKER_TO_KERNEL: tuple[type[Message], ...] = (
    Ready,
    Preloaded,
    RunStarted,
    ImportStarted,
    InputRequest,
    StateReceived,
    Stream,
    Display,
    ExecuteResult,
    ClearOutput,
    Error,
    CellDone,
    RunStopped,
    FilesDone,
    RankHello,
    ClockReply,
    NodeSamples,
    Forked,
    Exited,
)

M = TypeVar("M", bound=Message)


def encode(message: Message) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(body)) + body


def decode(body: bytes) -> Message:
    message = pickle.loads(body)
    if not isinstance(message, Message):
        raise ChannelClosed(f"not a protocol message: {type(message).__name__}")
    return message


def dispatch(
    message: Message, handlers: Mapping[type[Message], Callable[[Any], Any]], where: str
) -> Any:
    """Call the handler for the message's type; a message nobody handles is logged (a
    newer peer, or a bug) and dropped."""
    handler = handlers.get(type(message))
    if handler is None:
        log.warning("%s: no handler for a %s message; ignored", where, message.kind())
        return None
    return handler(message)


class BlockingChannel:
    """The worker's end: blocking sends from any thread, receives from the main thread."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._send_lock = threading.Lock()

    def send(self, message: Message) -> None:
        data = encode(message)
        with self._send_lock:
            self.sock.sendall(data)

    def _recv_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ChannelClosed("the kernel closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def recv(self) -> Message:
        (length,) = _LENGTH.unpack(self._recv_exactly(_LENGTH.size))
        if length > MAX_MESSAGE:
            raise ChannelClosed(f"message of {length} bytes: the stream is out of step")
        return decode(self._recv_exactly(length))


class AsyncChannel:
    """The kernel's end, on the kernel's asyncio loop (the shell keeps answering while a
    cell runs in the worker)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, sock: socket.socket) -> AsyncChannel:
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=1 << 20)
        return cls(reader, writer)

    async def send(self, message: Message) -> None:
        self.writer.write(encode(message))
        try:
            await self.writer.drain()
        except (ConnectionError, OSError) as e:
            raise ChannelClosed(str(e)) from None

    async def recv(self) -> Message:
        try:
            head = await self.reader.readexactly(_LENGTH.size)
            (length,) = _LENGTH.unpack(head)
            if length > MAX_MESSAGE:
                raise ChannelClosed(f"message of {length} bytes: the stream is out of step")
            body = await self.reader.readexactly(length)
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as e:
            raise ChannelClosed(str(e) or "the worker closed the connection") from None
        return decode(body)

    def close(self) -> None:
        try:
            self.writer.close()
        except Exception:  # the loop may already be gone at kernel shutdown
            pass
