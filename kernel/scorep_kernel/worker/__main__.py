"""``python -m scorep_kernel.worker --fd N``: a worker for the builtin backend."""

from scorep_kernel.worker.entry import main

main()
