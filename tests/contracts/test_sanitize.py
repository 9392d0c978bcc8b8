"""Human-facing text: no controls, no ANSI, no bidi/zero-width, no reassurance claims."""

from __future__ import annotations

import pytest

from mcpward.contracts.sanitize import CLAIM_REPLACEMENT, is_plain_name, sanitize_text


@pytest.mark.parametrize(
    "raw",
    [
        "safe", "SAFE", "Safe.", "is_safe", "isSafe", "safety", "verified", "VeRiFiEd",
        "approved", "all clear", "all-clear", "allclear", "ALL_CLEAR", "a11 clear",
        "s a f e", "s.a.f.e", "s-a-f-e", "$afe", "5AFE", "\u0455afe", "\uff53\uff41\uff46\uff45",
        "s\u200bafe", "s\u00adafe", "verifiedsafe", "trusted", "harmless",
    ],
)  # fmt: skip
def test_reassurance_claims_are_neutralised(raw: str) -> None:
    out = sanitize_text(f"tool {raw} here")
    assert CLAIM_REPLACEMENT in out
    lowered = out.lower()
    for word in ("safe", "verified", "approved", "clear"):
        assert word not in lowered.replace(CLAIM_REPLACEMENT.lower(), ""), out


@pytest.mark.parametrize(
    "raw",
    [
        "unsafe_delete",
        "unverified",
        "read_file",
        "approve_request",
        "verify_signature",
        "Gas a fee",
    ],
)
def test_non_claims_are_left_alone(raw: str) -> None:
    assert sanitize_text(raw) == raw


def test_controls_ansi_bidi_and_invisibles_are_stripped() -> None:
    raw = (
        "a\x1b[31mred\x1b[0m\x07b\x9b31mc\u202eevil\u202c\u2066x\u2069"
        "\U000e0041\ufeff\u200dd\x00e\x85f"
    )
    out = sanitize_text(raw)
    assert out == "aredbcevilxdef"
    osc = "\x1b]8;;https://evil.example\x07link\x1b]8;;\x07"
    assert sanitize_text(osc) == "link"
    assert sanitize_text("line1\nline2\tend") == "line1 line2 end"


def test_output_is_bounded() -> None:
    out = sanitize_text("x" * 10_000, limit=50)
    assert len(out) == 50 and out.endswith("…")


def test_plain_names() -> None:
    assert is_plain_name("get_current_time")
    assert not is_plain_name("rm -rf")
    assert not is_plain_name("safe_delete")  # would be shown neutralised, so never verbatim
