"""A real Slurm cluster of one node on this machine, for MPI tests: Debian's slurm-wlm
(slurmctld, slurmd) and munge, each started by the test with its configuration, state,
sockets and logs in a directory of its own (free ports, the munge socket there), never the
system's. ``why_not()`` says why it cannot run here ("" when it can): it needs root (slurmd
runs the jobs' steps as their users) and the packages, which ``make setup``'s system stamp
installs (``apt-get install slurm-wlm munge``).

``Cluster.allocate(n)`` is ``salloc --no-shell -n N``: a job whose id, given to the kernel
as SLURM_JOB_ID, makes it an "inside an allocation" kernel, whose MPI cells ``srun`` starts
(with PMIx, ``MpiDefault=pmix``)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "salloc", "sinfo")
CONF = """ClusterName=skcluster
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={dir}/munge.socket
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
NodeName={host} CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"""


def why_not() -> str:
    if os.geteuid() != 0:
        return "slurmd runs job steps as their users: it needs root"
    missing = [d for d in DAEMONS if shutil.which(d) is None and not Path("/usr/sbin", d).exists()]
    if missing:
        return (
            f"no {', '.join(missing)} (apt-get install slurm-wlm munge; make setup's system "
            "stamp installs them)"
        )
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    def __init__(self, directory: Path):
        self.dir = directory
        self.conf = directory / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._daemons: list[subprocess.Popen] = []
        self.host = socket.gethostname()

    def start(self, timeout: float = 60.0) -> None:
        d = self.dir
        for sub in ("state", "spool"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        key = d / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        d.chmod(0o700)  # munged checks its key's and socket's directories
        subprocess.run(
            ["munged", "--force", f"--socket={d}/munge.socket", f"--key-file={key}",
             f"--log-file={d}/munged.log", f"--pid-file={d}/munged.pid",
             f"--seed-file={d}/munged.seed"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        self.conf.write_text(CONF.format(
            host=self.host, dir=d, cpus=os.cpu_count() or 1,
            ctld_port=_free_port(), d_port=_free_port(),
        ))  # fmt: skip
        for daemon in ("slurmctld", "slurmd"):
            with open(d / f"{daemon}.out", "wb") as log:  # the child keeps its own copy
                self._daemons.append(subprocess.Popen(
                    [daemon, "-D", "-f", str(self.conf)], stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, env=self.env, start_new_session=True,
                ))  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.sinfo()
            if state in ("idle", "mixed", "allocated"):
                return
            time.sleep(0.2)
        raise RuntimeError(f"the node did not come up (sinfo: {self.sinfo()!r})\n" + self.logs())

    def sinfo(self) -> str:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True,
                             env=self.env, check=False)  # fmt: skip
        return out.stdout.strip()

    def allocate(self, ranks: int) -> str:
        """``salloc --no-shell -n N``: the job id."""
        out = subprocess.run(["salloc", "--no-shell", "-n", str(ranks)], capture_output=True,
                             text=True, env=self.env, check=True, timeout=60)  # fmt: skip
        found = re.search(r"Granted job allocation (\d+)", out.stderr + out.stdout)
        if not found:
            raise RuntimeError(f"salloc: {out.stderr}")
        return found.group(1)

    def release(self, job: str) -> None:
        subprocess.run(["scancel", job], env=self.env, check=False, capture_output=True)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n" + p.read_text(errors="replace")[-2000:]
            for p in sorted(self.dir.glob("*.log")) + sorted(self.dir.glob("*.out"))
        )

    def stop(self) -> None:
        for proc in self._daemons:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        for proc in self._daemons:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        subprocess.run(["munged", f"--socket={self.dir}/munge.socket", "--stop"],
                       check=False, capture_output=True)  # fmt: skip


@contextlib.contextmanager
def running(directory: Path) -> Iterator[Cluster]:
    """A cluster started in ``directory`` (a test fixture's), stopped at the end, also when
    it fails to start."""
    cluster = Cluster(directory)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
