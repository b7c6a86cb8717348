"""What the kernel's side of an MPI run (``mpi.run``) and a rank
(``mpi.rank``) share: the environment that finds the kernel, the handshake, where
a builtin rank leaves its recording, and which variables are each rank's own. (Kept apart
from the rank's module, which imports the worker: the kernel never does.)"""

from __future__ import annotations

import os
import socket
from pathlib import Path

ENV_ADDRESS = "SCOREP_KERNEL_MPI_ADDRESS"  # host:port of the run's listener
ENV_TOKEN = "SCOREP_KERNEL_MPI_TOKEN"  # the run's token, hex
HANDSHAKE = b"SKMPI1"
TOKEN_BYTES = 32
RANKS_DIR = ".ranks"  # in the experiment: the ranks' recordings until they are merged
RANKS_JSON = "ranks.json"  # there: the kernel's facts for the merge (hosts, clocks)
RANK_FILE = str(Path(__file__).resolve().with_name("rank.py"))
# Each rank's own: the launcher's and MPI's variables, Score-P's, and LD_PRELOAD (Score-P's
# bindings set it). The namespace's environment never overwrites them in a rank, and a
# rank's never reaches the kernel (whose next launcher would inherit them).
ENVIRON_IGNORE = (
    "SCOREP_", "OMPI_", "PMIX_", "PMI_", "PRTE_", "OPAL_", "ORTE_", "HYDRA_", "I_MPI_",
    "MPICH_", "MV2_", "SLURM_", "LD_PRELOAD",
)  # fmt: skip
NO_OUT_OF_BAND = 1 << 62  # state.pack's threshold: every buffer in band
# "1": the kernel treats every rank as on another host (the namespace in band, clocks
# probed, the node sampled by its first rank), to try and test the multi-host paths on one
ENV_AS_REMOTE = "SCOREP_KERNEL_MPI_AS_REMOTE"
# A rank's process location group, as Score-P names it (and the builtin merge writes it)
RANK_GROUP_NAME = "MPI Rank {rank}"


def rank_file(exp_dir: str | os.PathLike, rank: int) -> Path:
    """Where rank ``rank`` of a builtin run leaves its recording for the merge."""
    return Path(exp_dir) / RANKS_DIR / f"rank{rank}.pkl"


def boot_id() -> str:
    """This host's boot id: processes sharing it share CLOCK_MONOTONIC and /proc."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return socket.gethostname()
