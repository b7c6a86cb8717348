"""MPI cells: a profiled cell run as N ranks through the system's MPI launcher.

- ``config``: the ``mpi`` cell setting (metadata, ``%%scorep_mpi``, environment) and the
  launcher's command line;
- ``measure.mpi_calls`` (in the tracer's package, whose frames it drops): mpi4py's calls
  as regions and OTF2 MPI events, in a rank the builtin tracer measures;
- ``merge``: the ranks' recordings as one OTF2 archive and one CUBE4 profile;
- ``metrics``: the system sampler, once per node and per rank's process tree.

The kernel's side of a run is ``runs.mpi_run``; a rank's is ``worker.mpi_rank``.
"""
