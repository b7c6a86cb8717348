"""The merge of a builtin MPI run's recordings (``mpi.merge``), in a process of its own
after the reply: one process per run for ranks started for it, or one process kept up
beside kept ranks (``mpi.merge --serve``), which has paid its imports (~0.3 s of CPU)
before the next cell, so cells sent back to back do not pay them for the one before."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

from scorep_kernel.worker.client import _KERNEL_DIR


def _env() -> dict[str, str]:
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([_KERNEL_DIR, *paths])}


async def merge_once(exp_dir: Path) -> tuple[int, list[str]]:
    """(exit status, the last lines of its stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "scorep_kernel.mpi.merge", str(exp_dir),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=_env(),
    )  # fmt: skip
    _, err = await proc.communicate()
    return proc.returncode or 0, err.decode(errors="replace").strip().splitlines()[-5:]


class Merger:
    """``mpi.merge --serve``, started at the first merge, one merge at a time."""

    def __init__(self) -> None:
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def merge(self, exp_dir: Path) -> tuple[int, list[str]]:
        async with self._lock:
            proc = self._proc
            if proc is None or proc.returncode is not None:
                proc = self._proc = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "scorep_kernel.mpi.merge", "--serve",
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.DEVNULL,  # failures go into the manifest
                    env=_env(),
                )  # fmt: skip
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(f"{exp_dir}\n".encode())
                await proc.stdin.drain()
                line = await proc.stdout.readline()
            except (ConnectionError, OSError):
                line = b""
            if not line.strip():
                code = await proc.wait()
                self._proc = None
                return code or 1, [f"the merging process ended (status {code})"]
            return int(line), []

    async def close(self) -> None:
        """After the merge under way, if any."""
        async with self._lock:
            proc, self._proc = self._proc, None
            if proc is not None and proc.returncode is None:
                assert proc.stdin is not None
                proc.stdin.close()  # it ends at the end of its input
                try:
                    await asyncio.wait_for(proc.wait(), 5.0)
                except asyncio.TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
