"""The kernel's side of the spare template (builtin backend, see worker.template): start
it, keep it preloaded, and fork workers from it in milliseconds instead of starting an
interpreter and importing the notebook's modules again (fork ~10 ms, Ready ~60 ms after
the request, vs a fresh spare with torch ~4 s of CPU; a profiled run 1 s after the
previous one waited +3.3 s for it, /tmp/spare_probe.py 1; now 1.9-2.5 s per run instead
of 7.4-9.2 s on a loaded 2-core machine, and paper_overhead.py's paired subprocess
overhead 0.53 s instead of 3.7 s).

A forked worker is a WorkerProcess like any other; its ``proc`` is a ForkedProc, which
gives what WorkerProcess uses of a Popen (pid, stdout, stderr, poll). The template, not the
kernel, is its parent: the template reports each child's exit (Exited, before it reaps
it), and while the child is a zombie not yet reaped (the template is paused while a cell
runs) its status is read from /proc, so fault messages (runs.faults) read as for a fresh
worker.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import time
from pathlib import Path

import psutil

from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.client import WorkerKey, WorkerProcess, worker_env
from scorep_kernel.worker.protocol import ChannelClosed

log = logging.getLogger("scorep_kernel")

# How a forked worker orphaned by its template's death ends (lifeline.watch_parent), for a
# status nobody reported.
ORPHANED = 70
# Forked comes once the template has done the Preloads sent before (imports: seconds).
FORK_TIMEOUT_S = 300.0
# What the environment fixes at an interpreter's start: a change starts a new template.
_AT_START = ("PYTHON", "LD_", "MALLOC_")


def _at_start(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_AT_START)}


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, start time, exit status as waitpid has it) of process ``pid``; None once
    it is gone. The start time tells a reused pid from ours."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    # state (field 3), starttime (22), exit_code (52, Linux >= 3.5)
    return fields[0], int(fields[19]), int(fields[-1])


class ForkedProc:
    """A Popen-like handle on a worker forked by ``template``."""

    def __init__(self, pid: int, stdout: int, stderr: int, template: Template):
        self.pid = pid
        self.stdout = open(stdout, "rb")  # noqa: SIM115 (WorkerProcess reads and closes it)
        self.stderr = open(stderr, "rb")  # noqa: SIM115
        self.template = template
        self.returncode: int | None = None
        stat = _proc_stat(pid)
        self._started = stat[1] if stat is not None else None
        self._gone_since: float | None = None

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        reported = self.template.exits.get(self.pid)
        if reported is not None:
            self.returncode = reported
            return reported
        stat = _proc_stat(self.pid)
        if stat is None or stat[1] != self._started:
            # Reaped: the template reported it first, and the report is on its way, unless
            # the template died before it (then init reaped it: its status is lost, and
            # ORPHANED stands for it).
            now = time.monotonic()
            self._gone_since = self._gone_since or now
            if not self.template.alive() or now - self._gone_since > 5.0:
                self.returncode = ORPHANED
            return self.returncode
        if stat[0] in ("Z", "X"):  # not reaped yet (the template is paused, or slow)
            self.returncode = os.waitstatus_to_exitcode(stat[2])
        return self.returncode


class Template:
    """The kernel's handle on one template process (``worker``: its channel, pipes and
    signals, as a spare's)."""

    def __init__(self, worker: WorkerProcess, side: socket.socket, env: dict[str, str]):
        self.worker = worker
        self.side = side  # the kernel's end of the socket the fds go through
        self.start_env = _at_start(env)
        self.exits: dict[int, int] = {}  # pid -> returncode, as the template reported
        self.forks = 0
        self._forked: asyncio.Future[int] | None = None
        self._lock = asyncio.Lock()
        self._reader: asyncio.Task | None = None

    @property
    def pid(self) -> int:
        return self.worker.pid

    @property
    def key(self) -> WorkerKey:
        return self.worker.key

    def matches(self, key: WorkerKey, env: dict[str, str]) -> bool:
        return self.key == key and self.start_env == _at_start(env) and self.alive()

    @classmethod
    async def start(cls, key: WorkerKey, env: dict[str, str], cwd: str) -> Template:
        kernel_end, template_end = socket.socketpair()
        side, side_end = socket.socketpair()
        fds = (template_end.fileno(), side_end.fileno())
        command = [key.python, "-m", "scorep_kernel.worker", "--fd", str(fds[0])]
        try:
            proc = subprocess.Popen(  # noqa: ASYNC220 (a fork and exec: milliseconds)
                [*command, "--template", str(fds[1])],
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=worker_env(env),
                cwd=cwd,
                start_new_session=True,  # as a worker: signalled by the kernel only
            )
        except BaseException:
            kernel_end.close()
            side.close()
            raise
        finally:
            template_end.close()
            side_end.close()
        worker = await WorkerProcess.attach(key, proc, kernel_end)
        return cls(worker, side, env)

    async def wait_ready(self, timeout: float = 120.0) -> None:
        await self.worker.wait_ready(timeout)
        if self._reader is None:
            self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        while True:
            try:
                message = await self.worker.recv()
            except ChannelClosed:
                if self._forked is not None and not self._forked.done():
                    self._forked.set_exception(ChannelClosed("the spare template ended"))
                return
            if isinstance(message, msg.Forked):
                self.exits.pop(message.pid, None)  # an earlier process's, with this pid
                if self._forked is not None and not self._forked.done():
                    self._forked.set_result(message.pid)
            elif isinstance(message, msg.Exited):
                self.exits[message.pid] = message.returncode
            elif not isinstance(message, msg.Preloaded):
                log.debug("spare template: %s ignored", message.kind())

    def alive(self) -> bool:
        return self.worker.alive()

    async def preload(self, modules: list[str]) -> None:
        todo = [m for m in modules if m not in self.worker.preloaded]
        if todo:
            self.worker.preloaded.update(todo)
            await self.worker.send(msg.Preload(todo))

    async def fork(self, cwd: str, env: dict[str, str]) -> WorkerProcess:
        """A worker forked from the template, in ``cwd`` with ``env`` (its os.environ);
        what the template was asked to preload before is imported in it."""
        async with self._lock:
            kernel_end, worker_end = socket.socketpair()
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            try:
                self._forked = asyncio.get_running_loop().create_future()
                socket.send_fds(self.side, [b"F"], [worker_end.fileno(), out_w, err_w])
                await self.worker.send(msg.Fork(cwd, worker_env(env)))
                pid = await asyncio.wait_for(self._forked, FORK_TIMEOUT_S)
                if pid <= 0:
                    raise ChannelClosed("the spare template could not fork")
            except BaseException:
                kernel_end.close()
                os.close(out_r)
                os.close(err_r)
                raise
            finally:
                self._forked = None
                worker_end.close()
                os.close(out_w)
                os.close(err_w)
            self.forks += 1
        proc = ForkedProc(pid, out_r, err_r, self)
        worker = await WorkerProcess.attach(self.key, proc, kernel_end)
        worker.preloaded = set(self.worker.preloaded)
        return worker

    def describe(self) -> str:
        worker = self.worker
        state = "ready" if worker.ready is not None else "starting"
        if worker.paused:
            state += ", paused while a cell runs"
        try:  # the template alone: its children are the spare and the runs' workers
            proc = psutil.Process(worker.pid)
            cost = (f", {proc.memory_info().rss / 2**20:.0f} MB resident, "
                    f"{sum(proc.cpu_times()[:2]):.1f} s CPU so far")  # fmt: skip
        except psutil.Error:
            cost = ""
        preloaded = ", ".join(sorted(worker.preloaded)[:8]) or "nothing yet"
        return (f"Spare template: pid {worker.pid} ({state}{cost}, {self.forks} forks); "
                f"preloaded: {preloaded}")  # fmt: skip

    async def close(self) -> None:
        """Its spares end with it (their parent watch); a worker a run took lives on
        until its run ends (lifeline.watch_parent)."""
        await self.worker.close(graceful=True)
        self.side.close()
        if self._reader is not None:
            self._reader.cancel()
