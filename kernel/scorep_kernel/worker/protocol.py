"""Message framing between the kernel and its worker process.

Each message is one pickled tuple ``(kind, payload)`` preceded by its length (8 bytes,
big-endian). Both ends are our own code on one machine, connected by a private
``socket.socketpair()`` made per worker, so pickle is safe here and no file or pipe name
can clash between kernels. The namespace itself travels as the opaque header from
``state.pack`` inside a payload (large buffers go through shared memory, not this socket).

Kinds, kernel -> worker:
    preload        {"modules": [names]}            import ahead of the next cell
    start_run      {"exp_dir", "measure", "env"}   begin one measured run
    cell           {"code", "label", "execution_count", "cell_id", "state", "colors", "last"}
    input_reply    {"value"} or {"error"}          answer to the cell's input()
    state_received {}                              the worker may release its state packet
    finish_run     {}                              stop measuring, write the files, exit
    shutdown       {}
Kinds, worker -> kernel:
    ready          {"pid", "measure", "message", "backend"}
    run_started    {"error", "measured", "stamps"}
    input_request  {"prompt", "password"}          the cell called input() / getpass()
    state_received {}                              the kernel may release its state packet
    stream         {"name", "text"}
    display        {"data", "metadata", "transient", "update"}
    execute_result {"execution_count", "data", "metadata"}
    clear_output   {"wait"}
    error          {"ename", "evalue", "traceback"}
    cell_done      {"status", "ename", "evalue", "traceback", "state", "skipped",
                    "interrupted", "wall_s", "imported", "stamps"}
    run_stopped    {"measured", "events", "top", "notes", "error", "stamps", "stop_timings"}
    files_done     {"status", "errors"}
    preloaded      {"modules", "failed"}
"stamps" are the worker's time.monotonic() readings of its steps (see worker.Worker).
"""

from __future__ import annotations

import asyncio
import pickle
import socket
import struct
import threading
from typing import Any

_LENGTH = struct.Struct(">Q")
# One message is a control record or a state header; anything bigger is a bug upstream.
MAX_MESSAGE = 1 << 34


class ChannelClosed(EOFError):
    """The other end went away (it exited, crashed, or closed the socket)."""


def encode(kind: str, payload: dict[str, Any] | None = None) -> bytes:
    body = pickle.dumps((kind, payload or {}), protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(body)) + body


def decode(body: bytes) -> tuple[str, dict[str, Any]]:
    kind, payload = pickle.loads(body)
    return kind, payload


class BlockingChannel:
    """The worker's end: blocking sends from any thread, receives from the main thread."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._send_lock = threading.Lock()

    def send(self, kind: str, payload: dict[str, Any] | None = None) -> None:
        data = encode(kind, payload)
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

    def recv(self) -> tuple[str, dict[str, Any]]:
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

    async def send(self, kind: str, payload: dict[str, Any] | None = None) -> None:
        self.writer.write(encode(kind, payload))
        try:
            await self.writer.drain()
        except (ConnectionError, OSError) as e:
            raise ChannelClosed(str(e)) from None

    async def recv(self) -> tuple[str, dict[str, Any]]:
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
