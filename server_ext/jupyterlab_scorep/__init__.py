"""jupyterlab-scorep's server extension: experiments (OTF2 traces, CUBE4 profiles, system
metrics) as a REST API under ``<base_url>/scorep/api/`` (docs/API.md).

Only the entry points live here (Jupyter's, nbconvert's); what they start is imported when
they are called, so importing ``jupyterlab_scorep.trace`` or ``.analysis`` brings in no
server. The package by role (docs/ARCHITECTURE.md): ``trace/`` reads the files,
``analysis/`` says what they mean, ``http/`` answers the REST API, ``headless/`` runs
notebooks from the command line; ``paths`` and ``domain_errors`` are shared by all."""

try:
    from ._version import __version__
except ImportError:
    # Running from a source checkout that was never pip-installed.
    import warnings

    warnings.warn("Importing 'jupyterlab_scorep' outside a proper installation.", stacklevel=2)
    __version__ = "dev"


def __getattr__(name: str):
    """``jupyterlab_scorep.ScorePExecutePreprocessor`` (for nbconvert's
    ``--Exporter.preprocessors=``), imported only when asked for: the server never needs
    nbconvert."""
    if name == "ScorePExecutePreprocessor":
        from .headless.nbconvert_execute import ScorePExecutePreprocessor

        return ScorePExecutePreprocessor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "jupyterlab-scorep"}]


def _jupyter_server_extension_points():
    return [{"module": "jupyterlab_scorep"}]


def _load_jupyter_server_extension(server_app):
    """Register the REST handlers (called by jupyter_server at start-up)."""
    from .http.extension_config import ScorePExtension
    from .http.routes import setup_route_handlers
    from .http.service import Service

    settings = ScorePExtension(parent=server_app)
    service = Service(
        server_app.root_dir,
        settings.experiment_roots,
        version=__version__,
        build_timeout=settings.build_timeout,
        cache_size=settings.index_cache_size,
        filter_heuristics=settings.filter_heuristics,
    )
    setup_route_handlers(server_app.web_app, service)
    service.warm_up()
    server_app.log.info(
        "jupyterlab_scorep: serving experiments under %s%s",
        server_app.root_dir,
        "".join(f", {r}" for r in settings.experiment_roots),
    )


def _unload_jupyter_server_extension(server_app):
    """Stop the indexing worker when the server stops."""
    service = server_app.web_app.settings.get("scorep_service")
    if service is not None:
        service.shutdown()
