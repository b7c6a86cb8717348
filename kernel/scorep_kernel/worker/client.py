"""The kernel's side of a worker process: start it, talk to it, interrupt it, bury it.

The spare worker and its template are kept by ``worker.pool``.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psutil

from scorep_kernel.binding_args import without_instrumenter_file
from scorep_kernel.experiment import MANIFEST
from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.protocol import AsyncChannel, ChannelClosed

log = logging.getLogger("scorep_kernel")
M = TypeVar("M", bound=msg.Message)

WORKER_FILE = str(Path(__file__).with_name("entry.py"))
_KERNEL_DIR = str(Path(__file__).resolve().parents[2])


class NativePipes:
    """A child's piped stdout and stderr, read on the event loop as they come: ``on_text``
    gets ("stdout" | "stderr", decoded text) per chunk of up to 64 KiB, straight from the
    read (no buffer between the pipe and ``on_text``). ``drain()`` reads what the pipes
    hold now, at once: what the child wrote before a message it then sent on its socket
    (a Score-P bindings' error line on fd 2, then CellDone) is delivered before that
    message is handled, whichever of the two the loop saw first. ``done``: one future a
    pipe, set at its end (await them to let the last output arrive)."""

    def __init__(self, proc: Any, on_text: Callable[[str, str], None]):
        self._loop = asyncio.get_running_loop()
        self._on_text = on_text
        self._pipes: dict[str, tuple[Any, asyncio.Future[None]]] = {}
        self._decoders: dict[str, codecs.IncrementalDecoder] = {}
        for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            assert pipe is not None, "the child is started with stdout and stderr piped"
            os.set_blocking(pipe.fileno(), False)
            self._pipes[name] = (pipe, self._loop.create_future())
            self._decoders[name] = codecs.getincrementaldecoder("utf-8")(errors="replace")
            self._loop.add_reader(pipe.fileno(), self._read, name)

    @property
    def done(self) -> list[asyncio.Future[None]]:
        return [end for _pipe, end in self._pipes.values()]

    def _read(self, name: str) -> bool:
        """One read; False when the pipe had nothing now or has ended."""
        pipe, end = self._pipes[name]
        if end.done():
            return False
        try:
            data = os.read(pipe.fileno(), 65536)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if not data:
            self._loop.remove_reader(pipe.fileno())
            pipe.close()
            rest = self._decoders[name].decode(b"", final=True)
            if rest:
                self._on_text(name, rest)
            end.set_result(None)
            return False
        text = self._decoders[name].decode(data)
        if text:
            self._on_text(name, text)
        return True

    def drain(self) -> None:
        for name in self._pipes:
            for _ in range(64):  # 4 MiB at most at once; the loop reads on after
                if not self._read(name):
                    break


def read_pipes(proc: Any, on_text: Callable[[str, str], None]) -> NativePipes:
    """Read a child's piped stdout and stderr on the event loop (see NativePipes)."""
    return NativePipes(proc, on_text)


@dataclass(frozen=True)
class WorkerKey:
    backend: str  # "scorep" | "builtin"
    env: tuple[tuple[str, str], ...]  # SCOREP_* set by the user (fixed at Score-P's start)
    binding_args: tuple[str, ...]
    python: str = sys.executable
    exp_parent: str = ""  # Score-P only: where its experiment directory will be

    def command(self, fd: int) -> list[str]:
        if self.backend == "scorep":
            return [self.python, "-m", "scorep", *scorep_arguments(self.binding_args),
                    WORKER_FILE, "--fd", str(fd), "--backend", "scorep",
                    *([] if python_instrumented(self.binding_args)
                      else ["--no-python-instrumenter"])]  # fmt: skip
        return [self.python, "-m", "scorep_kernel.worker", "--fd", str(fd)]


_NO_INSTRUMENTER = ("--noinstrumenter", "--nopython")


def python_instrumented(binding_args: tuple[str, ...] | list[str]) -> bool:
    """Whether the user wants Python functions traced (not ``--noinstrumenter``)."""
    return not any(arg in _NO_INSTRUMENTER for arg in binding_args)


def scorep_arguments(binding_args: tuple[str, ...] | list[str]) -> list[str]:
    """``python -m scorep``'s options for a worker: the user's, with the instrumenter left
    off at start (the worker turns it on around each cell's statements, see
    worker.scorep_session) and thread support on unless the user chose a --thread model
    (the worker has threads of its own; without it Score-P aborts on the first one).
    ``--instrumenter-file`` the worker runs itself, with the notebook's folder on sys.path
    (scorep_kernel.binding_args)."""
    args = [a for a in without_instrumenter_file(binding_args) if a not in _NO_INSTRUMENTER]
    if not any(a == "--thread" or a.startswith("--thread=") for a in args):
        args.insert(0, "--thread=pthread")
    return ["--noinstrumenter", *args]


def worker_env(env: dict[str, str], reserved: tuple[str, Path] | None = None) -> dict[str, str]:
    """A worker's environment: ``env`` and what the worker needs of the kernel."""
    env = dict(env)
    env["SCOREP_KERNEL_PARENT_PID"] = str(os.getpid())
    # The worker imports scorep_kernel from wherever the kernel did.
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if _KERNEL_DIR not in paths:
        env["PYTHONPATH"] = os.pathsep.join([_KERNEL_DIR, *paths])
    env.setdefault("PYTHONUNBUFFERED", "1")
    if reserved is not None:
        env["SCOREP_EXPERIMENT_DIRECTORY"] = str(reserved[1])
    return env


class WorkerProcess:
    """One worker. ``recv`` yields its messages; output the worker's native code writes to
    file descriptors 1 and 2 arrives through ``on_native_output`` (stream name, text)."""

    def __init__(self, key: WorkerKey, proc: Any, channel: AsyncChannel):
        # proc: a subprocess.Popen, or a ForkedProc (worker.forking) with what it uses of one
        self.key = key
        self.proc = proc
        self.channel = channel
        self.ready: msg.Ready | None = None
        self.on_native_output: Callable[[str, str], None] | None = None
        self.paused = False
        self.stderr_tail: deque[str] = deque(maxlen=20)
        # Score-P's own messages ("[Score-P] ..."), wherever they came in the output
        self.scorep_lines: deque[str] = deque(maxlen=50)
        self.preloaded: set[str] = set()
        self._pipes: NativePipes | None = None
        self._inbox: asyncio.Queue[msg.Message | None] = asyncio.Queue()
        self._reader_task: asyncio.Task | None = None
        # (id, path) of the experiment this process will write (fixed at start for Score-P)
        self.reserved: tuple[str, Path] | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    @classmethod
    async def spawn(
        cls, key: WorkerKey, env: dict[str, str], cwd: str, reserved: tuple[str, Path] | None = None
    ) -> WorkerProcess:
        if key.backend == "scorep":  # the bindings' first pass, once per kernel
            from scorep_kernel.worker import scorep_first_pass

            args = scorep_arguments(key.binding_args)
            first = await scorep_first_pass.prepared(key.python, args, env)
            if first is not None:
                env = first.apply(env)
        kernel_end, worker_end = socket.socketpair()
        try:
            # A plain Popen (a fork and exec, milliseconds): the loop's child watcher is
            # not needed, and wait_exit polls.
            proc = subprocess.Popen(  # noqa: ASYNC220
                key.command(worker_end.fileno()),
                pass_fds=(worker_end.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=worker_env(env, reserved),
                cwd=cwd,
                # Its own session: Jupyter's interrupt (SIGINT to the kernel's process
                # group) must reach the worker only through the kernel, and only mid-cell.
                start_new_session=True,
            )
        finally:
            worker_end.close()
        return await cls.attach(key, proc, kernel_end, reserved)

    @classmethod
    async def attach(
        cls,
        key: WorkerKey,
        proc: Any,
        kernel_end: socket.socket,
        reserved: tuple[str, Path] | None = None,
    ) -> WorkerProcess:
        """A started process (a Popen, or worker.forking's ForkedProc) and the kernel's end
        of its socket: its messages and native output are read from now on."""
        kernel_end.setblocking(False)
        channel = await AsyncChannel.open(kernel_end)
        worker = cls(key, proc, channel)
        worker.reserved = reserved
        worker._start_pipes()
        worker._reader_task = asyncio.ensure_future(worker._read_messages())
        return worker

    def _start_pipes(self) -> None:
        self._pipes = read_pipes(self.proc, self._on_pipe_text)

    def drain_native(self) -> None:
        """Deliver the native output the worker wrote until now (see NativePipes)."""
        if self._pipes is not None:
            self._pipes.drain()

    def _on_pipe_text(self, name: str, text: str) -> None:
        if name == "stderr":
            lines = text.splitlines()
            self.stderr_tail.extend(lines[-20:])
            self.scorep_lines.extend(line for line in lines if "[Score-P]" in line)
        if self.on_native_output is not None:
            self.on_native_output(name, text)
        else:
            log.debug("worker %s %s: %s", self.pid, name, text.rstrip())

    async def _read_messages(self) -> None:
        while True:
            try:
                message = await self.channel.recv()
            except ChannelClosed:
                await self._inbox.put(None)
                return
            await self._inbox.put(message)

    async def recv(self) -> msg.Message:
        """The next message; ChannelClosed once the worker is gone."""
        message = await self._inbox.get()
        if message is None:
            await self._inbox.put(None)  # later calls see the end too
            raise ChannelClosed("the worker closed the connection")
        return message

    async def recv_until(self, kind: type[M], timeout: float | None = None) -> M:
        """Skip to the next message of type ``kind`` (other messages are logged)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - loop.time())
            got = await asyncio.wait_for(self.recv(), left)
            if isinstance(got, kind):
                return got
            log.debug("worker %s: %s while waiting for %s", self.pid, got.kind(), kind.kind())

    async def wait_ready(self, timeout: float = 120.0) -> msg.Ready:
        if self.ready is None:
            self.ready = await self.recv_until(msg.Ready, timeout)
        return self.ready

    async def send(self, message: msg.Message) -> None:
        await self.channel.send(message)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def running(self) -> bool:
        """alive(), and its process still there: a worker forked by the template and
        killed is reaped by the template at once, while its exit report may still be on
        its way to the kernel (``alive()`` says True until then)."""
        if not self.alive():
            return False
        try:
            stat = Path(f"/proc/{self.proc.pid}/stat").read_text()
        except OSError:
            return False
        return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")

    def interrupt(self) -> None:
        self._signal(signal.SIGINT)

    def pause(self) -> None:
        """Stop the process (and what it started, e.g. Score-P's compiler) until resume():
        a spare must not take CPU from the cell the kernel runs. If the kernel dies while
        it is stopped, the kernel's death continues it (PR_SET_PDEATHSIG, see entry.py) and
        it ends itself; so only a worker that said Ready (it set that up first) is paused:
        its start (~0.5 s of CPU) runs through, its preloading does not."""
        if not self.paused and self.ready is not None and self.alive():
            self._signal_group(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.paused:
            self.paused = False
            self._signal_group(signal.SIGCONT)

    def _signal_group(self, signum: int) -> None:
        # The worker itself, and its own session's process group (its children, e.g.
        # Score-P's compiler); the group exists only once the child has called setsid().
        for send in (os.kill, os.killpg):
            try:
                send(self.proc.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def usage(self) -> tuple[int, float] | None:
        """(resident bytes, CPU seconds) of the worker and its children; None once gone."""
        try:
            proc = psutil.Process(self.proc.pid)
            procs = [proc, *proc.children(recursive=True)]
            rss = sum(p.memory_info().rss for p in procs)
            cpu = sum(sum(p.cpu_times()[:2]) for p in procs)
        except psutil.Error:
            return None
        return rss, cpu

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        if self.alive():
            try:
                os.kill(self.proc.pid, signum)
            except ProcessLookupError:  # it died between the check and the signal
                pass

    async def wait_exit(self, timeout: float = 10.0) -> int | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.proc.poll() is None and loop.time() < deadline:  # noqa: ASYNC110 (a Popen)
            await asyncio.sleep(0.02)
        for task in self._pipes.done if self._pipes is not None else []:
            # let the last native output arrive
            try:
                await asyncio.wait_for(asyncio.shield(task), 0.5)
            except Exception:  # timed out, or the reader failed: nothing more to wait for
                pass
        return self.proc.poll()

    async def close(self, graceful: bool = True) -> None:
        self.resume()
        if graceful and self.alive():
            try:
                await self.send(msg.Shutdown())
            except ChannelClosed:
                pass
            if await self.wait_exit(2.0) is None:
                self.kill()
        else:
            self.kill()
        await self.wait_exit(5.0)
        self.channel.close()
        if self._reader_task is not None:
            self._reader_task.cancel()
        self._remove_unused_experiment()

    def _remove_unused_experiment(self) -> None:
        """Score-P made the directory reserved for this process when it started (where
        its measurement starts with the process: worker.scorep_first_pass); if no run
        took it (a spare that was never used, a start that failed), it holds only Score-P's
        own files: remove it rather than leave an experiment-looking folder behind."""
        if self.reserved is None or self.alive():
            return
        path = self.reserved[1]
        if path.is_dir() and not (path / MANIFEST).exists():
            shutil.rmtree(path, ignore_errors=True)
