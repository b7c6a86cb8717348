"""What fixes a worker process at its start, for the pool: a spare made from the same
recipe can take a run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from scorep_kernel.runs import scorep_backend
from scorep_kernel.runs.base import experiment_parent, reserve_experiment
from scorep_kernel.worker.client import WorkerKey


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
        """Score-P must be told its experiment directory when its process starts."""
        if self.backend != "scorep":
            return None
        reserved = reserve_experiment(self.scorep_env, self.experiment_parent)
        scorep_backend.make_parent(reserved[1])
        return reserved
