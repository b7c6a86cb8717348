"""The ``mpi`` setting of a cell, and the launcher command that starts its ranks.

A cell runs as N ranks when its ``scorep`` metadata holds ``"mpi": {"ranks": N, ...}``
(written by hand, or by the panel's *Profile as MPI ranks...* dialog) or it starts with
``%%scorep_mpi -n N [launcher args]``. The keys::

    ranks     number of processes (1..MAX_RANKS)
    launcher  "mpirun" | "mpiexec" | "srun" | a path; absent: see ``default_launcher``
    args      extra launcher arguments (a list, or one string split like a shell does)
    gather    names whose value on every rank comes back as a list (rank order)
    timeout   seconds the ranks may take for a cell (absent/null: no limit); past it the
              run stops and names the ranks still running
    fresh     true: the cell runs in ranks started for it, which end with it; by default
              (builtin backend) the ranks stay up for the next MPI cell (mpi.kept_ranks)

Kernel-wide defaults come from the environment (``SCOREP_KERNEL_MPI_LAUNCHER``,
``SCOREP_KERNEL_MPI_ARGS``); the cell's keys win.

The launcher is the system's, never one of our own: Open MPI's ``mpirun`` by default,
``srun`` when the kernel runs inside a Slurm allocation (``SLURM_JOB_ID`` is set and
``srun`` is on PATH), else ``mpiexec``. What each gets besides ``-n N`` and the user's
arguments (``launch_command``):

- Open MPI: ``-x NAME`` for each variable the ranks need (Open MPI forwards no environment
  to other hosts by itself), ``--allow-run-as-root`` when the kernel runs as root
  (containers, CI; mpirun refuses otherwise), and ``--oversubscribe`` when N exceeds this
  machine's cores and the user named no hosts (mpirun refuses more ranks than cores, while
  a notebook user trying 4 ranks on a 2-core laptop wants them run), then also
  ``--bind-to none`` (ranks bound to cores they must share start and run slower: 4 ranks
  on 2 cores started in 3.4 s bound, 2.3 s unbound);
- Slurm's ``srun``: ``--kill-on-bad-exit=1``, so a rank that dies ends the step instead of
  leaving the others waiting in MPI (srun exports the whole environment by default);
- MPICH / Intel MPI (Hydra ``mpiexec``) and anything else: nothing (Hydra forwards the
  environment by default).
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scorep_kernel.settings import MpiSettings, SettingsError

KEY = "mpi"
MAX_RANKS = 4096
LAUNCHERS = ("mpirun", "mpiexec", "srun")
ENV_LAUNCHER = "SCOREP_KERNEL_MPI_LAUNCHER"
ENV_ARGS = "SCOREP_KERNEL_MPI_ARGS"
# Launcher arguments that place ranks on hosts: with them the user decides, and the ranks
# may run elsewhere (the kernel then listens on every interface, see mpi.run).
HOST_ARGS = (
    "-H", "--host", "-host", "--hostfile", "-hostfile", "--machinefile", "-machinefile",
    "-f", "--default-hostfile", "-hosts", "--hosts",
)  # fmt: skip

FIELDS = {
    "ranks": "number of processes (a whole number, 1 to 4096)",
    "launcher": "mpirun | mpiexec | srun | a path (default: srun inside Slurm, else mpirun)",
    "args": "extra launcher arguments (a list, or one string)",
    "gather": "names whose values on every rank come back as a list",
    "timeout": "seconds the ranks may take for a cell (null: no limit)",
    "fresh": "true: ranks started for this cell only (default: they stay up between cells)",
}


def _words(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError as e:
            raise SettingsError(f"{where}.{key}: cannot split {value!r} ({e})") from None
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise SettingsError(f"{where}.{key} must be a list of strings (or one string), not {value!r}")


def _names(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    names = _words(value, "gather", where)
    for name in names:
        if not name.isidentifier():
            raise SettingsError(f"{where}.gather: {name!r} is not a variable name")
    return names


def check_mpi(value: Any, where: str = '"scorep".mpi') -> MpiSettings:
    """The ``mpi`` setting checked; a SettingsError names the key and what it takes."""
    if isinstance(value, MpiSettings):
        return value
    if not isinstance(value, Mapping):
        raise SettingsError(
            f'{where} must be an object such as {{"ranks": 4}}, not {value!r}. Its keys: '
            + "; ".join(f"{k}: {v}" for k, v in FIELDS.items())
        )
    unknown = [k for k in value if k not in FIELDS]
    if unknown:
        raise SettingsError(
            f"{where} has the unknown key {unknown[0]!r}; its keys are {', '.join(FIELDS)}"
        )
    ranks = value.get("ranks")
    if isinstance(ranks, bool) or not isinstance(ranks, int) or not 1 <= ranks <= MAX_RANKS:
        raise SettingsError(
            f"{where}.ranks must be a whole number from 1 to {MAX_RANKS}, not {ranks!r}"
        )
    launcher = value.get("launcher")
    if launcher is not None and (not isinstance(launcher, str) or not launcher.strip()):
        raise SettingsError(
            f"{where}.launcher must be {', '.join(LAUNCHERS)} or a path, not {launcher!r}"
        )
    timeout = value.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
    ):
        raise SettingsError(f"{where}.timeout must be seconds > 0 or null, not {timeout!r}")
    fresh = value.get("fresh", False)
    if not isinstance(fresh, bool):
        raise SettingsError(f"{where}.fresh must be true or false, not {fresh!r}")
    return MpiSettings(
        ranks=ranks,
        launcher=launcher.strip() if launcher else None,
        args=_words(value.get("args", ()), "args", where),
        gather=_names(value.get("gather", ()), where),
        timeout=float(timeout) if timeout is not None else None,
        fresh=fresh,
    )


MAGIC = "scorep_mpi"
MAGIC_USAGE = (
    "%%scorep_mpi -n N [--launcher mpirun|mpiexec|srun|PATH] [--gather a,b] [--timeout S] "
    "[--fresh] [--] [launcher arguments]"
)


def parse_mpi_magic(line: str) -> MpiSettings:
    """``%%scorep_mpi``'s line. Our options are read up to ``--``; every other word (and
    all after ``--``) is the launcher's, in order: ``-n 4 --oversubscribe`` passes
    ``--oversubscribe`` to mpirun."""
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise SettingsError(f"%%scorep_mpi: cannot split the line ({e}). {MAGIC_USAGE}") from None
    values: dict[str, Any] = {}
    rest: list[str] = []
    i = 0
    ours = {"-n": "ranks", "-np": "ranks", "--ranks": "ranks", "--launcher": "launcher",
            "--gather": "gather", "--timeout": "timeout"}  # fmt: skip
    while i < len(words):
        word = words[i]
        if word == "--":
            rest += words[i + 1 :]
            break
        key, eq, inline = word.partition("=")
        if word == "--fresh":
            values["fresh"] = True
        elif key in ours:
            if eq:
                text = inline
            elif i + 1 < len(words):
                i += 1
                text = words[i]
            else:
                raise SettingsError(f"%%scorep_mpi: {word} needs a value. {MAGIC_USAGE}")
            name = ours[key]
            if name == "ranks":
                try:
                    values[name] = int(text)
                except ValueError:
                    raise SettingsError(
                        f"%%scorep_mpi: {word} needs a whole number, not {text!r}. {MAGIC_USAGE}"
                    ) from None
            elif name == "timeout":
                try:
                    values[name] = float(text)
                except ValueError:
                    raise SettingsError(
                        f"%%scorep_mpi: --timeout needs seconds, not {text!r}. {MAGIC_USAGE}"
                    ) from None
            else:
                values[name] = text
        else:
            rest.append(word)
        i += 1
    if "ranks" not in values:
        raise SettingsError(f"%%scorep_mpi: say how many ranks with -n N. {MAGIC_USAGE}")
    if rest:
        values["args"] = rest
    return check_mpi(values, "%%scorep_mpi")


# --- the launcher -------------------------------------------------------------------------


class LauncherError(SettingsError):
    """No usable launcher: the message says what was looked for and how to get one."""


def in_slurm_allocation(environ: Mapping[str, str]) -> bool:
    return bool(environ.get("SLURM_JOB_ID") or environ.get("SLURM_JOBID"))


def default_launcher(environ: Mapping[str, str]) -> str:
    """srun inside a Slurm allocation, else Open MPI's mpirun, else mpiexec."""
    chosen = environ.get(ENV_LAUNCHER, "").strip()
    if chosen:
        return chosen
    path = environ.get("PATH")
    if in_slurm_allocation(environ) and shutil.which("srun", path=path):
        return "srun"
    for name in ("mpirun", "mpiexec"):
        if shutil.which(name, path=path):
            return name
    raise LauncherError(
        "No MPI launcher found: neither mpirun nor mpiexec is on the kernel's PATH (and no "
        "Slurm allocation with srun). Install an MPI (Debian/Ubuntu: `apt-get install "
        "openmpi-bin libopenmpi-dev`), load your site's MPI module before starting Jupyter, "
        'or name the launcher: "mpi": {"ranks": 4, "launcher": "/path/to/mpiexec"} in the '
        f"cell's metadata, or {ENV_LAUNCHER}."
    )


@functools.lru_cache(maxsize=8)
def launcher_kind(path: str) -> str:
    """ "openmpi" | "hydra" (MPICH, Intel MPI) | "srun" | "other", from the name and
    ``--version``."""
    if os.path.basename(path) == "srun":
        return "srun"
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "other"
    text = out.stdout + out.stderr
    if "Open MPI" in text or "OpenRTE" in text or "Open RTE" in text or "PRRTE" in text:
        return "openmpi"
    if "HYDRA" in text or "MPICH" in text or "Intel(R) MPI" in text:
        return "hydra"
    return "other"


@dataclass
class LaunchPlan:
    """The launcher's part of the command line (the rank's Python command follows)."""

    launcher: str  # the resolved path
    kind: str  # see launcher_kind
    argv: list[str]
    remote: bool  # ranks may run on other hosts (srun, or hosts named)
    env: dict[str, str] = field(default_factory=dict)  # set for the launcher only


def names_hosts(args: tuple[str, ...] | list[str]) -> bool:
    return any(a in HOST_ARGS or a.split("=", 1)[0] in HOST_ARGS for a in args)


def launch_command(
    settings: MpiSettings,
    forward: list[str],
    environ: Mapping[str, str] | None = None,
    cpu_count: int | None = None,
    is_root: bool | None = None,
) -> LaunchPlan:
    """The launcher command for ``settings``; ``forward`` names the environment variables
    every rank needs (passed with -x to Open MPI)."""
    environ = os.environ if environ is None else environ
    name = settings.launcher or default_launcher(environ)
    path = shutil.which(name, path=environ.get("PATH")) if os.sep not in name else name
    if not path or not os.access(path, os.X_OK):
        raise LauncherError(
            f"The MPI launcher {name!r} was not found on the kernel's PATH. Install an MPI "
            "(Debian/Ubuntu: `apt-get install openmpi-bin libopenmpi-dev`), load your site's "
            "MPI module before starting Jupyter, or set the launcher's full path in the "
            f'cell\'s metadata ("mpi": {{"launcher": ...}}) or {ENV_LAUNCHER}.'
        )
    kind = launcher_kind(path)
    user = list(settings.args)
    if not settings.args and environ.get(ENV_ARGS, "").strip():
        user = shlex.split(environ[ENV_ARGS])
    argv = [path, "-n", str(settings.ranks)]
    hosts = names_hosts(user)
    if kind == "openmpi":
        root = (os.geteuid() == 0) if is_root is None else is_root
        if root and "--allow-run-as-root" not in user:
            argv.append("--allow-run-as-root")
        cores = cpu_count if cpu_count is not None else (os.cpu_count() or 1)
        if (
            settings.ranks > cores
            and not hosts
            and not in_slurm_allocation(environ)
            and "--oversubscribe" not in user
            and not any(a.startswith("--map-by") or a == "--nooversubscribe" for a in user)
        ):
            argv.append("--oversubscribe")
            if not any(a.startswith("--bind-to") for a in user):
                # bound to cores, more ranks than cores share them: 4 ranks on 2 cores
                # started in 3.4 s bound, 2.3 s unbound here (benchmarks/mpi_cell.py)
                argv += ["--bind-to", "none"]
        for var in forward:
            argv += ["-x", var]
    elif kind == "srun" and not any(a.startswith("--kill-on-bad-exit") or a == "-K" for a in user):
        argv.append("--kill-on-bad-exit=1")
    argv += user
    return LaunchPlan(path, kind, argv, remote=hosts or kind == "srun")


def planned_hosts(args: tuple[str, ...] | list[str], ranks: int) -> dict[int, str]:
    """Where Open MPI puts each rank for ``-H a:2,b:2`` (``--host``) by its default
    mapping (by slot, in the order named; a host without ``:slots`` has one), to name the
    host of a rank that never started. Empty when the arguments choose otherwise (a
    hostfile, --map-by, a rankfile, more ranks than slots) or name no hosts."""
    hosts: list[str] = []
    words = list(args)
    for i, word in enumerate(words):
        key, eq, inline = word.partition("=")
        if key in ("--map-by", "-map-by", "--rankfile", "-rf", "--npernode", "-npernode",
                   "--ppr", "--hostfile", "-hostfile", "--machinefile", "-machinefile"):  # fmt: skip
            return {}
        if key in ("-H", "--host", "-host"):
            value = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
            for item in value.split(","):
                name, _, slots = item.partition(":")
                if name:
                    hosts += [name] * (int(slots) if slots.isdigit() else 1)
    if len(hosts) < ranks:
        return {}
    return dict(enumerate(hosts[:ranks]))
