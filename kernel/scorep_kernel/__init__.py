"""scorep_kernel: a Jupyter kernel that profiles cells with Score-P (or its builtin tracer)."""

try:
    from jupyterlab_scorep._version import __version__
except ImportError:  # running from a source tree without the build hook's version file
    __version__ = "0.0.0+unknown"
