"""The spare template (builtin backend): a process that runs no cells, imports what the
notebook uses (Preload, like a spare) and forks ordinary workers from itself on request.

Why: a spare made fresh costs an interpreter start and the notebook's imports, ~4 s of CPU
with torch (0.4 s + ``import torch`` 2-4 s here); a profiled cell that comes sooner waits
for it (+3.3 s per profiled run at 1 s between runs, /tmp/spare_probe.py 1). A fork of a
warm template with torch takes ~10 ms (copy-on-write) and the child says Ready ~60 ms
after the request (a fresh worker: ~0.5 s before any import), so the next spare is ready
at once. Score-P workers never come from here: Score-P's measurement state cannot be
forked.

The kernel's side is ``worker.forking``. Per Fork the kernel sends, on a side socket
(SCM_RIGHTS), the child's channel socket and the write ends of its stdout and stderr
pipes; the template forks and answers Forked(pid). The child takes its own session, puts
the pipes on 1 and 2, drops the template's sockets and signal handling, and returns to
``entry.main``, which runs it as any worker (``entry.run``: the flusher and parent-watch
threads start only there, so the template stays single-threaded in Python: a fork keeps
only the calling thread; native pools such as OpenBLAS's, started by ``import numpy``,
handle a fork themselves, pthread_atfork). The template reaps its children and reports each exit
(Exited, sent before the reap so the kernel never misses a status). It ends when the
kernel does (PR_SET_PDEATHSIG wakes it if it is paused); a spare forked from it ends with
it, but a worker a run took outlives it while the kernel lives (a template closed mid-run,
e.g. by ``%scorep spare_template=false`` during a multi-cell run, must not end the run).
"""

from __future__ import annotations

import importlib
import os
import select
import signal
import socket
import sys
from dataclasses import dataclass

from scorep_kernel.worker import protocol as msg
from scorep_kernel.worker.import_watch import import_all
from scorep_kernel.worker.protocol import BlockingChannel, ChannelClosed

# Imported here once, so that a forked worker has them already: what every worker loads.
# numpy.ma: numpy 2's np.unique asks np.ma.is_masked, and a fork that never imported it
# paid ~50 ms for it in every profiled run's recording build.
_WORKER_MODULES = (
    "numpy.ma",
    "scorep_kernel.measure.session",
    "scorep_kernel.shim",
    "scorep_kernel.worker.shell",
)


@dataclass(frozen=True)
class Child:
    """What a forked child runs as a worker (returned into ``entry.main``)."""

    fd: int
    parent: int  # the template
    kernel: int  # what a worker a run took outlives the template for (lifeline.watch_parent)


def serve_template(fd: int, side_fd: int, kernel_pid: int) -> Child | None:
    """Serve the kernel; returns None when the template ends, a Child in each fork."""
    from scorep_kernel.worker.lifeline import continue_when_the_kernel_dies

    channel = BlockingChannel(socket.socket(fileno=fd))
    side = socket.socket(fileno=side_fd)
    continue_when_the_kernel_dies()
    for name in _WORKER_MODULES:
        importlib.import_module(name)
    # Before any Preload: a notebook that imports scorep gets the shim in every fork, not
    # the real bindings installed beside it (they measure nothing outside python -m scorep).
    from scorep_kernel.shim import install_scorep_shim, preload_scorep_shim

    install_scorep_shim()
    preload_scorep_shim()
    _warm_up_shell()
    # SIGCHLD wakes the select below (a pipe written by the signal machinery; no thread)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    own = (channel.sock, side, wake_r, wake_w)
    channel.send(msg.Ready(os.getpid(), True, "spare template", "builtin"))
    while True:
        if os.getppid() != kernel_pid:  # the kernel is gone; our children follow us
            os._exit(70)
        readable, _, _ = select.select([channel.sock.fileno(), wake_r], [], [], 1.0)
        if wake_r in readable:
            os.read(wake_r, 512)
        _report_exits(channel)
        if channel.sock.fileno() not in readable:
            continue
        try:
            message = channel.recv()
        except ChannelClosed:
            return None
        if isinstance(message, msg.Shutdown):
            return None
        if isinstance(message, msg.Preload):
            _preload(channel, message.modules)
        elif isinstance(message, msg.Fork):
            child = _fork(channel, side, message, own, kernel_pid)
            if child is not None:
                return child
        else:
            msg.dispatch(message, {}, "spare template")


def _warm_up_shell() -> None:
    """Run one cell in a throwaway shell, so that every fork's first cell finds IPython's
    first-run paths done (its lazy imports, compiled patterns): that first cell under the
    tracer recorded ~6,500 of IPython's calls, then dropped as outside the cell (~30 ms
    of recording to build per profiled run), ~350 once warm. The worker's own shell is
    made in the fork (entry.run)."""
    try:
        from traitlets.config import Config

        from scorep_kernel.worker.shell import WorkerShell

        config = Config()
        config.HistoryManager.hist_file = ":memory:"
        config.HistoryManager.enabled = False
        WorkerShell(config=config).run_cell("pass", store_history=False)
    except Exception:  # a warm-up only: the forks work without it
        pass


def _preload(channel: BlockingChannel, modules: list[str]) -> None:
    from scorep_kernel.accel.torch_session import warm_up

    loaded = import_all(modules)
    warm_up()  # torch.profiler's start-up, once for every fork (accel.torch_session)
    channel.send(msg.Preloaded(modules, loaded))


def _report_exits(channel: BlockingChannel) -> None:
    """Report every child that has exited, then reap it (report first: while it is a
    zombie the kernel can read its status itself, see forking.ForkedProc)."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # no children
            return
        if info is None or info.si_pid == 0:
            return
        code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        try:
            channel.send(msg.Exited(info.si_pid, code))
        finally:
            os.waitpid(info.si_pid, 0)


def _fork(
    channel: BlockingChannel, side: socket.socket, request: msg.Fork, own: tuple, kernel_pid: int
) -> Child | None:
    _, fds, _, _ = socket.recv_fds(side, 16, 3)
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        channel.send(msg.Forked(0))  # the kernel falls back to a fresh worker
        return None
    sock_fd, out_fd, err_fd = fds
    for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice
        if stream is not None:
            stream.flush()
    template_pid = os.getpid()
    pid = os.fork()
    if pid == 0:
        return _become_worker(sock_fd, out_fd, err_fd, request, (template_pid, kernel_pid), own)
    for fd in fds:
        os.close(fd)
    channel.send(msg.Forked(pid))
    return None


def _become_worker(
    sock_fd: int, out_fd: int, err_fd: int, request: msg.Fork, parents: tuple[int, int], own: tuple
) -> Child:
    try:
        # Its own session, as a fresh worker (Popen start_new_session): the kernel signals
        # its process group (pause, interrupt), never the template's.
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # entry.run sets its own
        # The template's sockets: detached (their objects must not close a number the
        # worker reuses later) and closed.
        channel_sock, side, wake_r, wake_w = own
        for fd in (channel_sock.detach(), side.detach(), wake_r, wake_w):
            _close(fd)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        _close(out_fd)
        _close(err_fd)
        os.chdir(request.cwd)
        os.environ.clear()
        os.environ.update(request.env)
        os.environ.pop("SCOREP_KERNEL_PARENT_PID", None)
        if "--template" in sys.argv:  # as a fresh worker's (the fd number aside)
            at = sys.argv.index("--template")
            del sys.argv[at : at + 2]
        _reseed()
    except BaseException as e:  # never back into the template's loop
        os.write(2, f"spare template: the forked worker could not start: {e!r}\n".encode())
        os._exit(71)
    return Child(sock_fd, *parents)


def _reseed() -> None:
    """A fresh worker seeds numpy's global generator from the OS when it imports numpy;
    forks of one template would all draw the same numbers (``random`` reseeds itself
    after a fork; torch's default seed is fixed in every process anyway)."""
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        try:
            np_random.seed()
        except Exception:  # a numpy without the legacy global generator
            pass


def _close(fd: int) -> None:
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass
