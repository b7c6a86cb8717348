"""The builtin measurement: a tracer, a metric sampler and the session that ties them to
an experiment directory. Used when Score-P is absent, or chosen by the user.

    m = Measurement(exp_dir, MeasureConfig.from_mapping(cell_settings))
    m.start()
    with m.cell("cell [3]", code_filename=compiled_cell_file):
        ...                      # the cell runs
    recording = m.stop()         # cheap: the files are written next
    m.write_files(recording)     # background thread; manifest says "ready" or "failed"
"""

from __future__ import annotations

from ..shim import SHIM_DIR, install_scorep_shim
from .detect import detect_scorep
from .engine import ENGINE_NAME, EngineError
from .measure_config import DEFAULT_EXCLUDE, MeasureConfig
from .session import Measurement, active

__all__ = [
    "DEFAULT_EXCLUDE",
    "ENGINE_NAME",
    "EngineError",
    "MeasureConfig",
    "Measurement",
    "active",
    "detect_scorep",
    "install_scorep_shim",
    "shim_path",
]


def shim_path() -> str:
    """The directory holding our stand-in ``scorep`` package (see scorep_kernel.shim)."""
    return SHIM_DIR
