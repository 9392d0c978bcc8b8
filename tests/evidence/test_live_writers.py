"""A gateway that starts beside another on the same state directory signs the other's unsigned
tail quietly; only a tail no running gateway owns is reported as left by an unclean stop
(issue #25, section 4)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcpward.evidence.recorder import LedgerRecorder, build_recorder
from mcpward.evidence.settings import EvidenceSettings

from .records import decision

UNCLEAN = "written before an unclean stop"


def recorder(state: Path) -> LedgerRecorder:
    built = build_recorder(EvidenceSettings(), state)
    assert isinstance(built, LedgerRecorder)
    return built


async def test_a_running_neighbour_is_not_an_unclean_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = recorder(tmp_path)
    await first.record(decision(1))  # unsigned until its next checkpoint
    with caplog.at_level(logging.DEBUG, logger="mcpward.evidence"):
        second = recorder(tmp_path)
    assert UNCLEAN not in caplog.text
    assert "signed 1 entries of a gateway running beside this one" in caplog.text
    await second.close()
    await first.close()


async def test_a_tail_nobody_owns_is_an_unclean_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    crashed = recorder(tmp_path)
    await crashed.record(decision(1))
    assert crashed._writers is not None
    crashed._writers.leave()  # as the OS does when the process dies
    with caplog.at_level(logging.INFO, logger="mcpward.evidence"):
        after = recorder(tmp_path)
    assert f"signed 1 entries {UNCLEAN}" in caplog.text
    await after.close()
    await crashed.close()
