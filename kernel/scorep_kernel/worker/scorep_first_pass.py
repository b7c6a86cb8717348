"""The first pass of ``python -m scorep``, done once per kernel instead of at every worker's
start, and without Score-P's constructor, so that a worker started ahead measures nothing
until its run starts.

The bindings start a program in two passes: the first asks ``scorep-config`` for the
adapters' initialisation code, compiles and links it into a small library
(``libscorep_init_subsystem-<python>.so`` in a temporary directory), sets ``LD_PRELOAD`` and
``LD_LIBRARY_PATH`` and re-executes Python; the second (``SCOREP_PYTHON_BINDINGS_INITIALISED=
true``) runs the script. The first pass costs ~0.9 s (gcc) per process; here it runs once,
in a process of its own with the worker's interpreter and the bindings' own code
(``scorep.subsystem.init_environment``), its library is kept for later kernels
(``cache_root()``, keyed on the interpreter, Score-P's scorep-config and the options), and
every Score-P worker of the same settings starts straight at the second pass with the
environment it left.

``LD_PRELOAD`` loses ``libscorep_constructor.so``: that library's only job is to call
``SCOREP_InitMeasurement`` when the process loads, which starts the measurement (the
program region, the experiment directory) at the worker's start. Without it Score-P stays
uninitialised until the worker calls ``SCOREP_InitMeasurement`` at the run's start
(worker.scorep_session), with ``SCOREP_EXPERIMENT_DIRECTORY`` set then: a spare started
when the notebook opened makes no folder and its profile does not hold the wait
(``deferred``). Should the first pass fail here, the worker runs the bindings' own first
pass as before (and says why in the log); ``SCOREP_KERNEL_SCOREP_FIRST_PASS=0`` in the
kernel's environment asks for that (benchmarks/scorep_back_to_back.py measures both).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("scorep_kernel")

CONSTRUCTOR = "libscorep_constructor"
DONE_VAR = "SCOREP_PYTHON_BINDINGS_INITIALISED"
TEMP_VAR = "SCOREP_PYTHON_BINDINGS_TEMP_DIR"  # the bindings remove it at the script's end
# The bindings' own options: the other options starting with "-" go to scorep-config.
_OWN = ("--keep-files", "--verbose", "-v", "--nopython", "--noinstrumenter")
_OWN_PREFIXES = ("--instrumenter-type", "--instrumenter-file")

# Run with the worker's interpreter: the bindings' first pass, reporting what it set.
_SCRIPT = """
import json, os, sys
import scorep.subsystem
before = dict(os.environ)
scorep.subsystem.init_environment(json.loads(sys.argv[1]), keep_files=True)
print(json.dumps({k: v for k, v in os.environ.items() if before.get(k) != v}))
"""


@dataclass(frozen=True)
class FirstPass:
    """What the bindings' first pass set, for the second pass to start from."""

    env: dict[str, str] = field(default_factory=dict)
    lib_dir: str = ""  # the compiled library (kept in cache_root(), or removed at exit)
    deferred: bool = False  # the constructor was left out: measurement starts at the run

    def apply(self, env: dict[str, str]) -> dict[str, str]:
        out = {**env, **self.env, DONE_VAR: "true"}
        out.pop(TEMP_VAR, None)
        if self.deferred:
            # Told at the run's start (StartRun); a directory named now would be the
            # user's own, which a spare must never touch.
            out.pop("SCOREP_EXPERIMENT_DIRECTORY", None)
        return out


def config_args(binding_args: tuple[str, ...] | list[str]) -> list[str]:
    """The options ``python -m scorep`` passes to scorep-config, as its parser picks them."""
    out = []
    for arg in binding_args:
        if arg == "--":
            break
        if arg in _OWN or arg.startswith(_OWN_PREFIXES) or not arg.startswith("-"):
            continue
        out.append("--mpp=mpi" if arg == "--mpi" else arg)
    if "--user" not in out:
        out.append("--user")  # as init_environment adds it
    return out


def enabled() -> bool:
    return os.environ.get("SCOREP_KERNEL_SCOREP_FIRST_PASS", "1").strip().lower() not in (
        "0", "false", "no", "off",
    )  # fmt: skip


_done: dict[tuple[str, tuple[str, ...], str], FirstPass | None] = {}
_locks: dict[tuple[str, tuple[str, ...], str], asyncio.Lock] = {}


async def prepared(
    python: str, binding_args: tuple[str, ...] | list[str], env: dict[str, str]
) -> FirstPass | None:
    """The first pass for these settings, run once (None: it failed; the bindings' own
    first pass runs in the worker then)."""
    if not enabled():
        return None
    config = tuple(config_args(binding_args))
    key = (python, config, env.get("PATH", ""))
    if key in _done:
        return _done[key]
    lock = _locks.setdefault(key, asyncio.Lock())
    async with lock:
        if key not in _done:
            _done[key] = await asyncio.to_thread(_cached_first_pass, python, list(config), env)
    return _done[key]


def cache_root() -> Path:
    """Where compiled first passes are kept between kernels (``SCOREP_KERNEL_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/scorep-kernel``, else ``~/.cache/scorep-kernel``)."""
    explicit = os.environ.get("SCOREP_KERNEL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "scorep-kernel"


def _cache_key(python: str, config: list[str], env: dict[str, str]) -> str | None:
    """What the first pass depends on: the interpreter, Score-P's installation (its
    scorep-config, by path and modification time), the options and the loader's variables
    it extends; None without Score-P."""
    scorep_config = shutil.which("scorep-config", path=env.get("PATH") or None)
    if not scorep_config:
        return None
    parts = [python, *config, env.get("LD_PRELOAD", ""), env.get("LD_LIBRARY_PATH", "")]
    for file in (python, scorep_config):
        try:
            real = os.path.realpath(file)
            parts += [real, str(os.stat(real).st_mtime_ns)]
        except OSError:
            return None
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def _cached_first_pass(python: str, config: list[str], env: dict[str, str]) -> FirstPass | None:
    """The first pass compiled by an earlier kernel for the same settings, else run now and
    kept for the next kernels (~1 s of gcc each, otherwise)."""
    key = _cache_key(python, config, env)
    folder = cache_root() / "first-pass" / key if key else None
    if folder is not None:
        try:
            data = json.loads((folder / "first_pass.json").read_text())
            if all(Path(folder, lib).exists() for lib in data["libs"]):
                return FirstPass(dict(data["env"]), str(folder), bool(data["deferred"]))
        except (OSError, ValueError, KeyError, TypeError):
            pass
    ran = _run_first_pass(python, config, env)
    if ran is None or folder is None or not ran.lib_dir:
        return ran
    return _kept(ran, folder) or ran


def _kept(first: FirstPass, folder: Path) -> FirstPass | None:
    """``first``'s library copied to ``folder`` (atomically: a folder renamed into place)."""
    try:
        libs = [p.name for p in Path(first.lib_dir).glob("*.so")]
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".staging-"))
        for name in libs:
            shutil.copy2(Path(first.lib_dir, name), staging / name)
        paths = first.env.get("LD_LIBRARY_PATH", "").split(os.pathsep)
        env = dict(first.env)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            str(folder) if p == first.lib_dir else p for p in paths
        )
        record = {"env": env, "deferred": first.deferred, "libs": libs}
        (staging / "first_pass.json").write_text(json.dumps(record))
        try:
            os.rename(staging, folder)
        except OSError:  # another kernel kept it first: theirs is the same
            shutil.rmtree(staging, ignore_errors=True)
        return FirstPass(env, str(folder), first.deferred)
    except OSError as e:
        log.info("Score-P's first pass is not kept between kernels (%s)", e)
        return None


def defers_measurement(binding_args: tuple[str, ...] | list[str], path: str) -> bool:
    """Whether the measurement will start at the run, not at the process's start: the
    first pass here can leave the constructor out (a quick scorep-config question)."""
    if not enabled():
        return False
    return CONSTRUCTOR in _preload_libs(tuple(config_args(binding_args)), path)


@functools.lru_cache(maxsize=8)
def _preload_libs(config: tuple[str, ...], path: str) -> str:
    scorep_config = shutil.which("scorep-config", path=path or None)
    if not scorep_config:
        return ""
    try:
        out = subprocess.run(
            [scorep_config, *config, "--preload-libs"],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout if out.returncode == 0 else ""


def _run_first_pass(python: str, config: list[str], env: dict[str, str]) -> FirstPass | None:
    clean = {k: v for k, v in env.items() if k not in (DONE_VAR, TEMP_VAR)}
    try:
        out = subprocess.run(
            [python, "-c", _SCRIPT, json.dumps(config)],
            capture_output=True, text=True, timeout=300, check=False, env=clean,
        )  # fmt: skip
        changed = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        changed = None
    if not isinstance(changed, dict) or "LD_PRELOAD" not in changed:
        tail = out.stderr.strip()[-500:] if "out" in locals() else ""
        log.warning("Score-P's first pass failed here; workers run their own: %s", tail)
        return None
    lib_dir = str(changed.get(TEMP_VAR, ""))
    if lib_dir:
        atexit.register(shutil.rmtree, lib_dir, True)
    preload = str(changed["LD_PRELOAD"]).split()
    kept = [lib for lib in preload if not os.path.basename(lib).startswith(CONSTRUCTOR)]
    changed["LD_PRELOAD"] = " ".join(kept)
    return FirstPass(
        env={str(k): str(v) for k, v in changed.items() if k != TEMP_VAR},
        lib_dir=lib_dir,
        deferred=len(kept) < len(preload),
    )
