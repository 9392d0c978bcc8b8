"""JSON Schemas (Draft 2020-12, versioned `$id`) of receipts, checkpoints and the configuration.

Closed vocabularies come from `evidence.vocabulary`: a vocabulary edit reaches the schema by itself.
"""

from __future__ import annotations

from typing import Any

from mcpward.evidence.checkpoint import CHECKPOINT_VERSION
from mcpward.evidence.receipt import CODE, CONTRACT_HASH, PATTERN_ID, RECEIPT_ID, RECEIPT_VERSION
from mcpward.evidence.vocabulary import (
    ConsultOutcome,
    GuardOutcome,
    PolicyDecision,
    RedactionReason,
    RequiredMode,
    SideEffect,
    values,
)

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_BASE = "urn:mcpward:schema"
RECEIPT_SCHEMA_ID = f"{SCHEMA_BASE}:receipt:v{RECEIPT_VERSION}"
CHECKPOINT_SCHEMA_ID = f"{SCHEMA_BASE}:checkpoint:v{CHECKPOINT_VERSION}"
CONFIG_SCHEMA_ID = f"{SCHEMA_BASE}:config:v1"
SHA256 = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
RFC3339 = {"type": "string", "format": "date-time", "pattern": r"Z$"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _enum(vocabulary: Any, description: str) -> dict[str, Any]:
    return {"type": "string", "enum": values(vocabulary), "description": description}


def _millis(description: str) -> dict[str, Any]:
    return _nullable({"type": "number", "minimum": 0, "description": description})


def receipt_schema() -> dict[str, Any]:
    consult = {
        "type": "object",
        "description": "The drift gate's tier-2 semantic consult about this contract change.",
        "required": ["outcome"],
        "properties": {
            "outcome": _enum(ConsultOutcome, "Only hold changed the verdict (PROCEED to HOLD)."),
            "model": {"type": "string"},
            "triggers": {"type": "array", "items": {"type": "string"}},
        },
    }
    guard = {
        "type": "object",
        "additionalProperties": False,
        "required": [
            "id",
            "kind",
            "phase",
            "outcome",
            "duration_ms",
            "code",
            "shadow",
            "failure_mode",
            "evidence",
        ],
        "properties": {
            "id": {"type": "string", "description": "The guard's id from the config."},
            "kind": {"type": "string", "description": "The guard kind, e.g. tool_filter."},
            "phase": {"type": "string", "description": "The pipeline phase it ran at."},
            "outcome": _enum(GuardOutcome, "What the guard answered (or error/timeout)."),
            "duration_ms": {"type": "number", "minimum": 0},
            "code": _nullable({"type": "string", "description": "The guard's deny/hold code."}),
            "shadow": {"type": "boolean", "description": "A deny/hold recorded but not enforced."},
            "failure_mode": _nullable({"type": "string", "enum": ["fail_closed", "fail_open"]}),
            "evidence": {
                "type": "object",
                "description": "Receipt-facing metadata from the guard (ids, counts; no content).",
                "properties": {"consult": consult},
            },
        },
    }
    properties: dict[str, Any] = {
        "version": {"const": RECEIPT_VERSION},
        "receipt_id": {"type": "string", "pattern": RECEIPT_ID.pattern},
        "time": {**RFC3339, "description": "When the client's message arrived (UTC)."},
        "upstream": _nullable({"type": "string", "description": "The upstream's configured id."}),
        "method": {"type": "string", "minLength": 1, "description": "The JSON-RPC method."},
        "name": _nullable({"type": "string", "description": "Tool/prompt name or resource URI."}),
        "session_id": _nullable({"type": "string"}),
        "era": _nullable({"type": "string", "description": "handshake or 2026-07-28."}),
        "client_id": _nullable({"type": "string"}),
        "actor_id": _nullable({"type": "string"}),
        "declared_side_effects": {
            "type": "array",
            "uniqueItems": True,
            "items": _enum(SideEffect, "A side effect the tool's annotations state."),
        },
        "required_mode": _nullable(_enum(RequiredMode, "Least permission the tool needs.")),
        "input_hash": _nullable({**SHA256, "description": "SHA-256 of the canonical arguments."}),
        "contract_hash": _nullable({"type": "string", "pattern": CONTRACT_HASH.pattern}),
        "decision": _enum(PolicyDecision, "The gateway's decision."),
        "stopped_by": _nullable({"type": "string", "description": "The guard that stopped it."}),
        "guards": {"type": "array", "items": guard},
        "redactions": {
            "type": "array",
            "uniqueItems": True,
            "items": _enum(RedactionReason, "Why something was redacted."),
        },
        "redaction_counts": {
            "type": "object",
            "propertyNames": {"pattern": PATTERN_ID.pattern},
            "additionalProperties": {"type": "integer", "minimum": 0},
        },
        "output_hash": _nullable({**SHA256, "description": "SHA-256 of the canonical result."}),
        "error_code": _nullable({"type": "integer", "description": "JSON-RPC error code sent."}),
        "error_reason": _nullable({"type": "string", "pattern": CODE.pattern}),
        "gateway_ms": _millis("Time spent in the gateway, excluding the upstream's."),
        "upstream_ms": _millis("Time the upstream took to answer."),
    }
    return {
        "$schema": DRAFT,
        "$id": RECEIPT_SCHEMA_ID,
        "title": "mcpward decision receipt",
        "description": "One decision of the gateway. Arguments and results appear only as hashes.",
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": properties,
    }


def checkpoint_schema() -> dict[str, Any]:
    properties: dict[str, Any] = {
        "version": {"const": CHECKPOINT_VERSION},
        "origin": {"type": "string", "pattern": "^[!-~]{1,255}$"},
        "size": {
            "type": "integer",
            "minimum": 1,
            "description": "Entries the checkpoint commits to.",
        },
        "head_hash": {**SHA256, "description": "Chain hash of entry size-1 (hex)."},
        "time": RFC3339,
        "key_name": _nullable({"type": "string"}),
        "key_id": _nullable({"type": "string", "pattern": "^[0-9a-f]{8}$"}),
        "note": {
            "type": "string",
            "description": "The C2SP signed note: origin, size, base64 head, time; signature.",
        },
    }
    return {
        "$schema": DRAFT,
        "$id": CHECKPOINT_SCHEMA_ID,
        "title": "mcpward ledger checkpoint",
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": properties,
    }


def config_schema() -> dict[str, Any]:
    from mcpward.config.models import GatewayConfig

    schema = GatewayConfig.model_json_schema()
    return {"$schema": DRAFT, "$id": CONFIG_SCHEMA_ID, **schema}


SCHEMAS = {
    "receipt": receipt_schema,
    "checkpoint": checkpoint_schema,
    "config": config_schema,
}
