"""Why a request cannot be answered, in the library's words: the errors ``trace``,
``analysis``, ``paths`` and the service raise. Each says what is wrong and how to fix it
(``message``, for a person), with a short tag (``reason``; empty: the usual words of its
kind). ``transient``: not the files' fault (the reader crashed or ran out of time), so not
remembered against them.

The kinds are what the library knows, not HTTP: ``http/error_status.py`` holds the one
table from kind to status code (docs/API.md lists the answers)."""

from __future__ import annotations


class ScorePError(Exception):
    """Base of the kinds below; never raised itself."""

    def __init__(self, message: str, reason: str = "", *, transient: bool = False):
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.transient = transient


class BadParameter(ScorePError):
    """A request's parameter is missing or wrong; the message names it and what to pass."""


class Refused(ScorePError):
    """What is asked is not allowed here (a folder that cannot be written, a root that is
    never deleted)."""


class OutsideRoots(Refused):
    """A path outside the server root and the configured experiment roots, or a file that
    links out of its experiment."""


class NotFound(ScorePError):
    """The experiment, the file or the tool asked for is not there."""


class NoTrace(NotFound):
    """The experiment was recorded without an OTF2 trace."""


class Conflict(ScorePError):
    """The experiment's state does not allow it (another id than confirmed, a run still
    being measured, a folder holding more than an experiment)."""


class NotReady(Conflict):
    """The experiment's files are still being written: the same request succeeds later."""


class Unprocessable(ScorePError):
    """The request is well formed but cannot be carried out on these files (a tool that
    failed on them, a directory that could not be deleted)."""


class Unreadable(Unprocessable):
    """The files cannot be read: damaged, truncated or of an unknown version, or the
    reader crashed or ran out of time on them (``transient``)."""
