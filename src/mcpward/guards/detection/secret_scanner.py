"""Finds and redacts secrets in text and in JSON payloads (including JSON held in strings).

Only kinds and counts leave this module as evidence; matched text never does.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import re2

from mcpward.guards.detection.entropy import shannon_entropy
from mcpward.guards.detection.extract import MAX_DEPTH, StructureLimit
from mcpward.guards.detection.gitleaks_rules import GitleaksRule, default_rules
from mcpward.guards.detection.regex import MultiPattern, encodable, line_prefilter
from mcpward.guards.detection.scanner import CustomPattern
from mcpward.guards.detection.secret_rules import (
    GENERIC_RULE,
    LITERAL_RULES,
    PROVIDER_RULES,
    SecretRule,
)
from mcpward.guards.detection.secret_values import other_value_family
from mcpward.pipeline.texts import PayloadTexts, is_media_field, payload_texts

_PLACEHOLDER_PARTS = (
    "xxxx", "****", "your", "example", "placeholder", "redacted", "dummy", "sample", "changeme",
    "<", ">", "{", "}", "${", "$(", "%s", "...", "here", "todo", "fixme", "insert", "replace",
    "foobar", "lorem", "&lt;", "&gt;", "00000000", "[", "]", "(", ")",
)  # fmt: skip
_GITLEAKS_PLACEHOLDERS = ("xxxx", "****", "your", "example", "placeholder", "redacted", "<", ">")
_COMMON_VALUES = frozenset(
    {"password", "passwd", "secret", "token", "null", "none", "true", "false", "undefined",
     "string", "required", "optional", "empty", "default", "hidden", "masked", "string|null",
     "apikey", "api_key", "not_set", "notset", "unset", "secrets", "tokens", "password1"}
)  # fmt: skip
_PASSWORD_WORDS = ("pass", "pwd")


# Scan windows around a gitleaks keyword (see SecretScanner._windows).
_WINDOW_BEFORE = 512
_WINDOW_AFTER = 8192
_MAX_WINDOWS = 64
# How much of the text after a keyword's value the value tests see (secret_values).
_AFTER = 16
# Strings longer than this are searched on their own: joined with the others, a hit in the join
# would be searched for a second time in the string itself (one pass more, not one less).
_JOIN_MAX_CHARS = 64 * 1024

LITERAL_KIND = LITERAL_RULES[0].kind
# Kinds whose match is, by syntax, the password slot of a credential.
_SLOT_KINDS = frozenset({"connection-string-password", "credential-argument"})

# gitleaks' keyword-assignment rule: a fallback like GENERIC_RULE, so provider rules win.
GITLEAKS_GENERIC = "generic-api-key"
# Rules that take whatever value follows a keyword: their values get the family tests of
# secret_values (slot rules such as a URL's password do not: there any value is the password).
_KEYWORD_KINDS = frozenset({GENERIC_RULE.kind, LITERAL_KIND, GITLEAKS_GENERIC})


def _placeholder(value: str) -> bool:
    """Documentation values: `xxxx`, `<your-key>`, `EXAMPLE`, `****`."""
    lowered = value.lower()
    return any(part in lowered for part in _GITLEAKS_PLACEHOLDERS)


@dataclass(frozen=True, slots=True)
class SecretMatch:
    kind: str
    start: int
    end: int


def _keyword_ends_word(text: str, end: int) -> bool:
    """`pass` in `password_x` or `apiKey` counts; `pass` in `passport`, `PAT` in `PATH` do not."""
    if end >= len(text) or not text[end].isalpha():
        return True
    return text[end - 1].islower() and text[end].isupper()


def _looks_like_reference(value: str) -> bool:
    """A variable, attribute, env-var name, path or URL rather than a literal secret."""
    if value[0] in "$%@/\\#&*" or value.startswith(("http", "./", "env.", "process.", "os.")):
        return True
    head, _, tail = value.partition(".")
    dotted = tail and head.isidentifier() and tail.replace(".", "_").isidentifier()
    if dotted and max(len(part) for part in value.split(".")) <= 40:
        return True  # self.password, config.api_key, ENV.FOO (not a long dotted token)
    core = value.replace("_", "")
    # LOCAL_DATABASE_PASSWORD: the name of a variable, not its value
    return "_" in value and core.isalnum() and core.upper() == core and not core.isdigit()


def _word_chain(value: str) -> bool:
    """snake/kebab-case identifiers (`amazon_s3_comp_files_access_key`), not random tokens."""
    parts = [p for p in value.replace("-", "_").split("_") if p]
    if len(parts) < 3:
        return False
    wordy = sum(1 for p in parts if p.isalpha() or (p[:-1].isalpha() and len(p) > 2))
    return wordy * 4 >= len(parts) * 3


def _route(value: str) -> bool:
    """`cms/sites/passwords#update`, `/users/:id/edit`: words between slashes, not a token."""
    parts = [p for p in re2.split(r"[/#:.]", value) if p]
    return (
        "/" in value
        and len(parts) >= 2
        and all(p.replace("_", "").replace("-", "").isalpha() and p.lower() == p for p in parts)
    )


def vet_value(value: str, rule: SecretRule, context: str, after: str = "") -> bool:
    """Placeholder, reference and entropy tests for spans of generic or vetted rules;
    `context` runs from the rule's match start to the value, `after` follows the value."""
    value = value.strip().rstrip(".,;:`'\"")
    passwordish = any(w in context.lower() for w in _PASSWORD_WORDS)
    if len(value) < (min(6, rule.min_length) if passwordish else rule.min_length):
        return False
    if rule.kind in _KEYWORD_KINDS and other_value_family(value, context, after):
        return False  # a type annotation, a time zone, a version, a docstring field...
    lowered = value.lower()
    if rule.kind in (LITERAL_KIND, "credential-argument") and (
        value.count(" ") >= 2 or value.endswith(".") or value[0] in ".+" or _route(value)
    ):
        return False  # a sentence, a description, string concatenation or a URL path
    if rule.min_length < 6:  # a password inside a URL or connection string: any literal counts
        # In a URL, a connection string or a credential constructor's password argument even
        # `secret` is the password in use; elsewhere a common word after `password =` is more
        # often a field name or a type.
        common = lowered in _COMMON_VALUES and rule.kind not in _SLOT_KINDS
        return not (
            value[0] in "$%{<["
            or "your" in lowered
            or len(set(value)) <= 1
            or common
            or _looks_like_reference(value)
        )
    if lowered in _COMMON_VALUES or any(part in lowered for part in _PLACEHOLDER_PARTS):
        return False
    if len(set(value)) <= 2 or _looks_like_reference(value) or _route(value):
        return False
    if rule.kind == GENERIC_RULE.kind and not any(c in context for c in "=:>"):
        # "pass through", "token Tokens", "secret sharing": in prose the word after the
        # keyword is a word; a secret separated only by a space must at least look random.
        bare = value.replace("-", "").replace("_", "").replace(".", "")
        if bare.isalpha() and (bare.islower() or bare.istitle() or len(bare) < 20):
            return False
    if rule.min_length >= 30 and (value.isalpha() or value.isdigit()):
        return False  # a long bare identifier or number, not a random token
    if _word_chain(value):
        return False
    if rule.kind == GENERIC_RULE.kind and not passwordish:
        if value.isalpha() and len(value) < 20:
            return False  # a word or identifier after "token", "key", "access"...
        bare = value.replace("-", "").replace("_", "")
        if bare.isalpha() and bare != value and value.lower() == value:
            return False  # kebab/snake-case words: "access-control", "token_type"
    threshold = min(rule.min_entropy, 2.0) if passwordish else rule.min_entropy
    return shannon_entropy(value) >= threshold


class SecretScanner:
    """The provider patterns, the generic assignment pattern and custom patterns, in one pass."""

    def __init__(
        self,
        custom: Sequence[CustomPattern] = (),
        disabled_kinds: Iterable[str] = (),
        generic: bool = True,
        min_entropy: float | None = None,
        marker: str = "[REDACTED:{kind}]",
        gitleaks: bool = True,
        gitleaks_max_chars: int = 256 * 1024,
    ) -> None:
        disabled = set(disabled_kinds)
        ruleset = default_rules() if gitleaks else None
        gitleaks_ids = {r.id for r in ruleset.rules} if ruleset else set()
        builtin = PROVIDER_RULES + LITERAL_RULES
        known = {r.kind for r in builtin} | {GENERIC_RULE.kind} | gitleaks_ids
        unknown = disabled - known
        if unknown:
            raise ValueError(
                f"unknown secret kinds {sorted(unknown)}; known: {', '.join(sorted(known))}"
            )
        rules = [r for r in builtin if r.kind not in disabled]
        if generic and GENERIC_RULE.kind not in disabled:
            generic_rule = GENERIC_RULE
            if min_entropy is not None:
                generic_rule = SecretRule(
                    GENERIC_RULE.kind,
                    GENERIC_RULE.pattern,
                    True,
                    min_entropy,
                    GENERIC_RULE.min_length,
                )
            rules.append(generic_rule)
        rules += [SecretRule(c.id, c.pattern) for c in custom]
        self.rules = rules
        self._gitleaks: list[GitleaksRule] = []
        self._global_allow = ruleset.global_allowlist if ruleset else ()
        if ruleset:
            self._gitleaks = [r for r in ruleset.rules if r.id not in disabled]
            if not generic:
                self._gitleaks = [r for r in self._gitleaks if r.id != GITLEAKS_GENERIC]
        # The keywords are a second RE2 set (merged into the first, the DFA grows past its
        # budget): one pass says which gitleaks rules can match at all, the rest never run.
        keywords = sorted({k for r in self._gitleaks for k in r.keywords})
        self._keyword_rules: list[list[int]] = [
            [i for i, r in enumerate(self._gitleaks) if k in r.keywords] for k in keywords
        ]
        self._unkeyed = [i for i, r in enumerate(self._gitleaks) if not r.keywords]
        self._keywords = MultiPattern(["(?i)" + re2.escape(k) for k in keywords])
        self.kinds = sorted({r.kind for r in rules} | {r.id for r in self._gitleaks})
        self._multi = MultiPattern([r.pattern for r in rules])
        # A payload's strings are first searched together (one pass per set, not per string);
        # rules without keywords would have to run on every string anyway.
        self._joined = None if self._unkeyed else line_prefilter([r.pattern for r in rules])
        self._marker = marker
        # Each gitleaks candidate rule costs ~1-3 ms per MiB: beyond this size only the
        # built-in rules run, which keeps a 1 MiB result within its 10 ms budget.
        self._gitleaks_max_chars = gitleaks_max_chars or None

    def find(self, text: str) -> list[SecretMatch]:
        """Non-overlapping secret spans; provider and custom rules win over gitleaks' rules on
        the same span, and all of them over the generic ones."""
        if not text:
            return []
        specific: list[tuple[int, SecretMatch]] = []
        generic: list[tuple[int, SecretMatch]] = []
        for hit in self._multi.finditer(text, limit=10_000):
            rule = self.rules[hit.index]
            start, end = hit.start, hit.end
            if len(hit.groups) >= rule.secret_group and hit.groups[rule.secret_group - 1][0] >= 0:
                start, end = hit.groups[rule.secret_group - 1]
            if end <= start:
                continue
            if rule.secret_group > 1 and not _keyword_ends_word(text, hit.groups[0][1]):
                continue
            if rule.vet and not vet_value(
                text[start:end], rule, text[hit.start : start], text[end : end + _AFTER]
            ):
                continue
            end = start + len(text[start:end].rstrip(".,;:`'\""))
            match = SecretMatch(rule.kind, start, end)
            if rule.kind == GENERIC_RULE.kind:
                generic.append((hit.start, match))  # its keyword must not sit in another secret
            else:
                specific.append((start, match))
        # After the built-in rules, so that on the same span the built-in kind names it.
        candidates: set[int] = set()
        if self._gitleaks and len(text) <= (self._gitleaks_max_chars or len(text)):
            candidates.update(self._unkeyed)
            for index in self._keywords.matching(text):
                candidates.update(self._keyword_rules[index])
        for index in sorted(candidates):
            for anchor, match in self._gitleaks_matches(self._gitleaks[index], text):
                bucket = generic if match.kind == GITLEAKS_GENERIC else specific
                bucket.append((anchor, match))
        chosen: list[tuple[int, SecretMatch]] = []
        for anchor, match in sorted(specific, key=lambda t: (t[1].start, -t[1].end)) + sorted(
            generic, key=lambda t: (t[1].start, -t[1].end)
        ):
            if all(match.end <= c.start or anchor >= c.end for _, c in chosen):
                chosen.append((anchor, match))
        return sorted((m for _, m in chosen), key=lambda m: m.start)

    def _gitleaks_matches(self, rule: GitleaksRule, text: str) -> list[tuple[int, SecretMatch]]:
        out: list[tuple[int, SecretMatch]] = []
        for offset, window in self._windows(rule, text):
            # On ASCII text byte and character offsets agree, and RE2 on bytes skips the
            # wrapper's per-match offset conversion (linear in the text: quadratic overall).
            subject: str | bytes = window.encode("ascii") if window.isascii() else window
            for count, m in enumerate(rule.regex.finditer(subject)):
                if count >= 10_000:
                    break
                start, end = (offset + i for i in rule.secret_span(m))
                secret = text[start:end]
                if not secret.strip() or _placeholder(secret):
                    continue
                m_start, m_end = offset + m.start(), offset + m.end()
                if rule.id == GITLEAKS_GENERIC and other_value_family(
                    secret.strip().rstrip(".,;:`'\""), text[m_start:start], text[end : end + _AFTER]
                ):
                    continue
                line_start = text.rfind("\n", 0, m_start) + 1
                line_end = text.find("\n", m_end)
                line = text[line_start : len(text) if line_end < 0 else line_end]
                if rule.accepts(secret, text[m_start:m_end], line, self._global_allow):
                    out.append((m_start, SecretMatch(rule.id, start, end)))
        return out

    @staticmethod
    def _windows(rule: GitleaksRule, text: str) -> list[tuple[int, str]]:
        """Where a rule can match: around its keywords (each is a literal of the regex), so a
        keyword met by chance in a large result costs a few KiB of scanning, not the whole text.
        Many occurrences, or a short text: the whole text."""
        text = encodable(text)
        if len(text) <= _WINDOW_AFTER or rule.keyword_regex is None:
            return [(0, text)]
        spans: list[list[int]] = []
        if not text.isascii():
            return [(0, text)]
        for count, m in enumerate(rule.keyword_regex.finditer(text.encode("ascii"))):
            if count >= _MAX_WINDOWS:
                return [(0, text)]
            lo, hi = max(0, m.start() - _WINDOW_BEFORE), m.end() + _WINDOW_AFTER
            if spans and lo <= spans[-1][1]:
                spans[-1][1] = hi
            else:
                spans.append([lo, hi])
        # A window starts at a line start, so `^` and `\b` see what they would in the text.
        out = []
        for lo, hi in spans:
            lo = text.rfind("\n", 0, lo) + 1
            out.append((lo, text[lo:hi]))
        return out

    def redact_text(self, text: str) -> tuple[str, Counter[str]]:
        """The text with each secret span replaced by its marker, and counts per kind."""
        matches = self.find(text)
        counts: Counter[str] = Counter(m.kind for m in matches)
        if not matches:
            return text, counts
        parts: list[str] = []
        cursor = 0
        for m in matches:
            parts.append(text[cursor : m.start])
            parts.append(self._marker.format(kind=m.kind))
            cursor = m.end
        parts.append(text[cursor:])
        return "".join(parts), counts

    def redact_string(self, text: str) -> tuple[str, Counter[str]]:
        """Like redact_text, but a string holding JSON is redacted inside its decoded values
        too (escaped newlines in a PEM block, `\\/` in a key), then re-serialised."""
        redacted, counts = self.redact_text(text)
        stripped = redacted.lstrip()
        if stripped[:1] in ("{", "[") and len(stripped) > 2:
            try:
                decoded = orjson.loads(redacted)
            except orjson.JSONDecodeError:
                return redacted, counts
            inner, inner_counts = self.redact_payload(decoded)
            if inner_counts:
                indent = 2 if "\n " in redacted else None
                separators = None if indent else (",", ":") if '":"' in redacted else None
                counts.update(inner_counts)
                return json.dumps(
                    inner, ensure_ascii=False, indent=indent, separators=separators
                ), counts
        return redacted, counts

    def may_find(self, texts: Sequence[str]) -> bool:
        """False when no rule can match in any of the texts: one pass per RE2 set over the texts
        joined by newlines. True does not mean a secret is there (`find` says)."""
        if not texts:
            return False
        if self._joined is None or len(texts) == 1:
            return True
        joined = "\n".join(texts)
        if self._joined.matching(joined):
            return True
        return bool(self._gitleaks) and bool(self._keywords.matching(joined))

    def redact_payload(
        self, payload: Any, texts: PayloadTexts | None = None
    ) -> tuple[Any, Counter[str]]:
        """A redacted copy of a JSON payload (the input is never changed), and counts per kind.
        `texts`: the payload's strings if already walked (`payload_texts`).

        Returns the very same object when nothing was found, so the common case copies nothing.
        """
        counts: Counter[str] = Counter()
        found = self._scan_payload(payload, texts)
        if not found:
            return payload, counts
        result = copy.deepcopy(payload)
        stack: list[tuple[Any, int]] = [(result, 0)]
        if isinstance(result, str):
            return self._redact_leaf(result, counts), counts
        while stack:
            node, depth = stack.pop()
            if depth > MAX_DEPTH:
                raise StructureLimit(f"nested deeper than {MAX_DEPTH} levels")
            items: Iterable[tuple[Any, Any]]
            if isinstance(node, dict):
                items = list(node.items())
                for key, value in items:
                    if is_media_field(node, key):
                        continue
                    if isinstance(value, str):
                        node[key] = self._redact_leaf(value, counts)
                    elif isinstance(value, (dict, list)):
                        stack.append((value, depth + 1))
            elif isinstance(node, list):
                for index, value in enumerate(node):
                    if isinstance(value, str):
                        node[index] = self._redact_leaf(value, counts)
                    elif isinstance(value, (dict, list)):
                        stack.append((value, depth + 1))
        return result, counts

    def _redact_leaf(self, value: str, counts: Counter[str]) -> str:
        redacted, found = self.redact_string(value)
        counts.update(found)
        return redacted

    def _scan_payload(self, payload: Any, texts: PayloadTexts | None = None) -> bool:
        """Whether any string in the payload (or JSON inside one) holds a secret."""
        strings = self._strings(payload, texts)
        if any(self.find(text) for text in strings if len(text) > _JOIN_MAX_CHARS):
            return True
        short = [text for text in strings if len(text) <= _JOIN_MAX_CHARS]
        return self.may_find(short) and any(self.find(text) for text in short)

    def _strings(self, payload: Any, texts: PayloadTexts | None = None) -> list[str]:
        """The strings a secret can sit in: every string outside base64 media, and the strings
        of JSON held in one (decoded, so escapes hide nothing)."""
        walked = payload_texts(payload) if texts is None else texts
        if walked.too_deep is not None:
            raise StructureLimit(f"nested deeper than {MAX_DEPTH} levels at {walked.too_deep}")
        out: list[str] = []
        for text, _link, depth, media, _prose in walked.items:
            if media:
                continue
            out.append(text)
            if depth < MAX_DEPTH:
                decoded = _json_container(text)
                if decoded is not None:
                    out += self._strings(decoded)
        return out


def _json_container(text: str) -> dict[str, Any] | list[Any] | None:
    """The object or array a string holds as JSON, or None."""
    stripped = text.lstrip()
    if stripped[:1] not in ("{", "[") or len(stripped) < 3:
        return None
    try:
        decoded = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return decoded if isinstance(decoded, (dict, list)) else None
