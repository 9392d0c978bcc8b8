# ruff: noqa: RUF001  (sentence ends of CJK scripts, by design)
"""A learned scorer for directives hidden in text the model reads: a linear model over
language-light features, trained offline (`scripts/train_directive_model.py`) on development data
only, shipped as a small JSON table of weights.

Why learned on top of the concept lexicons: the lexicons (concepts.py) name what makes an order
hostile, but every hand-written alternation keys on the wordings its author thought of. The
features here are word stems (the first letters of each word, so inflections share one),
character 4-grams inside words (so compounds and conjugations share pieces), CJK and Hangul
character pairs, stem pairs, language-independent cues (an address, a private path, another
tool's name) and the rule findings themselves (concept markers and families, with their pairs:
the co-occurrence). Training sets how much each adds. It only ever adds evidence: a guard keeps
every verdict its rules give and may flag more (escalate-only), and its finding names the
features that weighed most.

Pure Python, no numeric library; words are featurised once per process (cached).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

VERSION = 3
STEM = 5  # letters of a word kept as its stem (spaced scripts)
GRAM = 4  # character n-grams inside a word (its first 10 letters), with edge marks

_WORD = re.compile(r"[^\W\d_]+")
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_URL = re.compile(r"https?://\S+|\bwww\.\S+")
_URL_SLOT = re.compile(r"[?&][A-Za-z0-9_-]{1,24}=(?:[\s\"'<>)\]»」]|$|\{|<|\$)")
_EMAIL = re.compile(r"[\w.%+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+")
_PRIVATE = re.compile(r"~/|\.env\b|\.ssh\b|id_rsa|id_ed25519|/etc/(?:passwd|shadow)|\.aws/")
_SNAKE = re.compile(r"(?<![\w.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w-])")
_NAMESPACED = re.compile(r"(?<![\w-])[A-Za-z0-9-]+__[A-Za-z0-9_]+")
_HOST = re.compile(r"(?<![\w@-])(?:[a-z0-9-]+\.)+(?:com|net|org|io|dev|app|xyz|ru|cn|info)\b")


@lru_cache(maxsize=65536)
def _word(word: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(stem, base features, character n-grams) of one casefolded word; cached: words repeat."""
    if _UNSPACED.search(word):
        pairs = [word[i : i + 2] for i in range(len(word) - 1)] or [word]
        return "", tuple("g:" + p for p in pairs), ()
    if word.startswith("ال") and len(word) > 4:  # Arabic article
        word = word[2:]
    stem = word[:STEM]
    marked = "<" + word[:10] + ">"
    grams = tuple("n:" + marked[i : i + GRAM] for i in range(len(marked) - GRAM + 1))
    return stem, ("w:" + stem,), grams


def _cues(raw: str, own_name: str, out: set[str]) -> None:
    """Language-independent cues (each regex only where a substring test says it can match)."""
    if "://" in raw or "www." in raw:
        for url in _URL.findall(raw):
            out.add("x:url")
            if _URL_SLOT.search(url):
                out.add("x:url-slot")
    if "@" in raw and _EMAIL.search(raw):
        out.add("x:email")
    elif "." in raw and _HOST.search(raw):
        out.add("x:host")
    if any(hint in raw for hint in _PRIVATE_HINTS) and _PRIVATE.search(raw):
        out.add("x:private-path")
    if "__" in raw and _NAMESPACED.search(raw):
        out.add("x:namespaced-name")
    if "_" in raw and any(name != own_name for name in _SNAKE.findall(raw)):
        out.add("x:other-name")


_PRIVATE_HINTS = ("~/", ".env", ".ssh", "id_", "/etc/", ".aws/")


@dataclass(frozen=True, slots=True)
class Reading:
    """What the scorer reads of one item: its distinct words, its distinct stem pairs, the
    language-independent cues, and the rule findings (concept markers and families)."""

    words: frozenset[str]
    pairs: frozenset[str]
    other: tuple[str, ...]  # cue and concept features, each counted once

    def features(self, grams: bool = True) -> Counter[str]:
        """Each feature with the number of the sentence's distinct words that carry it (the
        words' stems or CJK/Hangul pairs, and their character n-grams when `grams`), plus the
        stem pairs, the cues and the concepts once each: what the model was trained on, and
        what `DirectiveModel.score_one` adds up word by word."""
        out: Counter[str] = Counter(self.pairs)
        out.update(self.other)
        for word in self.words:
            _, base, more = _word(word)
            out.update(base)
            if grams:
                out.update(more)
        return out


def read_texts(texts: Iterable[str], own_name: str = "", concepts: Iterable[str] = ()) -> Reading:
    """The reading of one item's texts (names excluded) and the ids its rule findings carry
    (`c:<id>`, with every pair of them as `cc:<a>|<b>`: their co-occurrence)."""
    words: set[str] = set()
    pairs: set[str] = set()
    cues: set[str] = set()
    for raw in texts:
        _cues(raw, own_name, cues)
        previous = ""
        for word in _WORD.findall(unicodedata.normalize("NFKC", raw).casefold()):
            words.add(word)
            stem = _word(word)[0]
            if stem and previous:
                pairs.add("b:" + previous + " " + stem)
            previous = stem
    found = sorted(set(concepts))
    other = [*sorted(cues), *("c:" + c for c in found)]
    other += [f"cc:{a}|{b}" for i, a in enumerate(found) for b in found[i + 1 :]]
    return Reading(frozenset(words), frozenset(pairs), tuple(other))


_SENTENCE = re.compile(r"(?<=[.!?;。！？；])\s+|[\n\r]+|(?<=[。！？；])")
MAX_UNITS = 256  # sentences read per item; the rest are read as one
# A "sentence" longer than this (an enumeration, a list of categories) is read in pieces: the
# scorer adds word weights up, and a few hundred ordinary words would add up to a verdict.
MAX_UNIT_CHARS = 300


def split_units(texts: Iterable[str]) -> list[str]:
    """The sentences of an item's texts (each field on its own): poisoning is mostly one
    sentence added to an honest description, so the scorer reads sentence by sentence and
    an item scores as its worst sentence; a long honest text does not add up to a verdict."""
    units: list[str] = []
    for text in texts:
        for unit in _SENTENCE.split(text):
            while len(unit) > MAX_UNIT_CHARS:  # a list without full stops: read in pieces
                cut = unit.rfind(" ", MAX_UNIT_CHARS // 2, MAX_UNIT_CHARS)
                cut = cut if cut > 0 else MAX_UNIT_CHARS
                units.append(unit[:cut])
                unit = unit[cut:]
            if unit.strip():
                units.append(unit)
    if len(units) > MAX_UNITS:
        units[MAX_UNITS - 1 :] = [" ".join(units[MAX_UNITS - 1 :])]
    return units


def read_units(texts: Iterable[str], own_name: str, concepts: Iterable[str]) -> list[Reading]:
    """One reading per sentence; the item's rule findings count in each."""
    found = set(concepts)
    return [read_texts([unit], own_name, found) for unit in split_units(texts)] or [
        read_texts([], own_name, found)
    ]


DefinitionKey = tuple[str, tuple[str, ...], frozenset[str]]


def definition_key(item: Any, findings: Iterable[Any]) -> DefinitionKey:
    """What the scorer reads of a definition: its name, its readable texts, its findings' ids."""
    from mcpward.guards.detection.extract import definition_texts

    texts = tuple(t.text for t in definition_texts(item) if not t.is_name)
    name = str(item.get("name") or "") if isinstance(item, dict) else ""
    return name, texts, frozenset(_finding_ids(findings))


def read_definition(item: Any, findings: Iterable[Any]) -> list[Reading]:
    """The readings of a tool/prompt/resource definition and its rule findings."""
    name, texts, ids = definition_key(item, findings)
    return read_units(texts, name, ids)


def read_data(text: str) -> list[Reading]:
    """The readings of returned data (a tool result's text), without the rule findings: in
    data the rules' weak cues (a question, "your") are everywhere, and a scorer that leans on
    them flags ordinary mail."""
    return read_units([text], "", ())


def _finding_ids(findings: Iterable[Any]) -> set[str]:
    out: set[str] = set()
    for f in findings:
        out.add(f.rule)
        out.add("F" + f.family)
    return out


@dataclass(frozen=True, slots=True)
class ModelScore:
    probability: float
    top: tuple[str, ...]  # the features that added most, strongest first (when flagged)


DEFINITION_CACHE = 2048  # definitions whose score a model keeps (then it starts over)
WORD_CACHE = 65536  # words whose summed weight a model keeps


class DirectiveModel:
    """Weights of one trained model (`data/directive_<name>.json`)."""

    def __init__(self, table: dict[str, Any]) -> None:
        if table.get("version") != VERSION:
            raise ValueError(f"directive model version {table.get('version')!r}, want {VERSION}")
        self.name: str = table["name"]
        self.grams: bool = bool(table["grams"])  # reads character n-grams (costs time)
        self.bias: float = float(table["bias"])
        self.threshold: float = float(table["threshold"])
        self.floor: float = float(table.get("floor", self.threshold))  # worth asking tier 2
        # for data in which the rules found no cue at all (response_injection's opt-in)
        self.uncued_threshold = float(table.get("uncued_threshold", self.threshold))
        self.weights: dict[str, float] = {k: float(v) for k, v in table["weights"].items()}
        self._definitions: dict[bytes, ModelScore] = {}
        self._words: dict[str, float] = {}

    def describe(self, scored: ModelScore) -> dict[str, Any]:
        return {"model": self.name, "probability": scored.probability,
                "threshold": self.threshold, "top_features": list(scored.top)}  # fmt: skip

    def score_definition(self, item: Any, findings: Iterable[Any]) -> ModelScore:
        """`score` of a definition, kept per content (by digest: the memory is bounded by the
        entries): a server lists the same tools again and again."""
        name, texts, ids = definition_key(item, findings)
        digest = hashlib.blake2b(digest_size=16)
        for part in (name, *texts, "", *sorted(ids)):  # each part length-prefixed
            raw = part.encode("utf-8", "surrogatepass")
            digest.update(len(raw).to_bytes(8, "big") + raw)
        key = digest.digest()
        scored = self._definitions.get(key)
        if scored is None:
            scored = self.score(read_units(texts, name, ids))
            if len(self._definitions) >= DEFINITION_CACHE:
                self._definitions.clear()
            self._definitions[key] = scored
        return scored

    def score(self, readings: Iterable[Reading]) -> ModelScore:
        """The probability that the item carries orders aimed at the model: that of its worst
        sentence, with (when over the consult floor) the features that added most there."""
        scores = [self.score_one(r) for r in readings]
        return max(scores, key=lambda s: s.probability, default=ModelScore(0.0, ()))

    def word_weight(self, word: str) -> float:
        """The summed weight of one word's features, kept per word (words repeat)."""
        weight = self._words.get(word)
        if weight is None:
            _, base, more = _word(word)
            get = self.weights.get
            weight = sum(get(f, 0.0) for f in base) + (
                sum(get(f, 0.0) for f in more) if self.grams else 0.0
            )
            if len(self._words) >= WORD_CACHE:
                self._words.clear()
            self._words[word] = weight
        return weight

    def score_one(self, reading: Reading) -> ModelScore:
        get = self.weights.get
        z = self.bias + sum(map(self.word_weight, reading.words))
        z += sum(get(f, 0.0) for f in reading.pairs) + sum(get(f, 0.0) for f in reading.other)
        probability = round(1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z)))), 4)
        if probability < self.floor:
            return ModelScore(probability, ())
        added = [(n * get(f, 0.0), f) for f, n in reading.features(self.grams).items()]
        return ModelScore(
            probability, tuple(f for w, f in sorted(added, reverse=True)[:5] if w > 0)
        )


@cache
def load_model(name: str) -> DirectiveModel:
    """The shipped model `name` ("definition" or "result"), read once per process."""
    data = resources.files("mcpward.guards.detection").joinpath(f"data/directive_{name}.json")
    return DirectiveModel(json.loads(data.read_text(encoding="utf-8")))
