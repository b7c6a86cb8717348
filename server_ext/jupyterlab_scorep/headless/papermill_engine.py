"""``papermill --engine scorep in.ipynb out.ipynb -p n 10``: papermill's nbclient engine
with the Score-P kernel, sending each cell's metadata as JupyterLab does, so the cells
toggled in JupyterLab are profiled with their settings (registered as the entry point
``papermill.engine: scorep``).

- The kernel is ``scorep-python`` unless papermill's ``-k`` names another.
- Which cells: the toggled ones; the Python API's ``scorep_cells="all"`` or ``"3,5-7"``
  (engine keyword, as ``jupyter scorep run --all/--cells``), or the environment variable
  ``JUPYTER_SCOREP_CELLS`` for papermill's command line. Papermill's injected parameters
  cell counts as a code cell.
- ``scorep_backend``, ``scorep_isolation``, ``scorep_experiment_dir`` act as the JupyterLab
  settings (``lab_settings``); on the command line, the kernel's own environment variables
  (SCOREP_KERNEL_BACKEND, ...) apply below the cells' settings.
- The run waits for the kernel to finish writing each experiment's files before the kernel
  is shut down; the experiments' paths are in the notebook's outputs, and
  ``jupyter scorep report`` prints any of them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine
from papermill.log import logger
from papermill.utils import merge_kwargs, remove_args

from . import cells as cellsel
from . import experiments as exps
from .execute import session_name
from .finished_outputs import finish_outputs
from .notebook_client import SendsCellMetadata
from .run_options import DEFAULT_KERNEL

CELLS_ENV = "JUPYTER_SCOREP_CELLS"
FILES_TIMEOUT_S = 300.0


class ScorePPapermillClient(SendsCellMetadata, PapermillNotebookClient):
    def papermill_execute_cells(self) -> None:
        try:
            super().papermill_execute_cells()
        finally:
            # the kernel writes traces after each reply: let it finish before shutdown
            paths = [Path(b["path"]) for cell in self.nb.cells for b in exps.bundles(cell)]
            if paths:
                exps.wait_for_files(paths, FILES_TIMEOUT_S)
                finish_outputs(self.nb, output_folder(self.nb_man))


def output_folder(nb_man: Any) -> Path:
    """Where papermill writes the notebook (the paths in its outputs are shown relative to
    it); the working directory for an output that is no local file."""
    out = getattr(nb_man, "output_path", None)
    if isinstance(out, str) and out not in ("-",) and "://" not in out:
        return Path(out).absolute().parent
    return Path.cwd()


def profiling_for(
    nb: Any,
    cells: str | None,
    backend: str | None,
    isolation: str | None,
    experiment_dir: str | None,
) -> cellsel.Profiling:
    code = cellsel.code_cells(nb)
    spec = (cells or os.environ.get(CELLS_ENV) or "").strip()
    lab = cellsel.lab_settings_from_options(
        backend, isolation, str(Path(experiment_dir).absolute()) if experiment_dir else None
    )
    if spec == "all":
        return cellsel.Profiling("all", frozenset(c.number for c in code), lab)
    if spec:
        return cellsel.Profiling("cells", cellsel.parse_selection(spec, code), lab)
    return cellsel.Profiling("toggled", frozenset(), lab)


class ScorePEngine(NBClientEngine):
    """papermill's nbclient engine on the Score-P kernel, sending cell metadata."""

    @classmethod
    def nb_kernel_name(cls, nb: Any, name: str | None = None) -> str:
        return name or DEFAULT_KERNEL

    @classmethod
    def execute_managed_notebook(
        cls,
        nb_man: Any,
        kernel_name: str,
        log_output: bool = False,
        stdout_file: Any = None,
        stderr_file: Any = None,
        start_timeout: int = 60,
        execution_timeout: int | None = None,
        scorep_cells: str | None = None,
        scorep_backend: str | None = None,
        scorep_isolation: str | None = None,
        scorep_experiment_dir: str | None = None,
        **kwargs: Any,
    ) -> Any:
        input_path = kwargs.get("input_path")
        kwargs = remove_args(["input_path"], **kwargs)
        safe_kwargs = remove_args(["timeout", "startup_timeout"], **kwargs)
        final_kwargs = merge_kwargs(
            safe_kwargs,
            timeout=execution_timeout if execution_timeout else kwargs.get("timeout"),
            startup_timeout=start_timeout,
            kernel_name=kernel_name,
            log=logger,
            log_output=log_output,
            stdout_file=stdout_file,
            stderr_file=stderr_file,
        )
        client = ScorePPapermillClient(nb_man, **final_kwargs)
        client.scorep_profiling = profiling_for(
            nb_man.nb, scorep_cells, scorep_backend, scorep_isolation, scorep_experiment_dir
        )
        env = dict(os.environ)
        if isinstance(input_path, str) and "://" not in input_path:
            env["JPY_SESSION_NAME"] = session_name(Path(input_path))
        return client.execute(env=env)
