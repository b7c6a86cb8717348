"""What fixes a worker process at its start, for the pool: a spare made from the same
recipe can take a run."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

from scorep_kernel.runs import scorep_backend
from scorep_kernel.runs.base import experiment_parent, reserve_experiment
from scorep_kernel.worker import scorep_first_pass
from scorep_kernel.worker.client import WorkerKey, scorep_arguments


@dataclass(frozen=True)
class WorkerRecipe:
    """What fixes a worker process at its start: the backend, and for Score-P its
    environment, binding arguments and where its experiment directory will be."""

    backend: str
    scorep_env: dict[str, str] = field(default_factory=dict)
    binding_args: list[str] = field(default_factory=list)
    experiment_parent: str | None = None

    def key(self) -> WorkerKey:
        if self.backend != "scorep":
            return WorkerKey(self.backend, (), ())
        env = tuple(sorted(self.scorep_env.items()))
        parent = str(experiment_parent(self.experiment_parent))
        return WorkerKey(self.backend, env, tuple(self.binding_args), exp_parent=parent)

    def env(self, base: dict[str, str]) -> dict[str, str]:
        if self.backend == "scorep":
            return scorep_backend.worker_env(base, self.scorep_env)
        return {**base, **self.scorep_env}

    def updated(self, scorep_env: dict[str, str], binding_args: list[str]) -> WorkerRecipe:
        return dataclasses.replace(self, scorep_env=scorep_env, binding_args=binding_args)

    def reserve(self) -> tuple[str, Path] | None:
        """The experiment directory a worker is told at its start: none, unless Score-P's
        measurement starts with the process (a first pass that cannot defer it, see
        worker.scorep_first_pass); a deferred one is told at the run (reserve_for_run)."""
        if self.backend != "scorep":
            return None
        path = os.environ.get("PATH", "")
        if scorep_first_pass.defers_measurement(scorep_arguments(self.binding_args), path):
            return None
        return self.reserve_for_run()

    def reserve_for_run(self) -> tuple[str, Path]:
        """An experiment id and directory, not yet made (Score-P makes it)."""
        reserved = reserve_experiment(self.scorep_env, self.experiment_parent)
        scorep_backend.make_parent(reserved[1])
        return reserved
