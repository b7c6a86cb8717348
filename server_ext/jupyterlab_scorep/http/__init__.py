"""The server's HTTP face under ``<base_url>/scorep/api/`` (docs/API.md): thin handlers,
the service that answers each route from ``..trace`` and ``..analysis``, and the one place
where domain errors become HTTP status codes.

    routes.py            thin table-driven handlers: parse parameters, write JSON
    service.py           one method per route
    experiment_reads.py  an experiment's parts read off the event loop (worker, threads)
    score_routes.py      GET score and POST filter
    device_routes.py     GET device, GET link, POST import
    export.py            downloads as streams of byte chunks
    tools.py             Score-P detection and the local viewers (Vampir, Cube)
    error_status.py      the one table: domain error -> HTTP status code
"""
