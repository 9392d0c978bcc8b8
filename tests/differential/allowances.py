"""The written allow-list of the differential suite (docs/conformance.md, "Differential suite").

Two kinds of entries, nothing else is tolerated:
- NORMALISED: values the server itself makes different on every run (the same server run twice
  directly differs there too); both sides are rewritten the same way.
- DOCUMENTED: differences mcpward makes on purpose; each is applied only in its exact shape.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from tests.differential.recorder import Recording

# NORMALISED: times of day the servers print (mcp-server-time's ISO 8601 `datetime` of "now",
# server-everything's "created at 10:44:29 PM" in its dynamic resources, also inside blobs).
ISO_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")
CLOCK_TIME = re.compile(r"\b\d{1,2}:\d{2}:\d{2}\s?[AP]M\b")

ALLOWED = {
    "tasks-removed": "mcpward removes the `tasks` capability (docs/conformance.md): it does not "
    "relay task-augmented requests, so it must not advertise them.",
    "unknown-item-refusal": "a call to a tool or prompt the connection does not list is refused "
    "by mcpward with -32602 and its reason in `data`, never forwarded; the server's own refusal "
    "(a -32602 error, or a tool result with isError) is not seen.",
}


def _times(text: str) -> str:
    return CLOCK_TIME.sub("<time>", ISO_DATETIME.sub("<datetime>", text))


def _normalise_value(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: _normalise_value(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise_value(v) for v in value]
    if isinstance(value, str) and key == "blob":
        try:
            text = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return value
        return "base64:" + _times(text)
    if isinstance(value, str):
        return _times(value)
    return value


def _is_refusal(outcome: dict[str, Any]) -> bool:
    if "error" in outcome:
        return bool(outcome["error"]["code"] == -32602)
    return bool(outcome.get("result", {}).get("isError"))


def _gateway_refused_unknown(outcome: dict[str, Any]) -> bool:
    error = outcome.get("error", {})
    data = error.get("data")
    return (
        error.get("code") == -32602
        and isinstance(data, dict)
        and data.get("code") == "unlisted_item"
    )


def reconcile(direct: Recording, through: Recording) -> tuple[Recording, Recording, set[str]]:
    """Both recordings with the allow-list applied, and the DOCUMENTED entries that were used."""
    direct = [[step, _normalise_value(outcome)] for step, outcome in direct]
    through = [[step, _normalise_value(outcome)] for step, outcome in through]
    used: set[str] = set()
    for (step, d), (other, t) in zip(direct, through, strict=False):
        if step != other:
            break
        if step == "capabilities" and "tasks" in d["result"] and "tasks" not in t["result"]:
            d["result"] = {k: v for k, v in d["result"].items() if k != "tasks"}
            used.add("tasks-removed")
        if _gateway_refused_unknown(t) and _is_refusal(d):
            for outcome in (d, t):
                outcome.clear()
                outcome["refused"] = "unknown item"
            used.add("unknown-item-refusal")
    return direct, through, used
