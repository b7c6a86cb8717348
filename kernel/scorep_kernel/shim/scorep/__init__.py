"""Stand-in for Score-P's Python bindings (``scorep``), used by the builtin tracer. User
regions and instrumenter switches go to the builtin tracer of jupyterlab-scorep
(scorep_kernel.measure); with nothing measuring they do nothing, so notebooks written for
Score-P run unchanged.
"""

from . import instrumenter, user  # noqa: F401

__version__ = "0+jupyterlab-scorep-shim"
BUILTIN_SHIM = True
