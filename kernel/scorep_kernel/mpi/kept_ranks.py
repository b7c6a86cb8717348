"""The MPI ranks the kernel keeps between cells (builtin backend), as ipyparallel keeps its
engines: ``%%scorep_mpi -n 4`` starts 4 ranks once, and the next MPI cell asking for the
same ranks (count, launcher and its arguments, %%scorep_env) runs in them again, each rank
with its namespace and its MPI world as the last cell left them. The cell's profile is
still its own experiment: each cell starts and stops the ranks' measurement.

What ends kept ranks: ``%scorep_mpi stop``, a cell with ``--fresh`` (it runs in ranks
started for it, which end with it), a cell asking for other ranks, a Score-P cell
(Score-P measures a process from its start to its end, so its cells always get new
ranks), a cell that had to stop every rank (a rank died, the timeout, an interrupt the
ranks ignored), and the kernel's shutdown. A rank that died between cells is found when
the next cell begins: all ranks are started anew, and the cell says so (MPI cannot replace
one rank of a running world)."""

from __future__ import annotations

import logging

from scorep_kernel.mpi.merger import Merger
from scorep_kernel.mpi.rank_pool import PoolKey, RankPool

log = logging.getLogger("scorep_kernel")


class KeptRanks:
    """The kernel's slot for one kept RankPool."""

    def __init__(self) -> None:
        self.pool: RankPool | None = None
        self.merger = Merger()  # merges the kept ranks' recordings, cell after cell

    def take(self, key: PoolKey) -> tuple[RankPool | None, str]:
        """The kept pool when it serves ``key`` (it leaves the slot while a run holds it),
        else None and why the kept ranks cannot serve ("" when none were up). A pool that
        cannot serve is killed here."""
        pool, self.pool = self.pool, None
        if pool is None:
            return None, ""
        assert pool.key is not None
        why = pool.lost() or pool.key.differs(key)
        if why:
            pool.kill()
            pool.disconnect()
            return None, why
        return pool, ""

    def keep(self, pool: RankPool) -> None:
        if self.pool is not None and self.pool is not pool:
            self.kill()
        self.pool = pool

    async def close(self) -> str:
        """End the kept ranks gently; what was ended ("" when none were up)."""
        pool, self.pool = self.pool, None
        await self.merger.close()
        if pool is None:
            return ""
        code = await pool.close()
        log.info("kept MPI ranks ended (launcher status %s)", code)
        return f"{pool.n} MPI rank{'s' if pool.n != 1 else ''} ({pool.cells} cells)"

    def kill(self) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.kill()
            pool.disconnect()

    def describe(self) -> str:
        pool = self.pool
        if pool is None:
            return "No MPI ranks are kept up."
        hosts = sorted({r.hello.hostname for r in pool.ranks.values()})
        pids = ", ".join(str(r.hello.pid) for _, r in sorted(pool.ranks.items()))
        return (
            f"{pool.n} MPI ranks kept up on {', '.join(hosts)} (pids {pids}), "
            f"{pool.cells} cells run; `%scorep_mpi stop` ends them."
        )
