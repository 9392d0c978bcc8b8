"""What is pinned and how it is hashed: the contract of each tool, prompt, resource and template.

A contract is the whole definition as listed (every field, `_meta` included); its hash is
SHA-256 over the canonical JSON (`protocol.canonical`); the rule is in docs/contracts.md.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from mcpward.contracts.model import INSTRUCTIONS, ItemKind
from mcpward.protocol.canonical import canonical_sha256

KEY_FIELD: dict[ItemKind, str] = {
    ItemKind.TOOL: "name",
    ItemKind.PROMPT: "name",
    ItemKind.RESOURCE: "uri",
    ItemKind.RESOURCE_TEMPLATE: "uriTemplate",
}

ContractMap = dict[tuple[ItemKind, str], Any]


DEEP_PREFIX = "deep:"


def contract_hash(contract: Any) -> str:
    """The pin hash: hex SHA-256 of the canonical JSON of the definition (or instructions text).

    A definition nested too deeply for the canonical encoder gets a `deep:` fingerprint instead
    (an iterative digest); any change to such a contract classifies as deep-schema-undiffable.
    """
    try:
        return canonical_sha256(contract)
    except RecursionError:
        return DEEP_PREFIX + _iterative_digest(contract)


def _iterative_digest(value: Any) -> str:
    """SHA-256 over a typed token stream of the value, with sorted keys, using no recursion."""
    h = hashlib.sha256()
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, _Close):
            h.update(node.token)
        elif isinstance(node, Mapping):
            h.update(b"{")
            stack.append(_Close(b"}"))
            for key in sorted((str(k) for k in node), reverse=True):
                stack.append(node[key])
                stack.append(_Key(key))
        elif isinstance(node, _Key):
            h.update(b"k" + orjson.dumps(unicodedata.normalize("NFC", node.name)))
        elif isinstance(node, list):
            h.update(b"[")
            stack.append(_Close(b"]"))
            stack.extend(reversed(node))
        elif isinstance(node, str):
            h.update(b"s" + orjson.dumps(unicodedata.normalize("NFC", node)))
        else:
            h.update(b"v" + repr(node).encode())
    return h.hexdigest()


class _Close:
    __slots__ = ("token",)

    def __init__(self, token: bytes) -> None:
        self.token = token


class _Key:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def item_name(kind: ItemKind, item: Any) -> str | None:
    """The key of a listed item, or None if it has none (such an item cannot be addressed)."""
    if not isinstance(item, Mapping):
        return None
    value = item.get(KEY_FIELD[kind])
    return value if isinstance(value, str) and value else None


def contracts_of(kind: ItemKind, items: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """name -> definition for one list. With duplicate names the first definition wins, as the
    relay's namespacing and most clients resolve a name to its first listing."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        name = item_name(kind, item)
        if name is not None and name not in out:
            out[name] = dict(item)
    return out


def snapshot_contracts(
    *,
    tools: Iterable[Any] | None = None,
    prompts: Iterable[Any] | None = None,
    resources: Iterable[Any] | None = None,
    resource_templates: Iterable[Any] | None = None,
    instructions: str | None = None,
    include_instructions: bool = False,
) -> ContractMap:
    """All contracts of one upstream view. Lists given as None were not read and are left out."""
    out: ContractMap = {}
    for kind, items in (
        (ItemKind.TOOL, tools),
        (ItemKind.PROMPT, prompts),
        (ItemKind.RESOURCE, resources),
        (ItemKind.RESOURCE_TEMPLATE, resource_templates),
    ):
        if items is None:
            continue
        for name, contract in contracts_of(kind, items).items():
            out[(kind, name)] = contract
    if include_instructions and instructions:
        out[(ItemKind.SERVER, INSTRUCTIONS)] = instructions
    return out


class HashCache:
    """Maps the raw bytes of a definition to its canonical hash.

    Re-validating a large list is then one fast serialisation plus SHA-256 per item; the
    canonical form is computed only for definitions never seen before. Correct because equal raw
    bytes always have the same canonical hash.
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        self._map: dict[bytes, str] = {}
        self._max = max_entries

    def seed(self, contract: Any, known_hash: str) -> None:
        """Remember a hash computed earlier (a verified pin), so its unchanged live contract
        is recognised without recomputing the canonical form after a restart."""
        try:
            raw = orjson.dumps(contract, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            return
        if len(self._map) >= self._max:
            self._map.clear()
        self._map[hashlib.sha256(raw).digest()] = known_hash

    def hash(self, contract: Any) -> str:
        try:
            raw = orjson.dumps(contract, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            return contract_hash(contract)
        key = hashlib.sha256(raw).digest()
        hit = self._map.get(key)
        if hit is None:
            hit = contract_hash(contract)
            if len(self._map) >= self._max:
                self._map.clear()
            self._map[key] = hit
        return hit
