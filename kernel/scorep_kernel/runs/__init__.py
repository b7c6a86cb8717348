"""Profiled runs: what every run does (``base``), the two ways cells run under measurement
(``subprocess_run``: in a worker process; ``inprocess_run``: in the kernel; the third,
N MPI ranks, is ``mpi.run``), the display bundle a profiled cell shows (``display``) and
how a run fails (``faults``: ``RunFailed``, and the words for a worker's death)."""
