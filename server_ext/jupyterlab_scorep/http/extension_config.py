"""The server extension's settings: ``c.ScorePExtension.<name>`` in
jupyter_server_config.py (README's table)."""

from __future__ import annotations

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
