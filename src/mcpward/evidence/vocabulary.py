"""The closed vocabularies of receipts and verification reports (append-only; see docs/evidence.md).

A value outside these sets is a bug in the producer, never a new value: builders reject it.
"""

from __future__ import annotations

from enum import Enum, StrEnum


class PolicyDecision(StrEnum):
    """What the gateway decided about one message (receipt field `decision`)."""

    ALLOW = "allow"
    DENY = "deny"
    HOLD = "hold"
    MODIFY = "modify"
    REDACT = "redact"
    NOT_EVALUATED = "not_evaluated"
    WOULD_DENY_DRY_RUN = "would_deny_dry_run"
    WOULD_HOLD_DRY_RUN = "would_hold_dry_run"
    ERROR = "error"


class GuardOutcome(StrEnum):
    """One guard's outcome at one phase (mirrors `pipeline.executor.GuardRun.outcome`)."""

    ALLOW = "allow"
    DENY = "deny"
    HOLD = "hold"
    MODIFY = "modify"
    ERROR = "error"
    TIMEOUT = "timeout"


class ConsultOutcome(StrEnum):
    """What the tier-2 semantic consult answered about one contract change (rug_pull evidence
    `consult.outcome`). Only `hold` changes a verdict (PROCEED to HOLD); every other value keeps
    the deterministic verdict and says why."""

    HOLD = "hold"  # the model flagged the change: the PROCEED was raised to a HOLD
    PROCEED = "proceed"  # the model saw nothing to flag: the PROCEED stands
    TIMEOUT = "timeout"  # no answer within the configured deadline
    UNREACHABLE = "unreachable"  # the connection failed (refused, reset, DNS)
    EGRESS_BLOCKED = "egress_blocked"  # the egress filter refused the endpoint's address
    HTTP_ERROR = "http_error"  # an HTTP status other than 200
    OVERSIZE = "oversize"  # the answer was over the size cap
    NOT_JSON = "not_json"  # the answer (or its message content) is not JSON
    SCHEMA_MISMATCH = "schema_mismatch"  # JSON that does not match the answer schema
    REFUSED = "refused"  # the model declined to answer
    OVERLOADED = "overloaded"  # too many consults in flight: this one was not asked
    ERROR = "error"  # anything else (a credential that cannot be read, a bug): not asked


class RedactionReason(StrEnum):
    """Why content was redacted (receipt field `redactions`)."""

    SECRET = "secret"
    PII = "pii"
    SENSITIVE_CONTENT = "sensitive_content"
    PROMPT_INJECTION = "prompt_injection"
    POLICY = "policy"
    SIZE_LIMIT = "size_limit"


class SideEffect(StrEnum):
    """A side effect a tool declares through its MCP annotations (only explicit hints count)."""

    READ_ONLY = "read_only"
    DESTRUCTIVE = "destructive"
    NON_DESTRUCTIVE = "non_destructive"
    IDEMPOTENT = "idempotent"
    OPEN_WORLD = "open_world"
    CLOSED_WORLD = "closed_world"


class RequiredMode(StrEnum):
    """The least permission a caller needs for a tool, by its annotations with MCP's defaults."""

    READ = "read"
    WRITE = "write"
    DESTRUCTIVE = "destructive"


class LedgerState(StrEnum):
    """The verdict of `mcpward ledger verify` on the chain."""

    OK = "ok"
    TAMPERED = "tampered"
    TRUNCATED = "truncated"
    UNSIGNED = "unsigned"
    EMPTY = "empty"


class ReceiptIntegrity(StrEnum):
    """The verdict on receipts exported as files, against the hashes the ledger anchors."""

    OK = "ok"
    MISSING = "missing"
    TAMPERED = "tampered"
    NOT_LINKED = "not_linked"


class VerifyReason(StrEnum):
    """Why verification reached its state (the first problem found)."""

    OK = "ok"
    NO_ENTRIES = "no_entries"
    NO_CHECKPOINT = "no_checkpoint"
    FEWER_ENTRIES_THAN_CHECKPOINT = "fewer_entries_than_checkpoint"
    MALFORMED_ENTRY = "malformed_entry"
    SEQUENCE_GAP = "sequence_gap"
    SEQUENCE_MISMATCH = "sequence_mismatch"
    PREV_HASH_MISMATCH = "prev_hash_mismatch"
    ENTRY_HASH_MISMATCH = "entry_hash_mismatch"
    RECEIPT_HASH_MISMATCH = "receipt_hash_mismatch"
    KEY_ID_MISMATCH = "key_id_mismatch"
    HMAC_MISSING = "hmac_missing"
    HMAC_KEY_UNKNOWN = "hmac_key_unknown"
    HMAC_MISMATCH = "hmac_mismatch"
    CHECKPOINT_MALFORMED = "checkpoint_malformed"
    CHECKPOINT_KEY_UNKNOWN = "checkpoint_key_unknown"
    CHECKPOINT_SIGNATURE_INVALID = "checkpoint_signature_invalid"
    CHECKPOINT_ORIGIN_MISMATCH = "checkpoint_origin_mismatch"
    CHECKPOINT_HEAD_MISMATCH = "checkpoint_head_mismatch"


class EntryKind(StrEnum):
    """What a ledger entry holds."""

    RECEIPT = "receipt"
    KEY_ROTATION = "key_rotation"
    REVIEW = "review"  # an operator accepted or kept a HOLD in the review console
    VALIDATION = "validation"  # a tier-3 verdict on a held tool (`mcpward validate`)


def values(vocabulary: type[Enum]) -> list[str]:
    """The strings of a vocabulary, in declaration order (used by the JSON Schemas)."""
    return [str(member.value) for member in vocabulary]
