"""Server configuration for the Galata UI tests.

Never use this configuration in production: it opens the server without a token and exposes
JupyterLab's JavaScript objects on the window.
"""

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821

# Tests run as root on CI machines.
c.ServerApp.allow_root = True  # noqa: F821
