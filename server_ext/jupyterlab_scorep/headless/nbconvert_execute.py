"""``ScorePExecutePreprocessor``: nbconvert's ExecutePreprocessor, sending each cell's
metadata as JupyterLab does, so ``jupyter nbconvert --execute`` profiles the cells toggled in
JupyterLab with their settings::

    jupyter nbconvert --to html --execute \\
        --Exporter.preprocessors=jupyterlab_scorep.ScorePExecutePreprocessor nb.ipynb

(also as ``c.Exporter.preprocessors = ["jupyterlab_scorep.ScorePExecutePreprocessor"]`` in
jupyter_nbconvert_config.py). nbconvert has no entry point for preprocessors (its exporters
have one) and ``--execute`` always enables its own, so this one, named in
``Exporter.preprocessors``, takes the stock one's place: it runs when execution was asked
for (``--execute``, or ``ExecutePreprocessor.enabled``, or its own ``enabled``), and the
stock ExecutePreprocessor of the same exporter is switched off, so the notebook runs once.
Every ``ExecutePreprocessor`` option applies (``--allow-errors``,
``--ExecutePreprocessor.timeout=600``, ``kernel_name``).

Then, as ``jupyter scorep run``: the kernel learns the notebook's name (``JPY_SESSION_NAME``,
so the panel's history finds these runs), the files are waited for before the kernel
shuts down, and each profiled cell's text/plain and text/html are rewritten with the
finished profile's gist (finished_outputs).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nbconvert.preprocessors import ExecutePreprocessor

from . import experiments as exps
from .execute import session_name
from .finished_outputs import finish_outputs
from .notebook_client import SendsCellMetadata

FILES_TIMEOUT_S = 300.0


class ScorePExecutePreprocessor(SendsCellMetadata, ExecutePreprocessor):
    """Executes the notebook as nbconvert's ExecutePreprocessor does, sending every cell's
    metadata with its execute_request (``--Exporter.preprocessors=`` this class)."""

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        # enabled by --execute (ExecutePreprocessor.enabled: this is one) before nbconvert
        # enables every preprocessor named in Exporter.preprocessors
        self._execute = bool(self.enabled)
        exporter = kw.get("parent")
        for other in getattr(exporter, "_preprocessors", ()):
            if type(other) is ExecutePreprocessor and other.enabled:
                other.enabled = False  # this one runs the notebook instead
                self._execute = True

    def __call__(self, nb: Any, resources: Any) -> Any:
        if not self._execute:
            self.log.warning(
                "%s is named, but the notebook is not executed: add --execute",
                type(self).__name__,
            )
            return nb, resources
        return self.preprocess(nb, resources)

    def preprocess(self, nb: Any, resources: Any = None, km: Any = None) -> Any:
        nb, resources = super().preprocess(nb, resources, km)
        finish_outputs(nb, self._notebook_dir())
        return nb, resources

    def _notebook_dir(self) -> Path:
        path = ((self.resources or {}).get("metadata") or {}).get("path")
        return Path(path).absolute() if path else Path.cwd()

    def start_new_kernel(self, **kwargs: Any) -> None:
        """With the notebook's name in the kernel's environment, as a Jupyter server gives
        it (the manifests' ``notebook``)."""
        meta = (self.resources or {}).get("metadata") or {}
        if meta.get("name") and "env" not in kwargs:
            notebook = self._notebook_dir() / f"{meta['name']}.ipynb"
            kwargs["env"] = {**os.environ, "JPY_SESSION_NAME": session_name(notebook)}
        super().start_new_kernel(**kwargs)

    @contextlib.contextmanager
    def setup_kernel(self, **kwargs: Any) -> Iterator[None]:
        """The kernel writes traces after each cell's reply: they are waited for before
        the kernel shuts down."""
        with super().setup_kernel(**kwargs):
            try:
                yield
            finally:
                paths = [Path(b["path"]) for cell in self.nb.cells for b in exps.bundles(cell)]
                if paths:
                    exps.wait_for_files(paths, FILES_TIMEOUT_S)
