"""Work the kernel starts and does not await at once (a spare worker's start and preloads,
waiting for a run's files): each task is kept until it ends (asyncio holds only weak
references to tasks), its failure is logged with what it was doing, and the kernel waits
for what is left when it shuts down."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger("scorep_kernel")


class BackgroundTasks:
    def __init__(self) -> None:
        self._tasks: dict[asyncio.Task[Any], str] = {}

    def spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; ``what`` names it in the log if it fails."""
        task = asyncio.ensure_future(coro)
        self._tasks[task] = what
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        what = self._tasks.pop(task, "background work")
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("%s failed: %s", what, error, exc_info=error)

    def pending(self) -> list[str]:
        return [what for task, what in self._tasks.items() if not task.done()]

    async def drain(self, timeout: float) -> list[str]:
        """Wait up to ``timeout`` seconds for the tasks still running; cancel the rest.
        Returns what had to be cancelled."""
        tasks = [t for t in self._tasks if not t.done()]
        if not tasks:
            return []
        _done, late = await asyncio.wait(tasks, timeout=timeout)
        names = [self._tasks.get(t, "background work") for t in late]
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)
        return names
