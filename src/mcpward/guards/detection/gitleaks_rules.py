"""gitleaks' default rule file (vendored in data/, MIT) loaded as RE2 secret rules: each rule's
regex, secret group, entropy threshold, keyword prefilter and (path-free) allowlists.
"""

from __future__ import annotations

import logging
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import re2

from mcpward.guards.detection.entropy import shannon_entropy
from mcpward.guards.detection.regex import PatternError, compile_pattern

log = logging.getLogger(__name__)

DATA_FILE = "gitleaks.toml"
MIN_KEYWORD = 3


@dataclass(frozen=True, slots=True)
class Allowlist:
    """A gitleaks allowlist without its path/commit parts (a gateway sees no file paths)."""

    target: str  # "secret" (default), "match" or "line": what the regexes are tested against
    regexes: tuple[Any, ...]
    stopwords: tuple[str, ...]  # lower-case; a secret containing one is not reported

    def allows(self, secret: str, match: str, line: str) -> bool:
        subject = {"match": match, "line": line}.get(self.target, secret)
        if any(r.search(subject) for r in self.regexes):
            return True
        lowered = secret.lower()
        return any(word in lowered for word in self.stopwords)


@dataclass(frozen=True, slots=True)
class GitleaksRule:
    id: str  # the gitleaks rule id, reported as the secret's kind
    pattern: str
    regex: Any
    entropy: float  # 0: no test; otherwise the secret's entropy must exceed it (as gitleaks)
    keywords: tuple[str, ...]  # lower-case literals; the rule runs only if one is in the text
    secret_group: int  # 0: the first non-empty group, else the whole match
    allowlists: tuple[Allowlist, ...]
    keyword_regex: Any = None  # finds the keywords (case-insensitive); None: no keywords

    def secret_span(self, match: Any) -> tuple[int, int]:
        if self.secret_group and self.secret_group <= self.regex.groups:
            span: tuple[int, int] = match.span(self.secret_group)
            if span[0] >= 0:
                return span
        for group in range(1, self.regex.groups + 1):
            start, end = match.span(group)
            if start >= 0 and end > start:
                return start, end
        return match.start(), match.end()

    def accepts(self, secret: str, match: str, line: str, extra: tuple[Allowlist, ...]) -> bool:
        """The entropy test and the rule's and the global allowlists, as gitleaks applies them."""
        if self.entropy and shannon_entropy(secret) <= self.entropy:
            return False
        return not any(a.allows(secret, match, line) for a in self.allowlists + extra)


@dataclass(frozen=True, slots=True)
class GitleaksRuleSet:
    rules: tuple[GitleaksRule, ...]
    global_allowlist: tuple[Allowlist, ...]
    skipped: dict[str, str]  # rule id -> why it is not used (RE2 syntax, needs a file path)


def _allowlist(raw: dict[str, Any]) -> Allowlist | None:
    """None when the allowlist only works with paths or commits, which a gateway never has."""
    if raw.get("paths") and str(raw.get("condition", "OR")).upper() == "AND":
        return None  # needs a path match too
    regexes: list[Any] = []
    for pattern in raw.get("regexes", []):
        try:
            regexes.append(compile_pattern(pattern))
        except PatternError:
            continue  # an allowlist entry we cannot compile only makes us stricter
    stopwords = tuple(str(w).lower() for w in raw.get("stopwords", []))
    if not regexes and not stopwords:
        return None
    return Allowlist(str(raw.get("regexTarget", "secret")), tuple(regexes), stopwords)


def parse_rules(text: str) -> GitleaksRuleSet:
    data = tomllib.loads(text)
    global_raw = data.get("allowlist")
    globals_ = [a for a in [_allowlist(global_raw)] if a] if global_raw else []
    for raw in data.get("allowlists", []):
        entry = _allowlist(raw)
        if entry:
            globals_.append(entry)
    rules: list[GitleaksRule] = []
    skipped: dict[str, str] = {}
    for raw in data.get("rules", []):
        rule_id = str(raw["id"])
        pattern = raw.get("regex")
        if not pattern:
            skipped[rule_id] = "matches file paths only"
            continue
        if raw.get("path"):
            skipped[rule_id] = "applies only to files whose path matches"
            continue
        keywords = tuple(str(k).lower() for k in raw.get("keywords", []))
        if any(len(k) < MIN_KEYWORD for k in keywords):
            # The prefilter is only as selective as its shortest keyword: `ey`, `sk`, `s.`,
            # `q~` occur in almost any text. Built-in rules cover these kinds (jwt, twilio-key,
            # vault-token, azure-client-secret).
            skipped[rule_id] = "keywords too short to prefilter"
            continue
        try:
            compiled = compile_pattern(pattern)
        except PatternError:
            skipped[rule_id] = "RE2 cannot compile its regex"
            continue
        allowlists = tuple(
            a for a in (_allowlist(r) for r in raw.get("allowlists", [])) if a is not None
        )
        rules.append(
            GitleaksRule(
                id=rule_id,
                pattern=pattern,
                regex=compiled,
                entropy=float(raw.get("entropy", 0.0)),
                keywords=keywords,
                secret_group=int(raw.get("secretGroup", 0)),
                allowlists=allowlists,
                keyword_regex=compile_pattern("(?i)" + "|".join(re2.escape(k) for k in keywords))
                if keywords
                else None,
            )
        )
    return GitleaksRuleSet(tuple(rules), tuple(globals_), skipped)


@lru_cache(maxsize=1)
def default_rules() -> GitleaksRuleSet:
    """The vendored rule file, parsed and compiled once per process."""
    text = resources.files(__package__).joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    ruleset = parse_rules(text)
    if ruleset.skipped:
        log.debug(
            "gitleaks rules: %d loaded, %d skipped (%s)",
            len(ruleset.rules),
            len(ruleset.skipped),
            ", ".join(sorted(ruleset.skipped)),
        )
    return ruleset
