"""Receipts: fields, hashes instead of content, closed vocabularies, canonical form, the schema."""

from __future__ import annotations

import unicodedata

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpward.evidence.receipt import (
    ReceiptError,
    build_receipt,
    check_record,
    declared_side_effects,
    payload_hashes,
    required_mode,
)
from mcpward.evidence.schemas import checkpoint_schema, config_schema, receipt_schema
from mcpward.evidence.vocabulary import PolicyDecision
from mcpward.pipeline.context import Identity
from mcpward.pipeline.executor import GuardRun
from mcpward.protocol.canonical import canonical_bytes, canonical_sha256, normalise

from .records import SECRET_ARGUMENT, SECRET_RESULT, decision

RECEIPT_VALIDATOR = jsonschema.Draft202012Validator(receipt_schema())


def test_receipt_hashes_arguments_and_results_and_never_stores_them() -> None:
    record = decision(0)
    receipt = build_receipt(record)
    data = receipt.data
    assert data["input_hash"] == canonical_sha256(record.arguments)
    assert data["output_hash"] == canonical_sha256(record.result)
    text = receipt.canonical.decode()
    assert SECRET_ARGUMENT not in text
    assert SECRET_RESULT not in text
    assert "Europe/Paris" not in text


def test_receipt_fields_from_the_record() -> None:
    data = build_receipt(decision(0)).data
    assert data["upstream"] == "time"
    assert data["method"] == "tools/call"
    assert data["name"] == "get_current_time"
    assert data["client_id"] == "claude-desktop"
    assert data["actor_id"] == "alice"
    assert data["declared_side_effects"] == ["read_only"]
    assert data["required_mode"] == "read"
    assert data["decision"] == "allow"
    assert data["guards"] == [
        {
            "id": "tool_filter",
            "kind": "tool_filter",
            "phase": "tool_invoke",
            "outcome": "allow",
            "duration_ms": 0.042,
            "code": None,
            "shadow": False,
            "failure_mode": None,
            "evidence": {},
        }
    ]
    assert data["gateway_ms"] == 0.25 and data["upstream_ms"] == 3.5
    assert data["time"].endswith("Z")


def test_denial_receipt_names_the_guard_and_error_code() -> None:
    data = build_receipt(decision(1)).data
    assert data["decision"] == "deny"
    assert data["stopped_by"] == "tool_filter"
    assert data["error_code"] == -32013
    assert data["guards"][0]["code"] == "tool_not_allowed"
    assert data["declared_side_effects"] == ["destructive"]
    assert data["required_mode"] == "destructive"
    assert data["output_hash"] is None


def test_redactions_and_per_pattern_counts_come_from_guard_evidence() -> None:
    data = build_receipt(decision(2)).data
    assert data["redactions"] == ["secret"]
    assert data["redaction_counts"] == {"github_pat": 1, "openai_key": 2}


def test_shadow_decision_is_recorded() -> None:
    run = GuardRun(
        "tool_filter",
        "tool_filter",
        "tool_invoke",
        "deny",
        0.1,
        code="tool_not_allowed",
        shadow=True,
    )
    data = build_receipt(decision(0, decision="would_deny_dry_run", runs=[run])).data
    assert data["decision"] == "would_deny_dry_run"
    assert data["guards"][0]["shadow"] is True


BAD_VALUES: list[tuple[dict[str, object], str]] = [
    ({"decision": "allowed"}, "decision='allowed' is not in the closed vocabulary"),
    ({"decision": "escalate"}, "not in the closed vocabulary"),
    (
        {"runs": [GuardRun("g", "k", "tool_invoke", "maybe", 0.1)]},
        "guard g outcome='maybe' is not in the closed vocabulary",
    ),
    (
        {
            "runs": [
                GuardRun(
                    "g",
                    "k",
                    "tool_result",
                    "modify",
                    0.1,
                    evidence={"redactions": {"passwords": {"x": 1}}},
                )
            ]
        },
        "redaction reason='passwords' is not in the closed vocabulary",
    ),
    (
        {
            "runs": [
                GuardRun(
                    "g",
                    "k",
                    "tool_result",
                    "modify",
                    0.1,
                    evidence={"redactions": {"secret": {"a b": 1}}},
                )
            ]
        },
        "bad redaction pattern id",
    ),
    (
        {
            "runs": [
                GuardRun(
                    "g",
                    "k",
                    "tool_result",
                    "modify",
                    0.1,
                    evidence={"redactions": {"secret": {"x": -1}}},
                )
            ]
        },
        "redaction count",
    ),
    ({"error_reason": "Upstream said: secret stuff"}, "error_reason"),
    ({"gateway_ms": float("nan")}, "latency"),
    ({"arguments": {"x": {1, 2}}}, "arguments is not a JSON value"),
    ({"method": ""}, "method is empty"),
    ({"error_code": "E1"}, "error_code='E1' is not an integer"),
    ({"contract_hash": "sha256 of what?"}, "contract_hash"),
    ({"started_at": float("inf")}, "started_at"),
    ({"runs": [GuardRun("g", "k", "tool_invoke", "allow", -1.0)]}, "latency"),
    ({"result": {"when": object()}}, "result is not a JSON value"),
]


@pytest.mark.parametrize(("overrides", "message"), BAD_VALUES)
def test_closed_vocabularies_and_bad_values_are_rejected(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ReceiptError, match=message):
        build_receipt(decision(0, **overrides))


@pytest.mark.parametrize(("overrides", "message"), BAD_VALUES)
def test_the_callers_checks_refuse_what_build_receipt_refuses(
    overrides: dict[str, object], message: str
) -> None:
    """batched: the receipt is built on the writer after the answer went out, so the caller's
    side (check_record, payload_hashes) must refuse every record build_receipt would."""
    record = decision(0, **overrides)
    with pytest.raises(ReceiptError, match=message):
        check_record(record)
        payload_hashes(record)


def test_the_callers_checks_pass_every_good_record() -> None:
    for i in range(5):
        record = decision(i)
        check_record(record)
        hashes = payload_hashes(record)
        prebuilt = build_receipt(record, receipt_id="0" * 28, hashes=hashes)
        assert prebuilt == build_receipt(record, receipt_id="0" * 28)


def test_every_policy_decision_builds() -> None:
    for value in PolicyDecision:
        assert build_receipt(decision(0, decision=value.value)).decision == value.value


def test_side_effects_use_only_explicit_hints_and_required_mode_uses_mcp_defaults() -> None:
    assert declared_side_effects(None) == []
    assert declared_side_effects({"name": "x"}) == []
    tool = {
        "annotations": {
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        }
    }
    assert declared_side_effects(tool) == ["non_destructive", "idempotent", "closed_world"]
    assert required_mode(tool) == "write"
    assert required_mode({"name": "x"}) == "destructive"  # MCP: destructive unless told otherwise
    assert required_mode({"annotations": {"readOnlyHint": True}}) == "read"
    assert required_mode(None) is None


def test_oversized_or_non_json_evidence_is_summarised() -> None:
    big = GuardRun("g", "k", "tool_invoke", "allow", 0.1, evidence={"blob": "x" * 5000})
    odd = GuardRun("h", "k", "tool_invoke", "allow", 0.1, evidence={"set": {1}})
    guards = build_receipt(decision(0, runs=[big, odd])).data["guards"]
    assert guards[0]["evidence"]["omitted"] == "too_large"
    assert guards[1]["evidence"] == {"omitted": "not_json"}


@pytest.mark.parametrize(
    "evidence",
    [
        {"z": 1, "a": [3, {"y": None, "b": True}], "m": "text"},  # unsorted, nested: as is
        {"server_identity": {"digest": "ab" * 32}, "pinned": "tofu", "n": 2**63 - 1},
        {"big": 2**63},  # beyond 64 bits: the canonical path
        {"f": 1.0, "g": 0.5},  # floats: normalised (1.0 is written 1)
        {"t": ("a", "b")},  # a tuple: the canonical path writes a list
        {"ok": "x" * 3000},  # over 2 KiB: summarised by its hash
    ],
)
def test_guard_evidence_is_embedded_in_canonical_form(evidence: dict[str, object]) -> None:
    """Plain evidence (ASCII, 64-bit ints, no floats) is embedded without normalising; the bytes
    are the same as through the canonical path."""
    run = GuardRun("g", "k", "tool_invoke", "allow", 0.1, evidence=evidence)
    receipt = build_receipt(decision(0, runs=[run]))
    assert receipt.canonical == canonical_bytes(receipt.data)
    embedded = receipt.data["guards"][0]["evidence"]
    if len(canonical_bytes(evidence)) > 2048:
        assert embedded["omitted"] == "too_large"
        assert embedded["sha256"] == canonical_sha256(evidence)
    else:
        assert canonical_bytes(embedded) == canonical_bytes(normalise(evidence))


def test_receipt_bytes_are_canonical_for_unicode_floats_and_odd_keys() -> None:
    nfd_name = unicodedata.normalize("NFD", "café_tool")
    runs = [
        GuardRun(
            "g",
            "k",
            "tool_invoke",
            "allow",
            2.0,
            evidence={"\U0001f600": 1, "\uff21": 2, "é": nfd_name},
        ),
        GuardRun("h", "k", "tool_invoke", "allow", 1.0000004),
    ]
    receipt = build_receipt(
        decision(0, name=nfd_name, identity=Identity(nfd_name), runs=runs, gateway_ms=3.0)
    )
    assert receipt.canonical == canonical_bytes(receipt.data)
    assert receipt.data["name"] == unicodedata.normalize("NFC", nfd_name)
    assert receipt.data["gateway_ms"] == 3 and isinstance(receipt.data["gateway_ms"], int)


@settings(max_examples=60, deadline=None)
@given(
    name=st.text(max_size=12),
    upstream=st.text(min_size=1, max_size=8),
    duration=st.floats(min_value=0, max_value=1e6, allow_nan=False),
    evidence=st.dictionaries(
        st.text(max_size=4), st.one_of(st.integers(-5, 5), st.text(max_size=4)), max_size=3
    ),
    i=st.integers(0, 4),
)
def test_receipts_are_canonical_and_valid_for_arbitrary_text(
    name: str, upstream: str, duration: float, evidence: dict[str, object], i: int
) -> None:
    run = GuardRun("g", "k", "tool_invoke", "allow", duration, evidence=evidence)
    receipt = build_receipt(
        decision(i, name=name, upstream=upstream, runs=[run], gateway_ms=duration)
    )
    assert receipt.canonical == canonical_bytes(receipt.data)
    RECEIPT_VALIDATOR.validate(receipt.data)


def test_every_kind_of_receipt_validates_against_the_schema() -> None:
    for i in range(5):
        RECEIPT_VALIDATOR.validate(build_receipt(decision(i)).data)


def test_schemas_are_valid_draft_2020_12_with_versioned_ids() -> None:
    for schema in (receipt_schema(), checkpoint_schema(), config_schema()):
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"].startswith("urn:mcpward:schema:") and schema["$id"].endswith(":v1")
    assert receipt_schema()["properties"]["decision"]["enum"] == [m.value for m in PolicyDecision]
    assert "evidence" in config_schema()["properties"]


def test_schema_rejects_unknown_decision_and_extra_fields() -> None:
    data = dict(build_receipt(decision(0)).data)
    with pytest.raises(jsonschema.ValidationError):
        RECEIPT_VALIDATOR.validate({**data, "decision": "maybe"})
    with pytest.raises(jsonschema.ValidationError):
        RECEIPT_VALIDATOR.validate({**data, "arguments": {"x": 1}})
