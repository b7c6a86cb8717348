"""What is particular to runs measured by Score-P itself: the environment a Score-P user
would choose for a notebook cell, the directory Score-P needs before it starts, what the
manifest records of Score-P's configuration, and Score-P's own messages in words.

Defaults (a variable set in the kernel's environment or with %%scorep_env wins):

- ``SCOREP_ENABLE_TRACING=true``: the panel draws the OTF2 trace (Score-P's default is a
  profile only).
- ``SCOREP_TOTAL_MEMORY=256M``: Score-P's 16 MB default holds ~1M events; a cell that
  trains a model for a few steps makes several million, and a buffer flush in the middle of
  the cell distorts its timing (Score-P reserves the memory; pages are touched as used).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from scorep_kernel import experiment
from scorep_kernel.settings import SettingsError

DEFAULTS = {"SCOREP_ENABLE_TRACING": "true", "SCOREP_TOTAL_MEMORY": "256M"}
CONFIG_FILE = "scorep.cfg"  # Score-P writes its effective configuration here
MANIFEST_MD = "MANIFEST.md"  # and describes its files here
MESSAGE_PREFIX = "[Score-P]"


def worker_env(base: Mapping[str, str], user: Mapping[str, str]) -> dict[str, str]:
    """The environment of a Score-P worker: our defaults, under the kernel's environment,
    under %%scorep_env."""
    return {**DEFAULTS, **base, **user}


def written_files(exp_dir: Path) -> dict[str, str]:
    """The files a Score-P run left in its experiment directory, as the manifest's
    ``files`` names them ({"otf2": "traces.otf2", ...}); Score-P writes them at exit."""
    return {
        name: filename
        for name, filename in (
            ("otf2", experiment.OTF2_ANCHOR),
            ("cubex", experiment.CUBEX),
            ("scorep_config", CONFIG_FILE),
            ("scorep_manifest", MANIFEST_MD),
        )
        if (exp_dir / filename).exists()
    }


def make_parent(exp_dir: Path) -> None:
    """Score-P creates only the last level of SCOREP_EXPERIMENT_DIRECTORY."""
    try:
        exp_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SettingsError(
            f"The experiment directory cannot be made at {e.filename or exp_dir.parent} "
            f"({e.strerror or type(e).__name__}). Choose a writable directory: the cell's "
            "metadata 'experiment_dir', the JupyterLab setting 'Experiment directory', or "
            "SCOREP_EXPERIMENT_DIRECTORY (%%scorep_env)."
        ) from None


@functools.lru_cache(maxsize=4)
def version(config: str | None = None) -> str:
    """Score-P's version (``scorep-config --version``), e.g. "8.4"; "" when unknown."""
    config = config or shutil.which("scorep-config")
    if not config:
        return ""
    try:
        out = subprocess.run(
            [config, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip().removeprefix("Score-P").strip()


def read_config(exp_dir: Path) -> dict[str, str]:
    """Score-P's configuration as it wrote it (``scorep.cfg``: ``SCOREP_X=value`` lines)."""
    try:
        text = (exp_dir / CONFIG_FILE).read_text(errors="replace")
    except OSError:
        return {}
    config = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq and key.strip().startswith("SCOREP_"):
            config[key.strip()] = value.strip().strip('"').strip("'")
    return config


# (pattern in Score-P's or the bindings' output, what it means and what to do)
_EXPLAINED: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"Out of memory|No free memory page|Increase SCOREP_TOTAL_MEMORY", re.I),
        "Score-P ran out of its measurement memory (SCOREP_TOTAL_MEMORY={memory}){flushed}. "
        "Give it more for the next run with a cell `%%scorep_env` holding "
        "`SCOREP_TOTAL_MEMORY=1G`, or record less: a filter file (SCOREP_FILTERING_FILE) or "
        "`--noinstrumenter` with user regions (%%scorep_python_binding_arguments).",
    ),
    (
        re.compile(r"filter(ing)? file|SCOREP_FILTERING_FILE", re.I),
        "Score-P could not use the filter file (SCOREP_FILTERING_FILE={filter}): check that "
        "the path exists for the kernel and that its rules follow Score-P's syntax "
        "(SCOREP_REGION_NAMES_BEGIN / EXCLUDE ... / SCOREP_REGION_NAMES_END).",
    ),
    (
        re.compile(r"cannot find -l(unwind|bfd)|LinkError|ld returned", re.I),
        "Score-P's Python bindings could not build their start-up library: the linker did "
        "not find a library Score-P was built with (on Debian/Ubuntu: `apt-get install "
        "libunwind-dev binutils-dev`; elsewhere the -dev package of the library named above).",
    ),
    (
        re.compile(r"scorep-config.*(not found|No such file)", re.I),
        "Score-P's Python bindings did not find `scorep-config`: put Score-P's bin/ on the "
        "kernel's PATH (e.g. `module load scorep` before starting Jupyter).",
    ),
    (
        re.compile(r"Can't create experiment directory", re.I),
        "Score-P could not create its experiment directory: check that the experiment "
        "directory's parent is writable (experiment_dir, SCOREP_EXPERIMENT_DIRECTORY).",
    ),
)


def explain(lines: Iterable[str], env: Mapping[str, str]) -> list[str]:
    """Sentences (cause and fix) for what Score-P said in ``lines``, each once."""
    text = "\n".join(lines)
    flushed = " and flushed its trace buffer during the run (the flush shows as TRACE BUFFER FLUSH and distorts the timing there)" if "buffer flush" in text.lower() else ""  # fmt: skip
    values = {
        "memory": env.get("SCOREP_TOTAL_MEMORY", "16M (Score-P's default)"),
        "filter": env.get("SCOREP_FILTERING_FILE", "unset"),
        "flushed": flushed,
    }
    return [words.format(**values) for pattern, words in _EXPLAINED if pattern.search(text)]


class ScorePLinesOut:
    """A stream of a Score-P worker's native stderr with Score-P's own lines taken out.
    They reach the user in words (the manifest's ``scorep_messages`` and ``notes``, the
    panel's Score-P verdicts), not raw in the cell's output, where they also came or not
    by a race: Score-P finalizes after the run's last cell was sent back and prints its
    CUBE4 writer's warnings then, while the kernel takes the namespace in. Text is passed
    on at once except a line's start that may still turn out to be Score-P's (a chunk that
    ends in ``[Sco``): progress bars' ``\r`` lines are never held back."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        text, self._held = self._held + text, ""
        out: list[str] = []
        for part in text.splitlines(keepends=True):
            if part.endswith(("\n", "\r")):
                if MESSAGE_PREFIX not in part:
                    out.append(part)
            elif MESSAGE_PREFIX in part or (
                part.lstrip() and MESSAGE_PREFIX.startswith(part.lstrip())
            ):
                self._held = part  # its end comes with the next chunk
            else:
                out.append(part)
        return "".join(out)


def scorep_messages(lines: Iterable[str]) -> list[str]:
    """Score-P's own lines (``[Score-P] ...``) among a process's output."""
    return [line.strip() for line in lines if MESSAGE_PREFIX in line][-20:]


class WorkerMetrics:
    """System metrics of a Score-P run, sampled by the kernel from outside the worker (the
    worker's own threads would show in Score-P's trace): CPU, the worker tree's memory,
    I/O and network, into the experiment's metrics files as the builtin tracer writes
    them, so the panel's charts work for both backends. ~35 µs per tick on the kernel's
    side (measure/sampler.py), while the kernel only waits for the worker."""

    def __init__(self, pid: int, interval_s: float):
        from scorep_kernel.measure.sampler import MetricSampler

        self._sampler = MetricSampler(interval_s, pid=pid)
        self._offset_ns = time.time_ns() - time.perf_counter_ns()  # monotonic -> epoch
        self._sampler.start()
        self._stopped = False

    def stop_and_write(self, exp_dir: Path) -> dict[str, str]:
        """Stop sampling and write metrics.json/.npz; the manifest's ``files`` entries."""
        if self._stopped:
            return {}
        self._stopped = True
        samples = self._sampler.stop()
        t = np.asarray(samples.times, np.int64) + np.int64(self._offset_ns)
        experiment.write_metrics(
            exp_dir, samples.series, t, samples.values,
            interval_s=samples.interval_s, notes=samples.notes,
        )  # fmt: skip
        return {"metrics": experiment.METRICS_SCHEMA, "metrics_data": experiment.METRICS_DATA}
