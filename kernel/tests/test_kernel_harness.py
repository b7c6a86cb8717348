"""A real Score-P kernel started through jupyter_client, and a way to run cells in it with
cell metadata as JupyterLab sends it (``kc.execute`` sends none), collecting the cell's
iopub messages. ``frontend="bare"`` sends what jupyter_client and nbclient send (nothing),
``frontend="vscode"`` what VS Code sends (the cell's id alone).

No tests here: the kernel test modules import ``KernelHandle`` from this file.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import KernelManager

MIME = "application/vnd.scorep.experiment+json"
PROFILE_SUB = {"scorep": {"profile": True, "isolation": "subprocess"}}
PROFILE_IN = {"scorep": {"profile": True, "backend": "builtin", "isolation": "inprocess"}}
# What JupyterLab 4 and Notebook 7 add to a cell's metadata in every execute_request.
JUPYTERLAB_KEYS = {"deletedCells": [], "recordTiming": False}


def request_metadata(metadata: dict[str, Any] | None, frontend: str) -> dict[str, Any]:
    """The execute_request metadata ``frontend`` sends for a cell with ``metadata``."""
    if frontend == "jupyterlab":
        return {**JUPYTERLAB_KEYS, **(metadata or {})}
    if frontend == "vscode":
        return {"cellId": f"vscode-notebook-cell:/nb.ipynb#{uuid.uuid4().hex[:8]}"}
    assert frontend == "bare", frontend
    return {}


def wait_files(path: Path, timeout: float = 60.0) -> dict[str, Any]:
    """The experiment's manifest once its files are no longer pending (or at ``timeout``):
    files are written after the cell's reply, so a test reading them waits here first."""
    deadline = time.monotonic() + timeout
    while True:
        manifest = json.loads((path / "manifest.json").read_text())
        if manifest["files_status"] != "pending" or time.monotonic() > deadline:
            return manifest
        time.sleep(0.2)


class CellResult:
    def __init__(
        self, reply: dict[str, Any], messages: list[tuple[float, dict[str, Any]]], t0: float
    ):
        self.reply = reply
        self.messages = messages  # (seconds since the request, message)
        self.t0 = t0

    @property
    def status(self) -> str:
        return self.reply["status"]

    def of(self, msg_type: str) -> list[dict[str, Any]]:
        return [m["content"] for _, m in self.messages if m["msg_type"] == msg_type]

    def stdout(self) -> str:
        return "".join(c["text"] for c in self.of("stream") if c["name"] == "stdout")

    def stderr(self) -> str:
        return "".join(c["text"] for c in self.of("stream") if c["name"] == "stderr")

    def bundles(self) -> list[dict[str, Any]]:
        return [c["data"][MIME] for c in self.of("display_data") if MIME in c["data"]]

    def bundle(self) -> dict[str, Any]:
        found = self.bundles()
        assert len(found) == 1, f"expected one experiment bundle, got {len(found)}: {self.messages}"
        return found[0]

    def manifest(self) -> dict[str, Any]:
        return json.loads((Path(self.bundle()["path"]) / "manifest.json").read_text())


class KernelHandle:
    """One running kernel; ``run`` sends an execute_request carrying cell metadata."""

    def __init__(self, cwd: Path, env: dict[str, str] | None = None, frontend: str = "jupyterlab",
                 prefix: list[str] | None = None, argv: list[str] | None = None):  # fmt: skip
        """``prefix``: a command the kernel runs under (one that execs it, as entering a
        network namespace); the kernel then talks through Unix sockets in ``cwd``, which
        every network namespace reaches. ``argv``: the kernel's whole command line (with
        ``{connection_file}``, as a kernel spec's), instead of this interpreter's
        ``-m scorep_kernel``."""
        self.frontend = frontend
        if prefix:
            self.km = KernelManager(kernel_name="scorep-python", transport="ipc",
                                    ip=str(cwd / "kernel-ipc"))  # fmt: skip
        else:
            self.km = KernelManager(kernel_name="scorep-python")
        ours = [sys.executable, "-m", "scorep_kernel", "-f", "{connection_file}"]
        argv = argv or [*(prefix or []), *ours]
        self.km._kernel_spec = KernelSpec(
            argv=argv,
            display_name="Python 3 (Score-P)",
            language="python",
            interrupt_mode="signal",
        )
        kernel_env = dict(os.environ)
        kernel_env.update(env or {})
        self.km.start_kernel(cwd=str(cwd), env=kernel_env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self._early: dict[str, list] = {}

    def send(self, code: str, metadata: dict[str, Any] | None = None,
             user_expressions: dict[str, str] | None = None, allow_stdin: bool = False) -> str:  # fmt: skip
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": user_expressions or {},
            "allow_stdin": allow_stdin,
            "stop_on_error": False,
        }
        sent = request_metadata(metadata, self.frontend)
        msg = self.kc.session.msg("execute_request", content, metadata=sent)
        self.kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]

    def wait_output(self, msg_id: str, text: str, timeout: float = 60.0) -> None:
        """Read the cell's iopub messages until its output contains ``text`` (the cell is
        then surely running); ``collect`` sees these messages too."""
        seen = self._early.setdefault(msg_id, [])
        deadline = time.monotonic() + timeout
        while True:
            m = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            seen.append((time.monotonic(), m))
            if m["msg_type"] == "stream" and text in m["content"]["text"]:
                return

    def collect(self, msg_id: str, timeout: float = 60.0, t0: float | None = None) -> CellResult:
        t0 = time.monotonic() if t0 is None else t0
        messages = [(t - t0, m) for t, m in self._early.pop(msg_id, [])]
        deadline = time.monotonic() + timeout
        while not (messages and messages[-1][1]["msg_type"] == "status"
                   and messages[-1][1]["content"]["execution_state"] == "idle"):  # fmt: skip
            m = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            messages.append((time.monotonic() - t0, m))
        while True:
            reply = self.kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                return CellResult(reply["content"], messages, t0)

    def final_display(self, result: CellResult, timeout: float = 60.0) -> dict[str, Any]:
        """The data of the cell's experiment display as it ends: an in-process run's display
        is updated (update_display_data, its id) once the Recording is built, which is
        after the reply; other displays are final as sent."""
        display = next(c for c in result.of("display_data") if MIME in c["data"])
        display_id = (display.get("transient") or {}).get("display_id")
        if display_id is None:
            return display["data"]
        updates = [c for c in result.of("update_display_data")
                   if c["transient"].get("display_id") == display_id]  # fmt: skip
        deadline = time.monotonic() + timeout
        while not updates:
            m = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            content = m["content"]
            if (m["msg_type"] == "update_display_data"
                    and content["transient"].get("display_id") == display_id):  # fmt: skip
                updates.append(content)
        return updates[-1]["data"]

    def run(self, code: str, metadata: dict[str, Any] | None = None, timeout: float = 60.0,
            user_expressions: dict[str, str] | None = None) -> CellResult:  # fmt: skip
        t0 = time.monotonic()
        return self.collect(self.send(code, metadata, user_expressions), timeout, t0)

    def run_answering(
        self, code: str, metadata: dict[str, Any], answer: str
    ) -> tuple[CellResult, dict]:
        """Run a cell that asks for input; answer its first input_request with ``answer``.
        Returns the result and the request's content."""
        asked: dict = {}

        def reply() -> None:
            msg = self.kc.get_stdin_msg(timeout=60)
            asked.update(msg["content"])
            self.kc.input(answer)

        thread = threading.Thread(target=reply, daemon=True)
        thread.start()
        t0 = time.monotonic()
        result = self.collect(self.send(code, metadata, allow_stdin=True), 60.0, t0)
        thread.join(5)
        return result, asked

    def value(self, expression: str) -> Any:
        """An expression's value in the kernel's namespace (via user_expressions): the value
        itself for literals, else its ``repr``."""
        result = self.run("", user_expressions={"v": f"repr({expression})"})
        got = result.reply["user_expressions"]["v"]
        assert got["status"] == "ok", got
        text = ast.literal_eval(got["data"]["text/plain"])  # the repr string itself
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text

    def notice(self, data: Any, timeout: float = 30.0) -> dict[str, Any]:
        """Open the jupyterlab-scorep comm with ``data`` as JupyterLab does
        (profiled_cells_notice) and return the kernel's answer on it."""
        comm_id = uuid.uuid4().hex
        content = {"comm_id": comm_id, "target_name": "jupyterlab-scorep", "data": data}
        msg = self.kc.session.msg("comm_open", content)
        self.kc.shell_channel.send(msg)
        deadline = time.monotonic() + timeout
        while True:
            m = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id:
                close = self.kc.session.msg("comm_close", {"comm_id": comm_id, "data": {}})
                self.kc.shell_channel.send(close)
                return m["content"]["data"]

    def shutdown(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            self.km.shutdown_kernel(now=True)
