"""The worker's headless IPython shell: every output goes to the kernel as it happens.

The cell runs in a real ``InteractiveShell`` (magics, ``!cmd``, the last expression's rich
repr, ``display()``, inline figures, tracebacks with the cell's own line numbers). Its
display publisher, display hook and ``sys.stdout``/``sys.stderr`` send messages over the
worker's channel instead of printing; the kernel publishes them on iopub for the cell.
``input()`` and ``getpass()`` (``make_input``) are asked of the notebook the same way.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, Literal

from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from traitlets import Any as AnyTrait

from scorep_kernel.worker import protocol as msg

# Batch writes for this long: a print loop must not become one message per print, and a
# progress bar must still move while the cell runs.
FLUSH_INTERVAL_S = 0.05


class ForwardingStream(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` of the worker: collected in a list, sent to the
    kernel every FLUSH_INTERVAL_S by one flusher thread, and at once before displays and at
    cell end. Carriage returns pass through untouched (tqdm-style progress bars).

    ``write`` is the list's own ``append`` (an instance attribute, so ``print`` calls C
    directly): no Python frame per write, which keeps a traced cell that prints in a loop
    from paying the tracer for our plumbing. Like ipykernel's streams it accepts what it is
    given; the flush makes text of it. It returns None rather than a count."""

    def __init__(self, name: str, channel: Any, fileno: int):
        super().__init__()
        self.name = name
        self._channel = channel
        self._fileno = fileno
        self._parts: list[Any] = []
        # deliberately list.append (returns None, not a count: see the docstring)
        self.write = self._parts.append  # type: ignore[assignment]
        self._lock = threading.Lock()  # one flush at a time (flusher thread vs. main thread)

    # file protocol
    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        # Native code and subprocesses write to the real descriptor, which the kernel reads.
        return self._fileno

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writelines(self, lines: Any) -> None:
        self._parts.extend(lines)

    def flush(self) -> None:
        with self._lock:
            parts = self._parts
            n = len(parts)
            if not n:
                return
            # Take the first n without swapping the list: write() may append meanwhile.
            chunk = parts[:n]
            del parts[:n]
            try:
                text = "".join(chunk)
            except TypeError:
                text = "".join(
                    p if isinstance(p, str) else p.decode("utf-8", "replace")
                    if isinstance(p, (bytes, bytearray)) else str(p)
                    for p in chunk
                )  # fmt: skip
            try:
                self._channel.send(msg.Stream(self.name, text))
            except OSError:
                pass  # the kernel is gone; the worker ends when its main loop notices


def _flusher() -> None:
    # One thread for the worker's life, started before any measurement (a thread made per
    # flush would show up in the cell's trace), polling: write() stays a few C calls, which
    # matters when a traced cell prints in a loop.
    while True:
        time.sleep(FLUSH_INTERVAL_S)
        flush_streams()


def start_flusher() -> None:
    threading.Thread(target=_flusher, name="scorep-kernel-output", daemon=True).start()


def flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, ForwardingStream):
            stream.flush()


class ForwardingDisplayPublisher(DisplayPublisher):
    channel = AnyTrait()

    def publish(
        self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs
    ) -> None:
        flush_streams()
        self.channel.send(msg.Display(data, metadata or {}, transient or {}, bool(update)))

    def clear_output(self, wait: bool = False) -> None:
        flush_streams()
        self.channel.send(msg.ClearOutput(bool(wait)))


class ForwardingDisplayHook(DisplayHook):
    """Sends the last expression's value as an execute_result (as ipykernel's hook does)."""

    channel = AnyTrait()

    def start_displayhook(self) -> None:
        self._msg: dict[str, Any] = {"data": {}, "metadata": {}}

    def write_output_prompt(self) -> None:
        pass

    def write_format_data(self, format_dict, md_dict=None) -> None:
        self._msg["data"] = format_dict
        self._msg["metadata"] = md_dict or {}

    def finish_displayhook(self) -> None:
        flush_streams()
        if self._msg["data"]:
            self.channel.send(
                msg.ExecuteResult(self.prompt_count, self._msg["data"], self._msg["metadata"])
            )


def make_input(channel: Any, password: bool) -> Any:
    """input() / getpass() of the worker: asked of the notebook through the kernel, as in a
    plain kernel (the kernel forwards the request on its stdin channel)."""

    def ask(prompt: Any = "", *args: Any, **kwargs: Any) -> str:
        flush_streams()
        channel.send(msg.InputRequest(str(prompt), password))
        while True:
            reply = channel.recv()
            if isinstance(reply, msg.InputReply):
                break
        if reply.error is not None or reply.value is None:
            from IPython.core.error import StdinNotImplementedError

            raise StdinNotImplementedError(reply.error or "no input")
        return reply.value

    return ask


def cell_code_filename(shell: Any, code: str, execution_count: int) -> str:
    """The file name IPython's compiler gives this cell (as run_cell_async computes it): the
    tracers tell the cell's own code from IPython's machinery by it."""
    try:
        transformed = shell.transform_cell(code)
    except Exception:
        transformed = code
    return shell.compile.get_code_name(code, transformed, execution_count)


class WorkerShell(InteractiveShell):
    """Keeps the formatted traceback for the kernel instead of printing it, and what the
    cell asks of the frontend (the pager's text for ``zip?``, the next input's text for
    ``%load``) as execute_reply payloads, as ipykernel's shell does: the kernel's reply to
    the cell carries them (``take_payload``)."""

    last_error: dict[str, Any] | None = None
    # make_shell creates it with these classes (annotations only: the traits stay IPython's)
    display_pub: ForwardingDisplayPublisher
    displayhook: ForwardingDisplayHook

    def _showtraceback(self, etype, evalue, stb) -> None:
        flush_streams()
        self.last_error = {
            "ename": getattr(etype, "__name__", str(etype)),
            "evalue": str(evalue),
            "traceback": list(stb),
        }
        self.display_pub.channel.send(msg.Error(**self.last_error))

    def enable_gui(self, gui=None):  # no event loops in a headless worker
        pass

    @contextlib.contextmanager
    def _tee(self, channel: Literal["stdout", "stderr"]) -> Iterator[None]:
        """IPython 9 wraps ``sys.stdout.write`` in Python code per cell to keep the outputs
        in its history; the worker's history is off (make_shell), and that wrapper would be
        measured on every print (Score-P records it as ``...WorkerShell:write``)."""
        yield

    def init_hooks(self) -> None:
        super().init_hooks()
        from IPython.core import page

        self.set_hook("show_in_pager", page.as_hook(self._page_payload), 99)

    @property
    def _payloads(self) -> Any:
        manager = self.payload_manager
        assert manager is not None  # InteractiveShell.__init__ makes it
        return manager

    def _page_payload(self, strg, start=0, screen_lines=0, pager_cmd=None) -> None:
        data = strg if isinstance(strg, dict) else {"text/plain": strg}
        self._payloads.write_payload({"source": "page", "data": data, "start": max(0, start)})

    def set_next_input(self, text, replace=False) -> None:
        self._payloads.write_payload({"source": "set_next_input", "text": text, "replace": replace})

    def take_payload(self) -> list[dict[str, Any]]:
        """The payloads the last cell wrote (cleared)."""
        payload = list(self._payloads.read_payload())
        self._payloads.clear_payload()
        return payload


def make_shell(channel: Any, colors: str | None = None) -> WorkerShell:
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    config.HistoryManager.enabled = False
    if colors:
        config.InteractiveShell.colors = colors
    shell = WorkerShell.instance(
        config=config,
        display_pub_class=ForwardingDisplayPublisher,
        displayhook_class=ForwardingDisplayHook,
    )
    shell.display_pub.channel = channel
    shell.displayhook.channel = channel
    return shell
