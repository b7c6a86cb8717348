"""Server configuration for the Galata UI tests.

Never use this configuration in production: it opens the server without a token and exposes
JupyterLab's JavaScript objects on the window.
"""

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821

# Tests run as root on CI machines.
c.ServerApp.allow_root = True  # noqa: F821

# The Score-P tab's suggested filter: Score-P's default heuristics take regions under 1 µs
# per visit, which a trivial function may exceed on a loaded machine; 20 µs keeps the
# suggestion (and its screenshot) independent of the machine's speed.
c.ScorePExtension.filter_heuristics = "bufferpercent=1,timepervisit=20"  # noqa: F821
