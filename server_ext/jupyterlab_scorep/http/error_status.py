"""The one table from the library's errors (``..domain_errors``) to HTTP status codes,
and the tornado error a handler raises for one (jupyter_server's APIHandler writes it as
the JSON body docs/API.md gives: ``{"message": ..., "reason": ...}``)."""

from __future__ import annotations

import tornado.web

from ..domain_errors import (
    BadParameter,
    Conflict,
    NotFound,
    Refused,
    ScorePError,
    Unprocessable,
)

# the kinds, most general first; a subclass (OutsideRoots, NoTrace, NotReady, Unreadable)
# answers as its kind does
STATUS: dict[type[ScorePError], int] = {
    BadParameter: 400,
    Refused: 403,
    NotFound: 404,
    Conflict: 409,
    Unprocessable: 422,
}
# the reason of an error that names none
DEFAULT_REASON = {
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    422: "Unprocessable Entity",
}


def status_of(error: ScorePError) -> int:
    """The status code of ``error``'s kind."""
    for kind in type(error).__mro__:
        if kind in STATUS:
            return STATUS[kind]
    raise TypeError(f"{type(error).__name__} is not a kind of error the API answers")


def http_error(error: ScorePError) -> tornado.web.HTTPError:
    """The HTTPError that answers ``error``: its status, message and reason."""
    status = status_of(error)
    reason = error.reason or DEFAULT_REASON.get(status, "Error")
    return tornado.web.HTTPError(status, log_message=error.message, reason=reason)
