"""The log line for a client frame a front drops instead of answering: its problem, never its
body, and a bounded number of lines however many such frames a client sends."""

from __future__ import annotations

import logging

from mcpward.telemetry.log_limits import LimitedLog

_DROPPED = LimitedLog(logging.getLogger("mcpward.front"))


def note_dropped(kind: str, what: str, problem: object) -> None:
    """Log that a client `what` (a notification, a frame) was dropped because of `problem`."""
    _DROPPED.log(logging.WARNING, "client", kind, "a client %s was dropped: %s", what, problem)
