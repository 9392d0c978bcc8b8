"""Where a mostly-English text has stretches in another language: the lines around words
common in es/fr/de/pt/it and rare in English, or around Cyrillic, CJK or kana, so the costly
multilingual rules run on those stretches only.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpward.guards.detection.regex import compile_pattern

# Function words and the words for user/tool, per language, chosen to be rare in English.
_WORDS = (
    "el|la|los|las|del|de|para|que|una|por|con|est[aá]|usuari[oa]s?|herramientas?|"  # es
    "le|les|des|du|et|au|aux|une|est|pour|avec|vous|dans|utilisat(?:eur|rice)s?|outils?|"  # fr
    "der|die|das|den|dem|und|nicht|nichts|ist|mit|f[uü]r|sie|ein|eine|von|dass|"  # de
    "benutzer[sn]?|nutzer[sn]?|werkzeug(?:e|s|en)?|immer|statt|sind|andere[nrs]?|"  # de
    "n[aã]o|voc[eê]|tamb[eé]m|dos|da|em|um|todas?|usu[aá]rios?|ferramentas?|"  # pt
    "il|di|della|dell|che|non|per|gli|sono|lo|allo|utenti?|strument[oi]"  # it
)
MARKER = (
    r"(?i)(?:^|[^0-9A-Za-z_\x{C0}-\x{24F}])(" + _WORDS + r")(?:$|[^0-9A-Za-z_\x{C0}-\x{24F}])"
    r"|([\x{400}-\x{4FF}\x{3040}-\x{30FF}\x{4E00}-\x{9FFF}])"
)
_MARKER = compile_pattern(MARKER)
WINDOW = 2048  # characters kept on each side of a marker, cut at line ends
MAX_MARKERS = 4096  # markers read per text; past this the whole text is one window


def foreign_windows(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of the stretches worth the multilingual rules: around a Cyrillic/CJK/kana
    character, or around two different marker words within one window. Run it only when
    MARKER matched (e.g. as a gate of the scanner's set pass)."""
    spans: list[tuple[int, int, str]] = []  # (start, end, marker word or "" for a script)
    rest: int | None = None  # past MAX_MARKERS markers, the text from here on is one window
    for count, match in enumerate(_MARKER.finditer(text)):
        if count >= MAX_MARKERS:
            rest = match.start()
            break
        word = match.group(1)
        spans.append((match.start(), match.end(), word.casefold() if word else ""))
    last = 0
    for lo, hi in _windows(text, spans):
        last = hi
        yield lo, hi
    if rest is not None:
        yield max(last, rest), len(text)


def _windows(text: str, spans: list[tuple[int, int, str]]) -> Iterator[tuple[int, int]]:
    window: tuple[int, int] | None = None
    words: set[str] = set()
    script = False
    for start, end, word in spans:
        lo = max(0, text.rfind("\n", max(0, start - WINDOW), start) + 1)
        newline = text.find("\n", end, end + WINDOW)
        hi = min(len(text), newline if newline >= 0 else end + WINDOW)
        if window is not None and lo <= window[1]:
            window = (window[0], max(window[1], hi))
        else:
            if window is not None and (script or len(words) >= 2):
                yield window
            window, words, script = (lo, hi), set(), False
        if word:
            words.add(word)
        else:
            script = True
    if window is not None and (script or len(words) >= 2):
        yield window
