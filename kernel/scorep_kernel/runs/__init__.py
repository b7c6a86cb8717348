"""Profiled runs: what every run does (``base``), the two ways cells run under measurement
(``subprocess_run``: in a worker process; ``inprocess_run``: in the kernel), the display
bundle a profiled cell shows (``display``) and the words for a worker's death (``faults``)."""
