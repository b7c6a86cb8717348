"""What the read files mean: summaries, verdicts, comparisons, a cell's history, MPI
ranks, the accelerators, Score-P's score. Pure functions over what ``..trace`` reads
(call trees, loaded indexes, metric samples) and manifests; no HTTP here.

    summary.py           GET summary: wall time, top regions, resource verdicts
    compare.py           two runs' call trees matched by name: deltas, explained change
    compare_names.py     the names runs are matched by (functions, call paths)
    compare_noise.py     run-to-run noise: when a difference counts
    compare_verdict.py   the verdict on two runs in words
    compare_json.py      a comparison as GET compare answers it
    history.py           a cell's runs on disk, their disk use, what may be deleted
    metric_series.py     system metric samples bucketed to a width, the trace's metrics
    ranks.py             an MPI run's ranks side by side, who talked to whom
    device_analysis.py   what the accelerators did, the bottleneck verdict
    device_idle.py       why the device was idle, gap by gap
    scorep_score.py      scorep-score on profile.cubex and the filter it suggests
"""
