"""jupyterlab-scorep's server extension: experiments (OTF2 traces, CUBE4 profiles, system
metrics) as a REST API under ``<base_url>/scorep/api/`` (docs/API.md)."""

try:
    from ._version import __version__
except ImportError:
    # Running from a source checkout that was never pip-installed.
    import warnings

    warnings.warn("Importing 'jupyterlab_scorep' outside a proper installation.", stacklevel=2)
    __version__ = "dev"

from traitlets import Float, Int, List, Unicode
from traitlets.config import Configurable


class ScorePExtension(Configurable):
    """Settings of the server extension (``c.ScorePExtension.<name>`` in
    jupyter_server_config.py)."""

    experiment_roots = List(
        Unicode(),
        default_value=[],
        help="Directories besides the server root whose experiments may be served (for "
        "example a cluster's scratch space where SCOREP_EXPERIMENT_DIRECTORY points).",
    ).tag(config=True)
    build_timeout = Float(
        600.0, help="Seconds a trace may take to index before the reader is stopped."
    ).tag(config=True)
    index_cache_size = Int(8, help="Trace indexes kept loaded (memory-mapped).").tag(config=True)
    filter_heuristics = Unicode(
        "bufferpercent=1,timepervisit=1",
        help="What the Score-P tab's suggested filter leaves out: scorep-score -g's "
        "KEY=VALUE[,KEY=VALUE]* (bufferpercent, bufferabsolute, visits, timepervisit, type; "
        "its defaults: regions with at least 1 % of the trace buffer at under 1 us per "
        "visit).",
    ).tag(config=True)


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
    from .http.routes import setup_route_handlers
    from .http.service import Service

    settings = ScorePExtension(parent=server_app)
    service = Service(
        server_app.root_dir,
        settings.experiment_roots,
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
