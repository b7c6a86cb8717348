"""A real jupyter server on a free loopback port for the HTTP benchmarks: token auth, the
server extension loaded, stopped at the end."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Server:
    pid: int
    port: int
    token: str

    def get(self, route: str, timeout: float = 120) -> float:
        """GET /scorep/api/<route>, read the whole answer; milliseconds."""
        t = time.perf_counter()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/scorep/api/{route}",
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as r:
            r.read()
        return (time.perf_counter() - t) * 1e3


@contextmanager
def jupyter_server(root: Path) -> Iterator[Server]:
    """A server rooted at ``root``, once it answers GET version (up to 30 s)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "bench-" + os.urandom(8).hex()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            f"--ServerApp.port={port}",
            f"--IdentityProvider.token={token}",
            "--ServerApp.open_browser=False",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.log_level=WARN",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = Server(proc.pid, port, token)
    try:
        for _ in range(150):
            try:
                server.get("version", 2)
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise SystemExit(f"the jupyter server on port {port} did not answer within 30 s")
        yield server
    finally:
        proc.terminate()
        proc.wait(10)
