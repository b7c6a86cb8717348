"""The one error type handlers turn into a JSON error response."""

from __future__ import annotations


class ApiError(Exception):
    """``status`` (4xx), ``message`` for a person (cause and fix), ``reason`` a short tag;
    ``transient``: not the file's fault (a worker crash or timeout), so not remembered."""

    def __init__(self, status: int, message: str, reason: str = "", *, transient: bool = False):
        super().__init__(message)
        self.status = status
        self.message = message
        self.transient = transient
        self.reason = reason or {
            400: "Bad Request",
            403: "Forbidden",
            404: "Not Found",
            409: "Conflict",
            422: "Unprocessable Entity",
        }.get(status, "Error")
