"""The content scanner: runs rule families, Unicode checks and custom patterns over texts and
turns hits into findings (family, rule, field path, span) with a score per scanned item.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcpward.guards.detection.concepts import CONCEPT_RULE_PREFIX, MARKER_FAMILY, Marker, scored
from mcpward.guards.detection.extract import FieldText, StructureLimit, definition_texts
from mcpward.guards.detection.families import FAMILIES, Rule
from mcpward.guards.detection.regex import MultiPattern, compile_pattern
from mcpward.guards.detection.unicode import smuggling_hits

_MAX_HITS = 50  # spans per rule per text

# A definition is read by a model, so even one invisible character is a finding there.
_UNICODE_FAMILY = {
    "unicode-tag-characters": "invisible-text",
    "zero-width-run": "invisible-text",
    "zero-width-character": "invisible-text",
    "bidi-control": "invisible-text",
    "inner-bom": "invisible-text",
    "variation-selector-run": "invisible-text",
    "homoglyph-word": "homoglyph",
}

_NAME_VERBS = (
    "get|list|search|find|fetch|create|read|write|update|delete|send|query|run|execute|make|add|"
    "remove|lookup|check|calculate|convert|translate|generate|analyze|analyse|download|upload|"
    "open|post|set|edit|book|buy|pay|transfer|fork|clone|merge|push"
)

# Parameter names that ask for the calling model's identity or context.
NAME_RULES: list[Rule] = [
    Rule(
        "out-of-scope-parameter",
        "model-identity-parameter",
        r"(?i)^(?:llm|ai|assistant|agent|chatbot)[_-]?(?:model[_-]?)?(?:name|identity|id|version|"
        r"type|vendor)$",
    ),
    Rule(
        "out-of-scope-parameter",
        "context-parameter",
        r"(?i)^(?:conversation|chat|message|dialog(?:ue)?)[_-]?(?:history|log|transcript)$|"
        r"^(?:previous|prior|all)[_-]?(?:messages|instructions|prompts)$",
    ),
    # A praising word bolted onto an ordinary verb-first tool name (`best_create_repository`,
    # `ultimateSearchPlaces`): a copy of a tool renamed to win the model's choice.
    Rule(
        "preference-manipulation",
        "promotional-name",
        r"^(?:(?i:best|ultimate|premium|superior|enhanced|improved|better|turbo|"
        r"optimi[sz]ed)[_-](?i:" + _NAME_VERBS + r")|(?:best|ultimate|premium|superior|enhanced|"
        r"improved|better|turbo|optimi[sz]ed)(?:" + _NAME_VERBS.title() + r"))(?:[_-]|[A-Z]|$)",
    ),
]


class CustomPattern(BaseModel):
    """A pattern from config. RE2 syntax; it is compiled when the config is loaded."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$", description="Reported as the rule id.")
    pattern: str = Field(min_length=1, max_length=4096, description="RE2 regular expression.")
    weight: float = Field(default=1.0, gt=0, le=100, description="Score added when it matches.")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        compile_pattern(value)  # raises PatternError (a ValueError) with RE2's reason
        return value


@dataclass(frozen=True, slots=True)
class Finding:
    family: str
    rule: str
    path: str
    start: int
    end: int
    weight: float

    def describe(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "rule": self.rule,
            "field": self.path,
            "span": [self.start, self.end],
        }


def score(findings: Iterable[Finding]) -> float:
    """Sum over families of the strongest finding in each: independent kinds of evidence add up,
    many weak hits of one kind (a long description that names many tools) do not."""
    best: dict[str, float] = {}
    for finding in findings:
        best[finding.family] = max(best.get(finding.family, 0.0), finding.weight)
    return round(sum(best.values()), 6)


def definition_score(findings: Sequence[Finding]) -> float:
    """The score of a definition: the rule findings as `score` adds them, or the concepts'
    co-occurrence (with the strong rule findings), whichever is higher. Weak rule cues that real
    servers write every day (a quoted name, "you must call X first") do not add to concepts."""
    rules = [f for f in findings if not f.rule.startswith(CONCEPT_RULE_PREFIX)]
    concepts = [f for f in findings if f.rule.startswith(CONCEPT_RULE_PREFIX) or f.weight >= 1.0]
    return max(score(rules), score(concepts))


def family_counts(findings: Iterable[Finding]) -> dict[str, int]:
    return dict(sorted(Counter(f.family for f in findings).items()))


class ContentScanner:
    """Scans texts with a fixed rule set. Build once per guard; `scan_*` are on the hot path."""

    def __init__(
        self,
        rules: Sequence[Rule],
        custom: Sequence[CustomPattern] = (),
        disabled_families: Iterable[str] = (),
        unicode_weights: Mapping[str, float] | None = None,
        strict_unicode: bool = True,
        name_rules: Sequence[Rule] = (),
        max_text_chars: int = 16 * 1024 * 1024,
        gates: Sequence[str] = (),
        data_concepts: bool = False,
    ) -> None:
        """`gates`: patterns run in the same set pass as the rules, never findings themselves;
        `scan_text_gated` says which of them match (a cheap signal for a second, costlier
        scan)."""
        self.data_concepts = data_concepts  # concept markers weighed as returned data
        disabled = self.disabled = set(disabled_families)
        unknown = disabled - set(FAMILIES)
        if unknown:
            raise ValueError(
                f"unknown pattern families {sorted(unknown)}; known: {', '.join(sorted(FAMILIES))}"
            )
        self.rules = [r for r in rules if r.family not in disabled]
        self.rules += [Rule("custom", c.id, c.pattern, c.weight) for c in custom]
        self.name_rules = [r for r in name_rules if r.family not in disabled]
        weights = {"invisible-text": 1.0, "homoglyph": 1.0}
        weights.update(unicode_weights or {})
        self.unicode_weights = {k: v for k, v in weights.items() if k not in disabled}
        self.strict_unicode = strict_unicode
        self.max_text_chars = max_text_chars
        self._multi = MultiPattern([r.pattern for r in self.rules] + list(gates))
        self._limits = [min(r.max_hits or _MAX_HITS, _MAX_HITS) for r in self.rules]
        self._limits += [0] * len(gates)  # a gate only says that it matches
        self._names = MultiPattern([r.pattern for r in self.name_rules])
        # Fields joined by newlines can be prefiltered with one set pass: every built-in word
        # edge or `^` treats a newline as a boundary. A custom pattern might anchor at \A or
        # `^` without (?m), so with custom patterns every field is scanned on its own.
        self._joinable = not custom

    def scan_text(self, text: str, path: str = "$") -> list[Finding]:
        return self._resolve(self._scan_text(text, path, with_rules=True)[0])

    def _resolve(self, findings: list[Finding]) -> list[Finding]:
        """Concept markers (weight 0) become the findings of the concepts that count
        (`concepts.scored`); the markers themselves are dropped."""
        markers = [f for f in findings if f.family == MARKER_FAMILY]
        if not markers:
            return findings
        out = [f for f in findings if f.family != MARKER_FAMILY]
        for family, rule, weight, m in scored(
            (Marker(f.rule, f.path, f.start, f.end) for f in markers), self.data_concepts
        ):
            if family not in self.disabled:
                out.append(Finding(family, rule, m.path, m.start, m.end, weight))
        return out

    def scan_text_gated(
        self, text: str, path: str = "$", with_rules: bool = True
    ) -> tuple[list[Finding], set[int]]:
        """Findings, and the indices (into `gates`) of the gates that match. `with_rules=False`:
        `may_match` said no rule or gate can match; only the Unicode checks run."""
        findings, gated = self._scan_text(text, path, with_rules)
        return self._resolve(findings), gated

    def may_match(self, texts: Sequence[str]) -> bool:
        """False when no rule or gate can match in any of the texts: most texts match nothing,
        and one set pass over them all says so, instead of one pass (and one Python round trip)
        per text. True does not mean a rule matches."""
        if not texts:
            return False
        if not self._joinable or len(texts) == 1:
            return True
        limit = self.max_text_chars
        return bool(self._multi.matching("\n".join(text[:limit] for text in texts)))

    def _scan_text(self, text: str, path: str, with_rules: bool) -> tuple[list[Finding], set[int]]:
        if len(text) > self.max_text_chars:
            text = text[: self.max_text_chars]
        findings: list[Finding] = []
        gated: set[int] = set()
        if with_rules:
            for found in self._multi.finditer(text, limit=self._limits):
                if found.index >= len(self.rules):
                    gated.add(found.index - len(self.rules))
                    continue
                r = self.rules[found.index]
                findings.append(Finding(r.family, r.id, path, found.start, found.end, r.weight))
        if self.unicode_weights and not text.isascii():
            for hit in smuggling_hits(text, strict=self.strict_unicode):
                family = _UNICODE_FAMILY[hit.rule]
                weight = self.unicode_weights.get(family)
                if weight is not None:
                    findings.append(Finding(family, hit.rule, path, hit.start, hit.end, weight))
        return findings, gated

    def scan_name(self, name: str, path: str) -> list[Finding]:
        return self.scan_fields([FieldText(path, name, is_name=True)])

    def scan_fields(self, fields: Iterable[FieldText]) -> list[Finding]:
        texts = list(fields)
        with_rules = self.may_match([field.text for field in texts])
        findings: list[Finding] = []
        for field in texts:
            if field.is_name:
                findings += [
                    Finding(r.family, r.id, field.path, hit.start, hit.end, r.weight)
                    for hit in self._names.finditer(field.text, limit=5)
                    for r in (self.name_rules[hit.index],)
                ]
            findings += self._scan_text(field.text, field.path, with_rules)[0]
        return self._resolve(findings)

    def scan_definition(self, item: Any) -> list[Finding]:
        """Findings over every readable string of a tool/prompt/resource definition."""
        try:
            return self.scan_fields(definition_texts(item))
        except StructureLimit as exc:
            return [Finding("unscannable", "structure-limit", str(exc), 0, 0, 1.0)]
