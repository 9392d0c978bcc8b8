"""RE2 compilation for every built-in and user-supplied pattern (linear time, no ReDoS).

`MultiPattern` runs many patterns behind one literal prefilter (RE2's FilteredRE2) and one set
pass for the patterns without literals, then only the ones that hit for spans.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print parse errors to stderr; we raise them instead
_OPTIONS.max_mem = 64 << 20  # bound the DFA memory of one pattern; huge patterns fail to compile


class PatternError(ValueError):
    """A pattern RE2 cannot compile (backreferences, lookaround, too large, bad syntax)."""


def _reason(exc: Exception) -> str:
    text = exc.args[0] if exc.args else str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return str(text)


def compile_pattern(pattern: str) -> Any:
    """Compile with RE2 or raise PatternError saying why and what RE2 does not support."""
    if not isinstance(pattern, str) or not pattern:
        raise PatternError("a pattern must be a non-empty string")
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raise PatternError(
            f"RE2 cannot compile {pattern!r}: {_reason(exc)} (RE2 has no backreferences or "
            "lookaround; see https://github.com/google/re2/wiki/Syntax)"
        ) from None


def encodable(text: str) -> str:
    """RE2 works on UTF-8; a lone surrogate (legal in a JSON string) becomes U+FFFD, one
    character for one, so spans stay valid for the original text."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return text


def utf8(text: str) -> bytes:
    """The UTF-8 bytes RE2 searches, one character for one as `encodable` says."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return encodable(text).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Hit:
    index: int  # position of the pattern in the MultiPattern
    start: int
    end: int
    groups: tuple[tuple[int, int], ...] = ()  # spans of the pattern's groups (-1, -1 if unset)


_BUILT: dict[tuple[str, ...], Any] = {}
_PENDING: dict[tuple[str, ...], None] = {}  # pattern lists made but not compiled yet, in order
_BUILD_LOCK = threading.Lock()
_UNBUILT: Any = object()


def _built(key: tuple[str, ...]) -> Any:
    """The compiled filter of a pattern list (None for no patterns), compiled once per process."""
    with _BUILD_LOCK:
        if key not in _BUILT:
            _BUILT[key] = _Engine(key) if key else None
        _PENDING.pop(key, None)
        return _BUILT[key]


def compile_pending() -> int:
    """Compile every pattern list made but not used yet; returns how many. A gateway runs this
    off its event loop once it is serving, so the first list or call rarely waits for it."""
    done = 0
    while _PENDING:
        _built(next(iter(_PENDING)))
        done += 1
    return done


def _filter_of(patterns: Sequence[str]) -> Any:
    compiled = re2.Filter()
    for pattern in patterns:
        try:
            compiled.Add(pattern, _OPTIONS)
        except re2.error:
            compile_pattern(pattern)  # raises PatternError with RE2's reason
            raise
    compiled.Compile()
    return compiled


def _set_of(patterns: Sequence[str], offset: int = 0) -> list[tuple[int, Any]]:
    """RE2 sets over consecutive slices of patterns; a slice too big for one set is halved."""
    compiled = re2.Set.SearchSet(_OPTIONS)
    for pattern in patterns:
        compiled.Add(pattern)
    try:
        compiled.Compile()
    except re2.error:
        if len(patterns) == 1:
            raise PatternError(f"RE2 cannot compile {patterns[0]!r} into a set") from None
        half = len(patterns) // 2
        return _set_of(patterns[:half], offset) + _set_of(patterns[half:], offset + half)
    return [(offset, compiled)]


class _Engine:
    """Which of many patterns match a text, exactly, in about one pass.

    Patterns with literal atoms (words every match must contain) go to RE2's FilteredRE2: one
    case-insensitive pass finds the atoms, and only the patterns whose atoms are all present
    run. The few without atoms (character-class shapes: base64, hex, invisible ranges) would
    each run over the whole text there; they share one RE2 set pass instead. A single set of
    all the patterns would be as fast, but its program is several times the size of the
    patterns compiled one by one (86 against 27 MiB for the default content guards), and every
    gateway process carries it."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = list(patterns)
        probe = _filter_of(self.patterns)
        shapes = set(probe.Match(b"", potential=True) or ())  # no atom needed: they pass all
        self._worded = [i for i in range(len(self.patterns)) if i not in shapes]
        self._shaped = sorted(shapes)
        del probe
        self._filter = (
            _filter_of([self.patterns[i] for i in self._worded]) if self._worded else None
        )
        self._sets = _set_of([self.patterns[i] for i in self._shaped]) if self._shaped else []
        self._where = {index: pos for pos, index in enumerate(self._worded)}

    def match(self, data: bytes) -> list[int]:
        found: list[int] = []
        if self._filter is not None:
            found += [self._worded[i] for i in self._filter.Match(data) or ()]
        for offset, compiled in self._sets:
            found += [self._shaped[offset + i] for i in compiled.Match(data) or ()]
        return sorted(found)

    def regexp(self, index: int) -> Any:
        """Pattern `index` compiled on its own (for its spans): the filter's own copy, or a new
        one for a pattern without atoms."""
        pos = self._where.get(index)
        if pos is not None and self._filter is not None:
            return self._filter.re(pos)
        return compile_pattern(self.patterns[index])


class MultiPattern:
    """Many patterns, one scan: a literal prefilter says which can match, those run for the
    answer, and the ones that match give their spans."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = list(patterns)
        self._key = tuple(self.patterns)
        # Compiled on first use, or by `compile_pending`, once per process for a given list
        # (guards of one kind share it): building a guard costs no RE2 work.
        self._filter: Any = _BUILT.get(self._key, _UNBUILT)
        if self._filter is _UNBUILT:
            _PENDING[self._key] = None
        self._compiled: list[Any] = [None] * len(self.patterns)

    def _prefilter(self) -> Any:
        if self._filter is _UNBUILT:
            self._filter = _built(self._key)
        return self._filter

    def __len__(self) -> int:
        return len(self.patterns)

    def matching(self, text: str) -> list[int]:
        """Indices of the patterns that match somewhere in text, in order."""
        if not self.patterns or not text:
            return []
        return self._matching(utf8(text))

    def _matching(self, data: bytes) -> list[int]:
        return list(self._prefilter().match(data))

    def finditer(self, text: str, limit: int | Sequence[int] = 1000) -> Iterator[Hit]:
        """Every non-overlapping hit of every matching pattern, at most `limit` per pattern
        (one number for all, or one per pattern; 0 yields one span-less Hit(index, -1, -1)
        saying the pattern matches, without searching for it).

        The text is encoded once and searched as UTF-8 bytes (google-re2's str path re-maps
        offsets on every match, several times slower); spans come back in characters.
        """
        if not self.patterns or not text:
            return
        data = utf8(text)
        matching = self._matching(data)
        if not matching:
            return
        chars = _CharOffsets(data, len(text))
        for index in matching:
            most = limit if isinstance(limit, int) else limit[index]
            if most == 0:
                yield Hit(index, -1, -1)
                continue
            compiled = self._compiled[index]
            if compiled is None:  # the filter's own compiled pattern, wrapped once
                compiled = self._compiled[index] = self._prefilter().regexp(index)
            ngroups = compiled.groups
            matches = compiled.finditer(data) if most != 1 else (compiled.search(data),)
            for count, match in enumerate(matches):
                if count >= most or match is None:
                    break
                start, end = match.span()
                groups = tuple(chars.span(match.span(g)) for g in range(1, ngroups + 1))
                yield Hit(index, chars.at(start), chars.at(end), groups)


# A pattern anchored at the very start or end of the text, or turning multi-line mode off,
# can match a text alone but not the same text inside a join.
_UNJOINABLE = re2.compile(r"\\[Az]|\(\?[a-zA-Z]*-[a-zA-Z]*m")


def line_prefilter(patterns: Sequence[str]) -> MultiPattern | None:
    """The patterns in multi-line mode, for one set pass over many texts joined by newlines:
    a pattern that matches one of the texts matches the join too (`^`/`$` match at the newlines,
    which are also word edges), so no hit in the join means no hit in any text. None when a
    pattern anchors at `\\A`/`\\z` or turns multi-line mode off (each text must then be scanned
    on its own)."""
    if any(_UNJOINABLE.search(p) for p in patterns):
        return None
    return MultiPattern(["(?m)" + p for p in patterns])


class _CharOffsets:
    """Byte offsets in a UTF-8 encoding to character offsets in the text; identity for ASCII,
    else each lookup decodes only from the nearest offset already converted."""

    def __init__(self, data: bytes, length: int) -> None:
        self.data = data
        self.identity = len(data) == length
        self._bytes: list[int] = [0]
        self._chars: list[int] = [0]

    def at(self, offset: int) -> int:
        if self.identity or offset <= 0:
            return offset
        i = bisect_right(self._bytes, offset) - 1
        base = self._bytes[i]
        if base == offset:
            return self._chars[i]
        char = self._chars[i] + len(self.data[base:offset].decode("utf-8", "ignore"))
        self._bytes.insert(i + 1, offset)
        self._chars.insert(i + 1, char)
        return char

    def span(self, span: tuple[int, int]) -> tuple[int, int]:
        if span[0] < 0:
            return span
        return self.at(span[0]), self.at(span[1])
