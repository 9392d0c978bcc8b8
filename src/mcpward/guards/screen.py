"""An advisory screen of one server's listed contracts before it is wired: what the list-phase
guards would drop, whether its id imitates an allowed one, and schema red flags, as one verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import re2

from mcpward.guards.server_allowlist import typosquat_of


class ScreenVerdict(str, Enum):
    ALLOW = "ALLOW"  # nothing found
    REVIEW = "REVIEW"  # red flags a person should look at
    DENY = "DENY"  # a guard would drop items, or the id imitates an allowed one
    UNVERIFIED = "UNVERIFIED"  # the server could not be listed: nothing was judged


SCREEN_MEANING = (
    "A screen is advisory: it judges the contracts the server listed, not what it does; ALLOW "
    "does not mean safe, and DENY means a guard would drop or refuse what it saw."
)

EXIT_CODES = {
    ScreenVerdict.ALLOW: 0,
    ScreenVerdict.REVIEW: 1,
    ScreenVerdict.DENY: 2,
    ScreenVerdict.UNVERIFIED: 3,
}

# A parameter that asks for a credential, or for the contents of a file the user keeps private.
_CREDENTIAL_NAME = re2.compile(
    r"(?i)(^|[_-])(pass(word|wd|phrase)?|secret|token|api[_-]?key|private[_-]?key|credentials?"
    r"|ssh[_-]?key|cookie|session[_-]?id|auth(orization)?)([_-]|$)"
)
_FILE_CONTENT_TEXT = re2.compile(
    r"(?i)(contents? of|paste|read|provide|include)\b.{0,40}(~/|\.ssh|id_rsa|\.env\b|\.aws|"
    r"\.netrc|credentials|private key|password|config(uration)? file)"
)
# Verbs that name an action that writes, destroys, moves money or runs code.
_DESTRUCTIVE_NAME = re2.compile(
    r"(?i)(^|[_-])(delete|remove|drop|destroy|erase|wipe|purge|truncate|kill|terminate|"
    r"overwrite|reset|revoke|transfer|pay|send|exec|execute|run[_-]?(shell|command|code))"
    r"([_-]|$)"
)


@dataclass(slots=True)
class RedFlag:
    item: str
    flag: str  # credential-parameter | file-content-request | destructive-not-annotated
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"item": self.item, "flag": self.flag, "detail": self.detail}


@dataclass(slots=True)
class ScreenReport:
    upstream: str
    verdict: ScreenVerdict
    reasons: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # items the list-phase guards would drop
    typosquat_of: str | None = None
    red_flags: list[RedFlag] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    identity: dict[str, str | None] | None = None  # the server's identity digest(s)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_json(self) -> dict[str, Any]:
        return {
            "upstream": self.upstream,
            "verdict": self.verdict.value,
            "reasons": self.reasons,
            "would_drop": self.dropped,
            "typosquat_of": self.typosquat_of,
            "red_flags": [f.to_json() for f in self.red_flags],
            "counts": self.counts,
            "provenance": {"server_identity": self.identity, "meaning": SCREEN_MEANING},
        }


def red_flags(tools: list[dict[str, Any]]) -> list[RedFlag]:
    """Schema red flags the taxonomy knows: parameters asking for credentials or private file
    contents, and tools whose name says they write or destroy while their annotations claim
    read-only or non-destructive."""
    flags: list[RedFlag] = []
    for tool in tools:
        name = str(tool.get("name", ""))
        schema = tool.get("inputSchema")
        props = schema.get("properties") if isinstance(schema, dict) else None
        for param, spec in (props or {}).items() if isinstance(props, dict) else ():
            if _CREDENTIAL_NAME.search(str(param)):
                flags.append(RedFlag(name, "credential-parameter", f"parameter {param!r}"))
            text = spec.get("description") if isinstance(spec, dict) else None
            if isinstance(text, str) and _FILE_CONTENT_TEXT.search(text):
                flags.append(RedFlag(name, "file-content-request", f"parameter {param!r}"))
        description = tool.get("description")
        if isinstance(description, str) and _FILE_CONTENT_TEXT.search(description):
            flags.append(RedFlag(name, "file-content-request", "description"))
        ann = tool.get("annotations")
        ann = ann if isinstance(ann, dict) else {}
        claims_safe = ann.get("readOnlyHint") is True or ann.get("destructiveHint") is False
        if claims_safe and _DESTRUCTIVE_NAME.search(name):
            flags.append(
                RedFlag(name, "destructive-not-annotated", "its name says it writes or destroys")
            )
    return flags


def judge(
    upstream: str,
    lists: dict[str, list[dict[str, Any]]] | None,
    dropped: list[str],
    allowed_ids: list[str],
) -> ScreenReport:
    """The verdict on one screened server (`lists` None: it could not be listed)."""
    if lists is None:
        return ScreenReport(
            upstream, ScreenVerdict.UNVERIFIED, ["the server could not be started or listed"]
        )
    report = ScreenReport(upstream, ScreenVerdict.ALLOW)
    report.counts = {key: len(items) for key, items in lists.items()}
    report.dropped = dropped
    report.typosquat_of = typosquat_of(upstream, allowed_ids) if allowed_ids else None
    report.red_flags = red_flags(lists.get("tools", []))
    if dropped:
        report.reasons.append(f"the list-phase guards would drop {len(dropped)} item(s)")
    if report.typosquat_of:
        report.reasons.append(f"the id {upstream!r} imitates the allowed {report.typosquat_of!r}")
    if report.red_flags:
        report.reasons.append(f"{len(report.red_flags)} schema red flag(s)")
    if dropped or report.typosquat_of:
        report.verdict = ScreenVerdict.DENY
    elif report.red_flags:
        report.verdict = ScreenVerdict.REVIEW
    else:
        report.reasons.append("no finding")
    return report
