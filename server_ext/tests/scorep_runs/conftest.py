"""One kernel and one set of Score-P runs for the tests in this folder (measured once:
each run is a cell under ``python -m scorep``), and a server that may read them."""

from __future__ import annotations

import pytest
from scorep_cells import (
    BUILTIN,
    FLUSH,
    HEURISTICS,
    OFF,
    RUSAGE,
    SAME,
    THREADS,
    KernelHandle,
    run_cell,
)

from scorep_kernel import manifest as mf


@pytest.fixture(scope="session")
def kernel(tmp_path_factory):
    """A kernel whose experiments go to ``kernel.root/scorep-experiments/``."""
    root = tmp_path_factory.mktemp("scorep-runs")
    handle = KernelHandle(root)
    handle.root = root
    yield handle
    handle.shutdown()


@pytest.fixture(scope="session")
def runs(kernel):
    """(root, {name: experiment directory}), all under one folder the server may read."""
    root = kernel.root
    if True:  # one kernel for all runs, kept for the tests that run cells themselves
        out = {
            "scorep": run_cell(kernel, SAME),
            "builtin": run_cell(kernel, SAME, BUILTIN),
            "threads": run_cell(kernel, THREADS),
            "off": run_cell(kernel, OFF),
        }
        # 2M: Score-P flushes its trace buffer during the run (and says so)
        assert kernel.run("%%scorep_env\nSCOREP_TOTAL_MEMORY=2M").status == "ok"
        out["flush"] = run_cell(kernel, FLUSH)
        env = "%%scorep_env\nSCOREP_TOTAL_MEMORY=256M\nSCOREP_METRIC_RUSAGE=ru_maxrss,ru_utime"
        assert kernel.run(env).status == "ok"
        out["rusage"] = run_cell(kernel, RUSAGE)
        assert kernel.run("%%scorep_env\nSCOREP_METRIC_RUSAGE=").status == "ok"
    for name in ("scorep", "threads", "off", "flush", "rusage"):
        assert mf.read_manifest(out[name])["backend"] == "scorep", name
    return root, out


@pytest.fixture
def jp_server_config(runs):
    root, _ = runs
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyterlab_scorep": True},
            "allow_unauthenticated_access": False,
        },
        "ScorePExtension": {"experiment_roots": [str(root)], "filter_heuristics": HEURISTICS},
    }
