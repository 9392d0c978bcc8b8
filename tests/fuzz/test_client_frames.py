"""Generated client frames against the real gateway on each front (docs/fuzzing.md)."""

from __future__ import annotations

import pytest
from hypothesis import given

from tests.fuzz.gateways import MAX_FRAME_BYTES
from tests.fuzz.runner import FRONTS, Fuzzer
from tests.fuzz.settings import fuzz_settings
from tests.fuzz.strategies import client_frames


@pytest.mark.parametrize("front", FRONTS)
@fuzz_settings(40)
@given(frame=client_frames(MAX_FRAME_BYTES))
def test_no_client_frame_breaks_a_promise(fuzzer: Fuzzer, front: str, frame: bytes) -> None:
    fuzzer.client_frame(front, frame)
