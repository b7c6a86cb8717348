"""The kernel as runs see it: ``KernelCellOutput`` publishes a worker's outputs on iopub as
the current cell's own, and ``KernelSideOf`` gives a run what ``runs.base.KernelSide``
promises, from the ScorePKernel it wraps (``Kernel`` here: what this module uses of it, so
that it need not import the kernel that imports it)."""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from scorep_kernel.runs.base import CellRequest

log = logging.getLogger("scorep_kernel")

if TYPE_CHECKING:
    from scorep_kernel.background import BackgroundTasks
    from scorep_kernel.mpi.kept_ranks import KeptRanks
    from scorep_kernel.worker.pool import WorkerPool


class Kernel(Protocol):
    """What this module uses of the ScorePKernel (an ipykernel IPythonKernel)."""

    _allow_stdin: bool
    worker_imports: dict[str, None]
    panel_frontend: bool

    @property
    def ipython(self) -> Any: ...  # the InteractiveShell (display_pub)
    @property
    def shell(self) -> Any: ...
    @property
    def session(self) -> Any: ...
    @property
    def iopub_socket(self) -> Any: ...
    @property
    def pool(self) -> WorkerPool: ...
    @property
    def tasks(self) -> BackgroundTasks: ...
    @property
    def kept_ranks(self) -> KeptRanks: ...

    def get_parent(self, channel: str | None = None) -> dict[str, Any]: ...
    def _topic(self, topic: str) -> bytes: ...
    def defer(self, call: Any) -> None: ...
    def getpass(self, prompt: str = "", stream: Any = None) -> str: ...
    def raw_input(self, prompt: str = "") -> str: ...


class KernelCellOutput:
    """Publishes a worker's outputs on iopub as the current cell's own."""

    def __init__(self, kernel: Kernel):
        self.kernel = kernel

    def _flush(self) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed or replaced stream: nothing to flush
                pass

    def stream(self, name: str, text: str) -> None:
        (sys.stderr if name == "stderr" else sys.stdout).write(text)

    def display(self, data, metadata=None, transient=None, update=False) -> None:
        self.kernel.ipython.display_pub.publish(
            data=data, metadata=metadata or {}, transient=transient or {}, update=update
        )

    def _send(self, msg_type: str, content: dict[str, Any]) -> None:
        self._flush()
        kernel = self.kernel
        assert kernel.session is not None
        kernel.session.send(
            kernel.iopub_socket, msg_type, content,
            parent=kernel.get_parent(), ident=kernel._topic(msg_type),
        )  # fmt: skip

    def execute_result(self, execution_count: int, data: dict, metadata: dict) -> None:
        content = {"execution_count": execution_count, "data": data, "metadata": metadata}
        self._send("execute_result", content)

    def clear_output(self, wait: bool) -> None:
        self.kernel.ipython.display_pub.clear_output(wait=wait)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        self._send("error", {"ename": ename, "evalue": evalue, "traceback": traceback})


class KernelSideOf:
    """``runs.base.KernelSide`` for one ScorePKernel."""

    def __init__(self, kernel: Kernel, stock_execute: Callable[..., Awaitable[dict]]):
        self._kernel = kernel
        self._stock_execute = stock_execute
        self.output = KernelCellOutput(kernel)
        # the packages workers' cells began importing, each imported here once (import_ahead)
        self.imports_ahead: set[str] = set()

    @property
    def shell(self) -> Any:
        return self._kernel.shell

    @property
    def pool(self) -> WorkerPool:
        return self._kernel.pool

    @property
    def tasks(self) -> BackgroundTasks:
        return self._kernel.tasks

    @property
    def kept_ranks(self) -> KeptRanks:
        return self._kernel.kept_ranks

    @property
    def panel_frontend(self) -> bool:
        return self._kernel.panel_frontend

    def defer(self, call: Callable[[], None]) -> None:
        self._kernel.defer(call)

    def execute_stock(self, request: CellRequest) -> Awaitable[dict[str, Any]]:
        return self._stock_execute(request.code, **request.stock_args)

    def read_input(self, prompt: str, password: bool) -> str:
        kernel = self._kernel
        kernel._allow_stdin = True  # runs call this only for requests that allow stdin
        return kernel.getpass(prompt) if password else kernel.raw_input(prompt)

    def worker_imported(self, modules: list[str]) -> None:
        self._kernel.worker_imports.update(dict.fromkeys(modules))

    def import_ahead(self, module: str) -> None:
        """The worker's cell began importing ``module``: the kernel and the spare template
        import it meanwhile, both at once. The template's import waited for the kernel's
        before (one import beside the cell's at a time), and a next cell sent back to back
        then waited for the template's: the torch cell of the paper notebook and the next,
        over stock, under a load of 3-4 (four interleaved rounds): +3.8 .. +7.9 s
        one after the other, +2.5 .. +5.6 s at once."""
        if module in self.imports_ahead:
            return
        self.imports_ahead.add(module)
        self.pool.import_started([module])
        if module not in sys.modules:
            threading.Thread(
                target=_import_quietly, args=(module,), name="scorep-import-ahead", daemon=True
            ).start()


def _import_quietly(module: str) -> None:
    """In the kernel, as the worker does; a package that cannot be imported here (a path
    the cell set up) is imported, or fails, when the namespace comes back, as before."""
    try:
        importlib.import_module(module)
    except BaseException:
        log.debug("importing %s ahead of the namespace failed", module, exc_info=True)
