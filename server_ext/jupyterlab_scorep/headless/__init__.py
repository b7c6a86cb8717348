"""Headless profiling: ``jupyter scorep run`` executes a notebook with the Score-P kernel
through nbclient, sending each cell's metadata as JupyterLab does, and ``jupyter scorep
report`` prints an experiment in the terminal. docs/HEADLESS.md is the user's guide.

    cells.py             which cells are profiled, and the metadata each execute_request carries
    notebook_client.py   the nbclient NotebookClient that sends it
    run_options.py       what a run was asked to do (the command line's options)
    execute.py           one run: kernel, cells, Ctrl-C, timeouts
    progress_lines.py    the line printed per cell
    run_results.py       what the run leaves in scorep-summary.json: cells, experiments
    experiments.py       an experiment's call tree and summary, read without a server
    run_summary.py       scorep-summary.json (its JSON Schema) and the final table
    gate.py              --baseline: each profiled cell against its baseline run (compare*.py)
    report.py            ``jupyter scorep report``: text, JSON or Markdown
    papermill_engine.py  ``papermill --engine scorep``
    app.py               the command line

Like the rest of the server package, nothing here imports the kernel beyond
``scorep_kernel.experiment``, the experiment contract.
"""
