"""Unicode smuggling checks (tag characters, zero-width runs, bidi controls, BOMs, variation
selector runs, homoglyph words) and the confusable skeleton used to compare names.
"""

# ruff: noqa: RUF001 - look-alike characters are this module's subject

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from mcpward.guards.detection.regex import MultiPattern

# Cyrillic and Greek letters that render like Latin ones (the common subset of Unicode's
# confusables.txt that attackers use; the full table is not shipped with Python).
_CONFUSABLE = {
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d",
    "һ": "h", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ӏ": "l", "ո": "n", "ս": "u", "ց": "g",
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ω": "w", "ѵ": "v", "ϲ": "c", "ϳ": "j",
    "ı": "i", "ℓ": "l", "ⅰ": "i",
}  # fmt: skip
_DIGIT_LOOKALIKE = {"0": "o", "1": "l", "i": "l", "|": "l"}
_SEPARATORS = str.maketrans("", "", "-_. \t/:")

_SMUGGLING_RULES: list[tuple[str, str]] = [
    ("unicode-tag-characters", r"[\x{E0000}-\x{E007F}]+"),
    ("zero-width-run", r"[\x{200B}-\x{200D}\x{2060}-\x{2064}\x{180E}\x{FEFF}]{2,}"),
    ("bidi-control", r"[\x{202A}-\x{202E}\x{2066}-\x{2069}]+"),
    ("inner-bom", r"(?s).\x{FEFF}"),
    ("variation-selector-run", r"[\x{E0100}-\x{E01EF}\x{FE00}-\x{FE0F}]{3,}"),
    (
        "homoglyph-word",
        r"[\p{Latin}\p{Cyrillic}\p{Greek}]*(?:\p{Latin}[\p{Cyrillic}\p{Greek}]|"
        r"[\p{Cyrillic}\p{Greek}]\p{Latin})[\p{Latin}\p{Cyrillic}\p{Greek}]*",
    ),
]
# Single invisible characters: suspicious in a definition an agent reads, ordinary in web text.
_STRICT_RULES: list[tuple[str, str]] = [
    ("zero-width-character", r"[\x{200B}\x{2060}-\x{2064}\x{180E}]"),
]

_LOOSE = MultiPattern([p for _, p in _SMUGGLING_RULES])
_STRICT = MultiPattern([p for _, p in _SMUGGLING_RULES + _STRICT_RULES])
_RULE_IDS = [r for r, _ in _SMUGGLING_RULES + _STRICT_RULES]


@dataclass(frozen=True, slots=True)
class SmugglingHit:
    rule: str
    start: int
    end: int


def _is_homoglyph_word(word: str) -> bool:
    """A mixed-script word of 4+ letters whose foreign letters all look like Latin ones."""
    if len(word) < 4:
        return False
    foreign = [ch for ch in word if not ch.isascii()]
    latin = len(word) - len(foreign)
    if not foreign or latin == 0:
        return False
    return all(ch.lower() in _CONFUSABLE for ch in foreign)


def smuggling_hits(text: str, strict: bool = True) -> list[SmugglingHit]:
    """Invisible or look-alike text in `text`. `strict` also flags single zero-width characters."""
    if text.isascii():
        return []
    scanner = _STRICT if strict else _LOOSE
    hits: list[SmugglingHit] = []
    for hit in scanner.finditer(text, limit=100):
        rule = _RULE_IDS[hit.index]
        if rule == "homoglyph-word" and not _is_homoglyph_word(text[hit.start : hit.end]):
            continue
        hits.append(SmugglingHit(rule, hit.start, hit.end))
    return hits


def skeleton(name: str) -> str:
    """A name's comparison form: NFKD, case-folded, confusables and separators folded away."""
    folded = unicodedata.normalize("NFKD", name).casefold()
    out = []
    for ch in folded:
        if unicodedata.category(ch) in ("Mn", "Cf"):
            continue  # combining marks and invisible format characters
        ch = _CONFUSABLE.get(ch, ch)
        out.append(_DIGIT_LOOKALIKE.get(ch, ch))
    return "".join(out).translate(_SEPARATORS)
