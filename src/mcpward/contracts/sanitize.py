"""Make attacker-controlled strings (tool names, descriptions) safe for human eyes.

Strips control characters (C0, C1), ANSI escapes, bidi controls and invisible format characters,
and neutralises reassurance claims ("safe", "verified", "approved", "all clear", ...) however they
are spelled or joined, so a tool cannot name itself into looking trusted in a banner.
"""

from __future__ import annotations

import re
import unicodedata

CLAIM_REPLACEMENT = "[claim removed]"

_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (hyperlinks, titles)
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC
    r"|\x1b[ -/]*[0-~]"  # two-character escapes
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|\x9d[^\x07\x9c]*[\x07\x9c]?"  # 8-bit OSC
)

# Latin look-alikes from other scripts (after NFKC and casefold)
_CONFUSABLES = str.maketrans(
    {
        "\u0430": "a", "\u0435": "e", "\u043e": "o", "\u0440": "p", "\u0441": "c", "\u0443": "y",
        "\u0445": "x", "\u0455": "s", "\u0456": "i", "\u0458": "j", "\u0501": "d", "\u0475": "v",
        "\u04cf": "l", "\u0251": "a", "\u03b1": "a", "\u03b5": "e", "\u03bf": "o", "\u03c1": "p",
        "\u03bd": "v", "\u03b9": "i", "\u03ba": "k", "\u03c4": "t", "\u03c5": "u", "\u0450": "e",
        "\u0451": "e", "\u0131": "i", "\u2113": "l", "\ua731": "s", "\u1d20": "v", "\u1d05": "d",
        "\u1d00": "a", "\ua7a9": "s",
    }
)  # fmt: skip

# leetspeak and symbol spellings, as regex classes per letter
_LETTER = {
    "a": "[a4@]",
    "e": "[e3]",
    "i": "[i1!|l]",
    "l": "[l1|i]",
    "o": "[o0]",
    "s": "[s5$z]",
    "t": "[t7+]",
    "g": "[g9]",
    "b": "[b8]",
}
_GAP = r"[\W_]{0,2}"  # between letters: "s a f e", "s.a.f.e", "S_A_F_E"
_WORD_GAP = r"[\W_]{0,3}"  # between words: "all clear", "all-clear", "allclear"

CLAIMS = (
    "safe",
    "verified",
    "approved",
    "all clear",
    "trusted",
    "certified",
    "vetted",
    "harmless",
    "no risk",
    "secure",
)


def _claim_pattern(phrase: str) -> str:
    words = []
    for word in phrase.split():
        words.append(_GAP.join(_LETTER.get(ch, re.escape(ch)) for ch in word))
    return _WORD_GAP.join(words)


_CLAIM_RE = re.compile(
    # a claim starts a word and takes the rest of it ("safety", "verifiedsafe")
    r"(?<![a-z0-9])(?:" + "|".join(_claim_pattern(c) for c in CLAIMS) + r")[a-z0-9]*",
    re.IGNORECASE,
)


def strip_invisible(text: str) -> str:
    """Remove ANSI escapes, control and format characters; newlines and tabs become spaces."""
    text = _ANSI.sub("", text)
    out = []
    for ch in text:
        if ch.isascii() and ch.isprintable():
            out.append(ch)
            continue
        cat = unicodedata.category(ch)
        if ch in "\n\r\t" or cat in ("Zl", "Zp"):
            out.append(" ")
        elif cat in ("Cc", "Cf", "Cs", "Cn", "Co"):
            continue
        elif ch in "\u115f\u1160\u3164\uffa0\u034f" or "\ufe00" <= ch <= "\ufe0f":
            continue  # fillers and variation selectors render as nothing
        else:
            out.append(ch)
    return "".join(out)


def _skeleton(text: str) -> tuple[str, list[int]]:
    """Casefolded, NFKC, confusable-mapped text and, per character, its index in `text`.

    A camelCase boundary gets a virtual space (index -1) so `isSafe` matches like `is safe`.
    """
    chars: list[str] = []
    origin: list[int] = []
    prev_lower = False
    for i, ch in enumerate(text):
        if ch.isupper() and prev_lower:
            chars.append(" ")
            origin.append(-1)
        prev_lower = ch.islower()
        folded = unicodedata.normalize("NFKC", ch).casefold().translate(_CONFUSABLES)
        for c in folded:
            chars.append(c)
            origin.append(i)
    return "".join(chars), origin


def neutralise_claims(text: str) -> str:
    """Replace every reassurance claim in `text` with a visible placeholder."""
    skeleton, origin = _skeleton(text)
    spans: list[tuple[int, int]] = []
    for match in _CLAIM_RE.finditer(skeleton):
        idx = [origin[j] for j in range(match.start(), match.end()) if origin[j] >= 0]
        if idx:
            spans.append((idx[0], idx[-1] + 1))
    if not spans:
        return text
    out = []
    last = 0
    for start, end in spans:
        if start < last:
            continue
        out.append(text[last:start])
        out.append(CLAIM_REPLACEMENT)
        last = end
    out.append(text[last:])
    return "".join(out)


def sanitize_text(value: object, limit: int = 200) -> str:
    """A single-line, bounded, neutralised rendering of an untrusted value for humans."""
    text = value if isinstance(value, str) else repr(value)
    text = text[: limit * 4]  # bound the work before any transformation
    text = neutralise_claims(strip_invisible(text))
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def is_plain_name(name: str) -> bool:
    """Names that can appear verbatim in a shell command (the MCP tool-name alphabet)."""
    return bool(re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name)) and sanitize_text(name, 200) == name
