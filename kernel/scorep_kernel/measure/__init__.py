"""The builtin measurement: a tracer, a metric sampler and the session that ties them to
an experiment directory. Used when Score-P is absent, or chosen by the user.

    m = Measurement(exp_dir, MeasureConfig.from_mapping(cell_settings))   # measure.session
    m.start()
    with m.cell("cell [3]", code_filename=compiled_cell_file):
        ...                      # the cell runs
    recording = m.stop()         # cheap: the files are written next
    m.write_files(recording)     # background thread; manifest says "ready" or "failed"

The package imports none of its modules: ``measure_config`` (what the kernel's settings
build and the worker protocol carries) loads without the tracer, so a Score-P worker that
receives one never loads the builtin tracer. Import each module by its own name.
"""
