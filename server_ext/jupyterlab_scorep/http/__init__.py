"""The server's HTTP face under ``<base_url>/scorep/api/`` (docs/API.md): thin handlers,
the service that answers each route from ``..trace`` and ``..analysis``, and the one place
where domain errors become HTTP status codes.

    routes.py            thin table-driven handlers: parse parameters, write JSON
    service.py           one method per route; holds the reads and the scores
    experiment_reads.py  an experiment's parts read off the event loop (worker, threads)
    score_routes.py      GET score and POST filter (``Scores``)
    device_routes.py     GET device, GET link, POST import
    rank_routes.py       GET ranks and the MPI verdicts of GET summary
    export.py            GET download: what to stream, as byte chunks
    tools.py             Score-P detection and the local viewers (Vampir, Cube)
    extension_config.py  the settings (``c.ScorePExtension.<name>``)
    error_status.py      the one table: domain error -> HTTP status code
"""
