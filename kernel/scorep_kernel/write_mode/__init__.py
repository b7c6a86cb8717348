"""scorep-jupyter's write mode: ``%%start_writefile [path]`` ... ``%%end_writefile`` records
the cells (not run) into a Python script and a ``<path>_run.sh`` that runs it under Score-P
(``python -m scorep`` with the recorded binding arguments and ``SCOREP_*`` settings), or
under the builtin tracer where Score-P is absent (``python -m scorep_kernel.script``).

``cell_code`` turns one cell into script code, ``recording`` holds what write mode has
recorded and writes the two files, ``run_script`` is the builtin tracer's runner.
"""
