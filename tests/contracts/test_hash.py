"""The pin hash rule: canonical JSON (RFC 8785 style, NFC strings), SHA-256, bounded depth."""

from __future__ import annotations

import hashlib
import unicodedata

from mcpward.contracts.extract import DEEP_PREFIX, HashCache, contract_hash, snapshot_contracts
from mcpward.contracts.model import INSTRUCTIONS, ItemKind

TOOL = {
    "name": "t",
    "description": "Café",
    "inputSchema": {"type": "object", "properties": {"a": {"type": "integer", "maximum": 10}}},
}


def test_hash_is_sha256_of_canonical_bytes() -> None:
    expected = hashlib.sha256(
        b'{"description":"Caf\xc3\xa9","inputSchema":{"properties":{"a":{"maximum":10,"type":"integer"}},'
        b'"type":"object"},"name":"t"}'
    ).hexdigest()
    assert contract_hash(TOOL) == expected


def test_key_order_nfc_and_integral_floats_do_not_change_the_hash() -> None:
    reordered = {
        "inputSchema": {
            "properties": {"a": {"maximum": 10.0, "type": "integer"}},
            "type": "object",
        },
        "name": "t",
        "description": unicodedata.normalize("NFD", "Café"),
    }
    assert contract_hash(reordered) == contract_hash(TOOL)


def test_any_field_change_changes_the_hash() -> None:
    for key, value in [("description", "Cafe"), ("_meta", {"x": 1}), ("title", "T")]:
        assert contract_hash({**TOOL, key: value}) != contract_hash(TOOL)


def test_deep_contract_gets_a_deep_fingerprint_instead_of_crashing() -> None:
    schema: dict[str, object] = {"type": "string"}
    for _ in range(700):
        schema = {"type": "object", "properties": {"x": schema}}
    deeper = {"type": "object", "properties": {"x": schema}}
    h1 = contract_hash({"name": "d", "inputSchema": schema})
    h2 = contract_hash({"name": "d", "inputSchema": deeper})
    assert h1.startswith(DEEP_PREFIX) and h2.startswith(DEEP_PREFIX)
    assert h1 != h2
    assert h1 == contract_hash({"name": "d", "inputSchema": schema})


def test_hash_cache_agrees_with_the_canonical_hash() -> None:
    cache = HashCache()
    for item in (TOOL, {**TOOL, "title": "x"}, {"name": "big", "n": 2**70}):
        assert cache.hash(item) == contract_hash(item)
        assert cache.hash(item) == contract_hash(item)  # cached path


def test_snapshot_contracts_keys_and_first_definition_wins() -> None:
    contracts = snapshot_contracts(
        tools=[
            {"name": "a", "description": "1"},
            {"name": "a", "description": "2"},
            {"nameless": True},
        ],
        prompts=[{"name": "p"}],
        resources=[{"uri": "file:///x", "name": "x"}],
        resource_templates=[{"uriTemplate": "file:///{p}", "name": "t"}],
        instructions="be nice",
        include_instructions=True,
    )
    assert contracts[(ItemKind.TOOL, "a")]["description"] == "1"
    assert set(contracts) == {
        (ItemKind.TOOL, "a"),
        (ItemKind.PROMPT, "p"),
        (ItemKind.RESOURCE, "file:///x"),
        (ItemKind.RESOURCE_TEMPLATE, "file:///{p}"),
        (ItemKind.SERVER, INSTRUCTIONS),
    }
