"""Turning an out-of-process guard's answer (WASM guest or HTTP hook) into a pipeline Decision.

Both speak the same JSON ModifyAction; anything off-format is a contract breach
(DecisionFormatError), which the caller treats as a guard error: the failure mode decides.
"""

from __future__ import annotations

from typing import Any

from mcpward.pipeline.decisions import AddWarning, Deny, ModifyAction, RedactFields, ReplaceTools
from mcpward.pipeline.phases import LIST_PHASES, Phase
from mcpward.protocol.jsonrpc import loads

MAX_CODE_CHARS = 128
MAX_MESSAGE_CHARS = 2048
MAX_PATHS = 64
MAX_PATH_CHARS = 512
MAX_DETAILS_BYTES = 16 * 1024
DEFAULT_REPLACEMENT = "[REDACTED]"

# The seed's Rust enum serialised by serde (externally tagged) is accepted too.
_SERDE_TAGS = {
    "ReplaceTools": "replace_tools",
    "RedactFields": "redact_fields",
    "AddWarning": "add_warning",
}


class DecisionFormatError(ValueError):
    """The answer breaks the documented format (docs/wasm-guards.md, "Decisions")."""


def _text(value: Any, what: str, limit: int, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not allow_empty):
        raise DecisionFormatError(f"{what} must be a {'' if allow_empty else 'non-empty '}string")
    if len(value) > limit:
        raise DecisionFormatError(f"{what} is longer than {limit} characters")
    return value


def decode_deny(code: Any, message: Any, details: Any, evidence: dict[str, Any]) -> Deny:
    """`details` is a JSON value (or None); a non-object is kept as {"value": ...}."""
    code = _text(code, "deny code", MAX_CODE_CHARS)
    message = _text(message, "deny message", MAX_MESSAGE_CHARS)
    if details is not None and not isinstance(details, dict):
        details = {"value": details}
    return Deny(code=code, message=message, details=details, evidence=evidence)


def decode_details_json(text: str | None) -> Any:
    if text is None:
        return None
    if len(text.encode("utf-8", "surrogatepass")) > MAX_DETAILS_BYTES:
        raise DecisionFormatError(f"deny details are larger than {MAX_DETAILS_BYTES} bytes")
    try:
        return loads(text)
    except ValueError:
        raise DecisionFormatError("deny details are not valid JSON") from None


def parse_modify_json(text: str) -> Any:
    try:
        return loads(text)
    except ValueError:
        raise DecisionFormatError("the modify action is not valid JSON") from None


def _normalise(action: Any) -> dict[str, Any]:
    if not isinstance(action, dict):
        raise DecisionFormatError("the modify action must be a JSON object")
    if "type" in action:
        return action
    if len(action) == 1:
        ((tag, body),) = action.items()
        kind = _SERDE_TAGS.get(tag)
        if kind == "replace_tools":
            return {"type": kind, "tools": body}
        if kind is not None and isinstance(body, dict):
            return {"type": kind, **body}
    raise DecisionFormatError(
        'the modify action needs a "type": replace_tools, redact_fields or add_warning'
    )


def _item_key(phase: Phase) -> str:
    return "uri" if phase is Phase.RESOURCES_LIST else "name"


def _replace_tools(items: Any, phase: Phase, listed: Any) -> ReplaceTools:
    """Filter or rewrite the listed items; a guard can drop or reshape items but never invent one.

    An entry names a listed item and may override some of its fields; fields it leaves out keep
    the upstream's values (a WASM guest only ever sees name, description and input schema).
    """
    if phase not in LIST_PHASES:
        raise DecisionFormatError(f"replace_tools applies to list phases only, not {phase.value}")
    if not isinstance(items, list):
        raise DecisionFormatError("replace_tools needs a list in tools")
    key = _item_key(phase)
    by_key = (
        {item.get(key): item for item in listed if isinstance(item, dict)}
        if isinstance(listed, list)
        else {}
    )
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    for entry in items:
        if not isinstance(entry, dict) or not isinstance(entry.get(key), str):
            raise DecisionFormatError(
                f'every replace_tools entry must be an object with a string "{key}"'
            )
        ident = entry[key]
        if ident in seen:
            raise DecisionFormatError(f"replace_tools lists {ident!r} twice")
        seen.add(ident)
        original = by_key.get(ident)
        if original is None:
            raise DecisionFormatError(
                f"replace_tools names {ident!r}, which the upstream did not list"
            )
        merged = dict(original)
        for field, value in entry.items():
            merged["inputSchema" if field == "input_schema" else field] = value
        kept.append(merged)
    return ReplaceTools(kept)


def decode_modify_action(action: Any, phase: Phase, payload: Any) -> ModifyAction:
    """A ModifyAction from its JSON form, checked against the phase and the listed items."""
    body = _normalise(action)
    kind = body.get("type")
    if kind == "replace_tools":
        return _replace_tools(body.get("tools"), phase, payload)
    if kind == "redact_fields":
        paths = body.get("paths")
        if not isinstance(paths, list) or not paths or len(paths) > MAX_PATHS:
            raise DecisionFormatError(
                f"redact_fields needs 1 to {MAX_PATHS} JSONPath strings in paths"
            )
        checked = [_text(p, "a redact_fields path", MAX_PATH_CHARS) for p in paths]
        replacement = body.get("replacement", DEFAULT_REPLACEMENT)
        return RedactFields(
            checked, _text(replacement, "replacement", MAX_MESSAGE_CHARS, allow_empty=True)
        )
    if kind == "add_warning":
        return AddWarning(_text(body.get("message"), "add_warning message", MAX_MESSAGE_CHARS))
    raise DecisionFormatError(f"unknown modify action type {kind!r}")
