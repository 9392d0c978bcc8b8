"""The chain's entry bytes: the spliced receipt entry equals canonical JSON of the whole entry."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson

from mcpward.evidence.chain import ZERO_HASH, ChainHead, PendingEntry, chain_hash, entry_body, seal
from mcpward.evidence.keyring import HmacKeyring, entry_hmac
from mcpward.evidence.receipt import build_receipt
from mcpward.protocol.canonical import canonical_bytes

from .records import decision


def test_receipt_entry_body_is_the_canonical_json_of_the_entry() -> None:
    for i in range(5):
        receipt = build_receipt(decision(i, name="caf\u00e9"))
        body = entry_body(7, PendingEntry.of_receipt(receipt, 1_700_000_000.25), "00aa")
        parsed = orjson.loads(body)
        assert body == canonical_bytes(parsed)
        assert (
            parsed["receipt_hash"] == hashlib.sha256(canonical_bytes(parsed["receipt"])).hexdigest()
        )
        assert parsed["seq"] == 7 and parsed["key_id"] == "00aa" and parsed["kind"] == "receipt"


def test_seal_links_each_entry_to_the_previous_hash_and_macs_it(tmp_path: Path) -> None:
    keyring = HmacKeyring(tmp_path)
    key_id = keyring.ensure_active()
    pending = [PendingEntry.of_receipt(build_receipt(decision(i)), 1.0) for i in range(3)]
    sealed = seal(ChainHead(0), pending, keyring)
    prev = ZERO_HASH
    for n, entry in enumerate(sealed):
        assert entry.seq == n
        assert entry.entry_hash == chain_hash(prev, entry.body)
        assert entry.hmac == entry_hmac(keyring.get(key_id) or b"", entry.entry_hash)
        prev = entry.entry_hash
    more = seal(ChainHead(3, prev, key_id), pending[:1], keyring)
    assert more[0].seq == 3 and more[0].entry_hash == chain_hash(prev, more[0].body)


def test_key_files_are_private_and_ids_follow_the_content(tmp_path: Path) -> None:
    keyring = HmacKeyring(tmp_path / "keys")
    first = keyring.ensure_active()
    path = tmp_path / "keys" / f"hmac-{first}.key"
    assert path.stat().st_mode & 0o777 == 0o600
    assert keyring.ensure_active() == first  # stable across calls
    second = keyring.create()
    assert second != first and keyring.active_id() == second
    assert HmacKeyring(tmp_path / "keys").ids() == sorted([first, second])
