"""scorep_kernel: a Jupyter kernel that profiles cells with Score-P (or its builtin tracer).

Layout, by role: ``kernel`` (the wrapper kernel), ``settings`` and ``magics`` (what the user
sets), ``experiment`` (the experiment directory: the contract with the server), ``runs/``
(profiled runs), ``worker/`` (the worker process and its protocol), ``state/`` (the
namespace across the process boundary), ``measure/`` (the builtin tracer and sampler),
``formats/`` (OTF2 and CUBE4 writers), ``mpi/`` (MPI cells: the kernel's side and a rank's),
``shim/`` (a stand-in for Score-P's user API).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    # The distribution's version: the kernel never imports the server package.
    __version__ = version("jupyterlab-scorep")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
