"""MPI cells: a profiled cell run as N ranks through the system's MPI launcher.

The kernel's side:

- ``config``: the ``mpi`` cell setting (metadata, ``%%scorep_mpi``, environment) and the
  launcher's command line;
- ``run``: ``MpiRun``, the run the kernel drives; it holds ``cell_on_ranks`` (one cell on
  every rank) and ``run_end`` (stopping the measurement, the manifest, the files);
- ``rank_pool``: the ranks of one launch and their connections; ``launcher``: the
  launcher's process; ``clocks``: the ranks' clocks mapped onto the kernel's;
- ``kept_ranks``: the ranks kept up between cells, and ``merger``, the process that merges
  their recordings;
- ``merge``: the ranks' recordings as one OTF2 archive (``otf2_ranks``) and one CUBE4
  profile, in a process of its own;
- ``metrics``: the system sampler, once per node and per rank's process tree;
- ``common``: what the kernel's side and a rank share.

A rank's side is ``rank`` (``python -m scorep_kernel.mpi.rank``, the subprocess worker
connected back over TCP). ``measure.mpi_calls`` (mpi4py's calls as regions and OTF2 MPI
events, in a rank the builtin tracer measures) stays in the tracer's package: the tracer
drops the frames of every file under that package's directory (``measure.engine.
package_dir``), and so the wrapper's own frames and what they call.
"""
