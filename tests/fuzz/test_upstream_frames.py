"""Generated upstream answers, notifications and garbage, played by the scripted upstream for one
call at a time, on each front (docs/fuzzing.md)."""

from __future__ import annotations

import pytest
from hypothesis import given

from tests.fuzz.gateways import MAX_FRAME_BYTES
from tests.fuzz.runner import FRONTS, Fuzzer
from tests.fuzz.settings import fuzz_settings
from tests.fuzz.strategies import upstream_scripts


@pytest.mark.parametrize("front", FRONTS)
@fuzz_settings(20)
@given(lines=upstream_scripts(MAX_FRAME_BYTES))
def test_no_upstream_frame_breaks_a_promise(fuzzer: Fuzzer, front: str, lines: list[bytes]) -> None:
    fuzzer.upstream_script(front, lines)
