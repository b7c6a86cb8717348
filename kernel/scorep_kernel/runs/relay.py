"""While a cell runs in the worker: publish its outputs as the cell's own, answer its
``input()``, release the namespace packet once the worker has its copy, until the worker
says the cell is done."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scorep_kernel.worker import protocol as msg

if TYPE_CHECKING:
    from scorep_kernel.runs.base import CellOutput
    from scorep_kernel.state import Packet
    from scorep_kernel.worker.client import WorkerProcess

log = logging.getLogger("scorep_kernel")


class OutputRelay:
    def __init__(
        self,
        worker: WorkerProcess,
        output: CellOutput,
        packet: Packet,
        read_input: Callable[[str, bool], str] | None,
        import_ahead: Callable[[str], None] = lambda module: None,
    ):
        self.worker = worker
        self.output = output
        self.packet = packet
        self.read_input = read_input  # None: the frontend does not allow stdin
        self.awaiting_input = False
        self._handlers: dict[type[msg.Message], Callable[[Any], Any]] = {
            msg.Stream: lambda m: output.stream(m.name, m.text),
            msg.Display: lambda m: output.display(m.data, m.metadata, m.transient, m.update),
            msg.ExecuteResult: lambda m: output.execute_result(
                m.execution_count, m.data, m.metadata
            ),
            msg.ClearOutput: lambda m: output.clear_output(m.wait),
            msg.Error: lambda m: output.error(m.ename, m.evalue, m.traceback),
            msg.StateReceived: lambda m: packet.release(),  # the worker has its copy
            msg.Preloaded: lambda m: None,  # a spare's preload, answered late
            msg.ImportStarted: lambda m: import_ahead(m.module),
        }

    async def until_done(self) -> msg.CellDone:
        """Relay until CellDone; ChannelClosed when the worker dies."""
        while True:
            message = await self.worker.recv()
            if isinstance(message, msg.CellDone):
                self.worker.drain_native()  # what it wrote natively before: the cell's
                return message
            if isinstance(message, msg.InputRequest):
                await self._answer_input(message)
            else:
                msg.dispatch(message, self._handlers, "profiled cell")

    async def _answer_input(self, request: msg.InputRequest) -> None:
        """input() in the cell: ask the notebook (blocking, as ipykernel's own input does)."""
        if self.read_input is None:
            reply = msg.InputReply(
                error="input was called, but this frontend does not support input requests."
            )
        else:
            self.awaiting_input = True
            try:
                reply = msg.InputReply(value=self.read_input(request.prompt, request.password))
            except KeyboardInterrupt:
                return  # the worker got the SIGINT too; its input() raises there
            except Exception as e:
                reply = msg.InputReply(error=str(e) or type(e).__name__)
            finally:
                self.awaiting_input = False
        await self.worker.send(reply)
