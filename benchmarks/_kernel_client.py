"""Drive a real kernel through jupyter_client the way JupyterLab does (cell metadata included)."""

from __future__ import annotations

import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field

from jupyter_client.manager import start_new_kernel


@dataclass
class CellResult:
    status: str
    seconds: float
    outputs: list = field(default_factory=list)  # iopub content dicts, in order
    error: str = ""

    def mime(self, mimetype: str):
        for out in self.outputs:
            data = out.get("data") or {}
            if mimetype in data:
                return data[mimetype]
        return None

    @property
    def stdout(self) -> str:
        return "".join(o.get("text", "") for o in self.outputs if o.get("name") == "stdout")


class Kernel:
    def __init__(self, kernel_name: str, cwd: str | None = None, env: dict | None = None):
        kwargs = {"cwd": cwd} if cwd else {}
        if env:
            kwargs["env"] = env
        self.km, self.kc = start_new_kernel(kernel_name=kernel_name, startup_timeout=120, **kwargs)

    def run(self, code: str, metadata: dict | None = None, timeout: float = 600) -> CellResult:
        content = dict(
            code=code,
            silent=False,
            store_history=True,
            user_expressions={},
            allow_stdin=False,
            stop_on_error=True,
        )
        # JupyterLab sends a cell's metadata with keys of its own (frontend_metadata)
        sent = {"deletedCells": [], "recordTiming": False, **(metadata or {})}
        msg = self.kc.session.msg("execute_request", content, metadata=sent)
        start = time.perf_counter()
        self.kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        reply = None
        while reply is None:
            r = self.kc.get_shell_msg(timeout=timeout)
            if r["parent_header"].get("msg_id") == msg_id:
                reply = r
        seconds = time.perf_counter() - start
        outputs = []
        while True:
            m = self.kc.get_iopub_msg(timeout=timeout)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
            if m["msg_type"] in ("stream", "display_data", "execute_result", "error"):
                outputs.append(m["content"])
        c = reply["content"]
        err = f"{c.get('ename')}: {c.get('evalue')}" if c["status"] == "error" else ""
        return CellResult(c["status"], seconds, outputs, err)

    def notice(self, profiled_cells: list[dict], timeout: float = 60) -> dict:
        """What JupyterLab sends a Score-P kernel once it is ready (profiled_cells_notice):
        the notebook's profiled cells. Returns the kernel's answer."""
        from scorep_kernel.profiled_cells_notice import TARGET, notice_for

        comm_id = uuid.uuid4().hex
        content = {"comm_id": comm_id, "target_name": TARGET, "data": notice_for(profiled_cells)}
        self.kc.shell_channel.send(self.kc.session.msg("comm_open", content))
        while True:
            m = self.kc.get_iopub_msg(timeout=timeout)
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id:
                close = self.kc.session.msg("comm_close", {"comm_id": comm_id, "data": {}})
                self.kc.shell_channel.send(close)
                return m["content"]["data"]

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


@contextmanager
def kernel(kernel_name: str, **kwargs):
    k = Kernel(kernel_name, **kwargs)
    try:
        yield k
    finally:
        k.close()
