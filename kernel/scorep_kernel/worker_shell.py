"""The worker's headless IPython shell: every output goes to the kernel as it happens.

The cell runs in a real ``InteractiveShell`` (magics, ``!cmd``, the last expression's rich
repr, ``display()``, inline figures, tracebacks with the cell's own line numbers). Its
display publisher, display hook and ``sys.stdout``/``sys.stderr`` send messages over the
worker's channel instead of printing; the kernel publishes them on iopub for the cell.
"""

from __future__ import annotations

import io
import sys
import threading
import time
from typing import Any

from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from traitlets import Any as AnyTrait

# Batch writes for this long: a print loop must not become one message per print, and a
# progress bar must still move while the cell runs.
FLUSH_INTERVAL_S = 0.05
FLUSH_BYTES = 64 * 1024


class ForwardingStream(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` of the worker: buffered, flushed to the kernel every
    FLUSH_INTERVAL_S by one flusher thread, and at once before displays and at cell end.
    Carriage returns pass through untouched (tqdm-style progress bars)."""

    def __init__(self, name: str, channel: Any, fileno: int):
        super().__init__()
        self.name = name
        self._channel = channel
        self._fileno = fileno
        self._parts: list[str] = []
        self._size = 0
        self._lock = threading.Lock()

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

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if not text:
            return 0
        with self._lock:
            self._parts.append(text)
            self._size += len(text)
            big = self._size >= FLUSH_BYTES
        if big:
            self.flush()
        else:
            _pending.set()
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if not self._parts:
                return
            text = "".join(self._parts)
            self._parts.clear()
            self._size = 0
            try:
                self._channel.send("stream", {"name": self.name, "text": text})
            except OSError:
                pass  # the kernel is gone; the worker ends when its main loop notices


_pending = threading.Event()


def _flusher() -> None:
    # One thread for the worker's life, started before any measurement: a thread made per
    # flush would show up in the cell's trace.
    while True:
        _pending.wait()
        time.sleep(FLUSH_INTERVAL_S)
        _pending.clear()
        flush_streams()


def start_flusher() -> None:
    threading.Thread(target=_flusher, name="scorep-kernel-output", daemon=True).start()


def flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, ForwardingStream):
            stream.flush()


class ForwardingDisplayPublisher(DisplayPublisher):
    channel = AnyTrait()

    def publish(  # type: ignore[override]
        self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs
    ) -> None:
        flush_streams()
        self.channel.send(
            "display",
            {
                "data": data,
                "metadata": metadata or {},
                "transient": transient or {},
                "update": bool(update),
            },
        )

    def clear_output(self, wait: bool = False) -> None:
        flush_streams()
        self.channel.send("clear_output", {"wait": bool(wait)})


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
                "execute_result",
                {"execution_count": self.prompt_count, **self._msg},
            )


class WorkerShell(InteractiveShell):
    """Keeps the formatted traceback for the kernel instead of printing it."""

    last_error: dict[str, Any] | None = None

    def _showtraceback(self, etype, evalue, stb) -> None:  # type: ignore[override]
        flush_streams()
        self.last_error = {
            "ename": getattr(etype, "__name__", str(etype)),
            "evalue": str(evalue),
            "traceback": list(stb),
        }
        self.display_pub.channel.send("error", dict(self.last_error))

    def enable_gui(self, gui=None):  # no event loops in a headless worker
        pass


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
