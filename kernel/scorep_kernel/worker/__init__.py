"""The worker process that runs profiled cells (``entry``, with its headless shell in
``shell``), the kernel's side of it (``client``), and the messages between them
(``protocol``). ``python -m scorep_kernel.worker --fd N`` starts one."""
