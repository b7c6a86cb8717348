"""An nbclient NotebookClient that sends each cell's metadata with its execute_request.

JupyterLab sends ``{**cell.metadata, "cellId": cell.id}`` as the request's metadata;
ipykernel hands it to the kernel's ``do_execute(cell_meta=...)``. nbclient sends none
(``KernelClient.execute`` has no parameter for it), so without this a toggled cell runs
unprofiled under ``jupyter nbconvert --execute``. The mixin replaces the kernel client's
``execute`` with one that builds the same message with metadata; it works for nbclient's
NotebookClient and papermill's subclass alike.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import Any

from nbclient import NotebookClient
from nbclient.util import run_sync

from .cells import CodeCell, Profiling, code_cells, request_metadata

SCOREP_KERNEL = "scorep-python"  # the kernel spec that knows the notice's comm target


def _execute_with_metadata(
    kc: Any,
    metadata_of: Callable[[], dict[str, Any]],
    code: str,
    silent: bool = False,
    store_history: bool = True,
    user_expressions: dict[str, Any] | None = None,
    allow_stdin: bool | None = None,
    stop_on_error: bool = True,
) -> str:
    """jupyter_client's ``KernelClient.execute``, with the request's metadata."""
    if not isinstance(code, str):
        raise ValueError(f"code {code!r} must be a string")
    content = {
        "code": code,
        "silent": silent,
        "store_history": store_history,
        "user_expressions": user_expressions or {},
        "allow_stdin": kc.allow_stdin if allow_stdin is None else allow_stdin,
        "stop_on_error": stop_on_error,
    }
    msg = kc.session.msg("execute_request", content, metadata=metadata_of())
    kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


class SendsCellMetadata:
    """Mixin for a NotebookClient: every cell's execute_request carries its metadata as
    ``cells.request_metadata`` makes it from ``scorep_profiling``."""

    scorep_profiling: Profiling = Profiling()
    _scorep_cells: dict[int, CodeCell] | None = None
    _scorep_sending: dict[str, Any] | None = None

    def _scorep_metadata(self) -> dict[str, Any]:
        return dict(self._scorep_sending or {})

    async def async_start_new_kernel_client(self) -> Any:
        kc = await super().async_start_new_kernel_client()  # type: ignore[misc]
        kc.execute = functools.partial(_execute_with_metadata, kc, self._scorep_metadata)
        self._send_profiled_cells_notice(kc)
        return kc

    def _send_profiled_cells_notice(self, kc: Any) -> None:
        """Tell the Score-P kernel which cells will be profiled, as JupyterLab does when a
        kernel is ready (profiled_cells_notice): it prepares its spare worker before the
        first cell profiled in a subprocess. Fire and forget: the kernel answers on iopub,
        which nbclient leaves alone (not a cell's message). Other kernels are told nothing
        (ipykernel would log an unknown comm target)."""
        from scorep_kernel.profiled_cells_notice import TARGET, notice_for

        if getattr(self, "kernel_name", None) != SCOREP_KERNEL:
            return
        nb = self.nb  # type: ignore[attr-defined]
        metadata = [
            request_metadata(c, self.scorep_profiling).get("scorep") for c in code_cells(nb)
        ]
        notice = notice_for(metadata)
        if notice is not None:
            comm_id = uuid.uuid4().hex
            content = {"comm_id": comm_id, "target_name": TARGET, "data": notice}
            kc.shell_channel.send(kc.session.msg("comm_open", content))
            # the kernel takes shell messages in order: it has answered before this
            kc.shell_channel.send(kc.session.msg("comm_close", {"comm_id": comm_id, "data": {}}))

    def scorep_code_cell(self, cell_index: int) -> CodeCell | None:
        if self._scorep_cells is None:
            nb = self.nb  # type: ignore[attr-defined]
            self._scorep_cells = {c.index: c for c in code_cells(nb)}
        return self._scorep_cells.get(cell_index)

    async def async_execute_cell(
        self, cell: Any, cell_index: int, *args: Any, **kwargs: Any
    ) -> Any:
        code_cell = self.scorep_code_cell(cell_index)
        if code_cell is None or code_cell.cell is not cell:  # a cell papermill inserted, say
            code_cell = CodeCell(0, cell_index, cell)
        self._scorep_sending = request_metadata(code_cell, self.scorep_profiling)
        try:
            return await super().async_execute_cell(cell, cell_index, *args, **kwargs)  # type: ignore[misc]
        finally:
            self._scorep_sending = None

    # nbclient's synchronous names wrap the functions of NotebookClient itself, not of a
    # subclass: bind them again (papermill calls these)
    start_new_kernel_client = run_sync(async_start_new_kernel_client)
    execute_cell = run_sync(async_execute_cell)


class ScorePNotebookClient(SendsCellMetadata, NotebookClient):
    """nbclient's NotebookClient, sending cell metadata; it notes when a cell's timeout
    struck (the cell is then interrupted, and its measurement kept)."""

    timed_out = False

    async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
        self.timed_out = True
        return await super()._async_handle_timeout(timeout, cell)
