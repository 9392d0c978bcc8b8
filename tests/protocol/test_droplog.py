"""The rate-limited log of dropped frames: N lines per kind per window, then a count."""

from __future__ import annotations

import logging

import pytest

from mcpward.protocol.droplog import RateLimitedLog


def test_lines_beyond_the_limit_are_counted_and_reported_later(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    dropped = RateLimitedLog(logging.getLogger("t.drop"), per_window=3, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, "t.drop"):
        results = [dropped.warning("bad", "dropped %d", i) for i in range(10)]
        dropped.warning("other", "another kind")
    assert results == [True] * 3 + [False] * 7
    assert dropped.held_back("bad") == 7
    assert [r.getMessage() for r in caplog.records] == [
        "dropped 0",
        "dropped 1",
        "dropped 2",
        "another kind",
    ]
    caplog.clear()
    now[0] = 61.0
    with caplog.at_level(logging.WARNING, "t.drop"):
        assert dropped.warning("bad", "dropped again")
    assert [r.getMessage() for r in caplog.records] == [
        "7 more bad line(s) were held back",
        "dropped again",
    ]
