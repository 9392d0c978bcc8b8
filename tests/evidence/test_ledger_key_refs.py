"""`keys.ledger_hmac` and `keys.signing` as SecretRefs: read, never created, errors that name the
setting and source (never the value), rotation to the first listed key, a public key derived for
offline verification, and a swapped key caught by `verify` (or refused when the ledger opens)."""

from __future__ import annotations

import secrets
import time
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from mcpward.evidence.chain import PendingEntry
from mcpward.evidence.keyring import ConfiguredHmacKeys, hmac_key_id, signer_from_seed
from mcpward.evidence.ledger import Ledger, verify_ledger
from mcpward.evidence.ledger_keys import local_verifier_key
from mcpward.evidence.receipt import build_receipt
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.vocabulary import LedgerState, VerifyReason
from mcpward.secret_refs import SecretRef
from mcpward.store.keys import KeyFileError
from mcpward.store.settings import KeysSettings

from .records import decision

A, B, C, SEED = (secrets.token_bytes(32) for _ in range(4))


def entries(count: int) -> list[PendingEntry]:
    return [PendingEntry.of_receipt(build_receipt(decision(i)), time.time()) for i in range(count)]


def env_refs(monkeypatch: pytest.MonkeyPatch, *keys: bytes) -> tuple[SecretRef, ...]:
    refs = []
    for index, key in enumerate(keys):
        monkeypatch.setenv(f"MCPWARD_TEST_HMAC_{index}", key.hex())
        refs.append(SecretRef(env=f"MCPWARD_TEST_HMAC_{index}"))
    return tuple(refs)


def ref_paths(tmp_path: Path, hmac: tuple[SecretRef, ...], seed_file: Path) -> EvidencePaths:
    paths = EvidencePaths.resolve(tmp_path / "state", None, tmp_path / "keys")
    return replace(paths, hmac_refs=hmac, signing_ref=SecretRef(file=seed_file))


def test_settings_take_one_ref_or_a_list_and_refuse_prefixes() -> None:
    one = KeysSettings.model_validate({"ledger_hmac": {"env": "K"}, "signing": {"file": "/s"}})
    assert one.ledger_hmac == [SecretRef(env="K")]
    with pytest.raises(ValidationError, match=r"keys\.ledger_hmac\[1\] takes no prefix"):
        KeysSettings.model_validate({"ledger_hmac": [{"env": "K"}, {"env": "L", "prefix": "x"}]})
    with pytest.raises(ValidationError, match=r"keys\.signing takes no prefix"):
        KeysSettings.model_validate({"signing": {"env": "S", "prefix": "x"}})
    with pytest.raises(ValidationError, match="at least 1 item"):
        KeysSettings.model_validate({"ledger_hmac": []})


def test_key_errors_name_the_setting_and_source_never_the_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refs = env_refs(monkeypatch, A, A)
    with pytest.raises(KeyFileError, match=r"keys\.ledger_hmac\[1\] is the same key as .*\[0\]"):
        ConfiguredHmacKeys(refs)
    monkeypatch.delenv("MCPWARD_TEST_HMAC_1")
    with pytest.raises(KeyFileError, match=r"keys\.ledger_hmac\[1\]: environment variable MCPW"):
        ConfiguredHmacKeys(refs)
    monkeypatch.setenv("MCPWARD_TEST_HMAC_1", "s3cret-but-short")
    with pytest.raises(KeyFileError, match=r"keys\.ledger_hmac\[1\] \(env MCPWARD_TEST_HMAC_1\)"):
        ConfiguredHmacKeys(refs)
    seed = tmp_path / "seed"
    seed.write_text("s3cret-but-short\n")
    paths = ref_paths(tmp_path, refs[:1], seed)
    with pytest.raises(
        KeyFileError, match=r"keys\.signing \(file .*seed\) is not a usable"
    ) as info:
        Ledger.open(paths)
    assert "s3cret" not in str(info.value)
    assert not (tmp_path / "keys").exists()


def test_a_ledger_on_refs_rotates_to_the_first_key_and_verifies_with_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = tmp_path / "seed"
    seed.write_text(SEED.hex() + "\n")
    paths = ref_paths(tmp_path, env_refs(monkeypatch, A), seed)
    ledger = Ledger.open(paths)
    ledger.append(entries(3))
    with pytest.raises(KeyFileError, match=r"already uses HMAC key .*put a new key first"):
        ledger.rotate_key()
    ledger.close()

    rotated = replace(paths, hmac_refs=env_refs(monkeypatch, B, A))  # the new key first
    ledger = Ledger.open(rotated)
    rotation = ledger.rotate_key()
    assert (rotation.old_key_id, rotation.new_key_id) == (hmac_key_id(A), hmac_key_id(B))
    ledger.append(entries(2))
    ledger.checkpoint()
    ledger.close()
    assert not (tmp_path / "keys").exists()  # nothing created, not even the directory
    report = verify_ledger(rotated)
    assert report.state is LedgerState.OK and report.hmac_checked and report.entries == 6

    # The verifier key is derived from the seed; it verifies an outsider's way, no HMACs.
    public = tmp_path / "signing.pub"
    public.write_text(str(local_verifier_key(rotated)) + "\n")
    assert local_verifier_key(rotated) == signer_from_seed(SEED).verifier().encode()
    outsider = replace(rotated, hmac_refs=(), signing_ref=None)
    assert verify_ledger(outsider, public_keys=[public], use_hmac=False).state is LedgerState.OK

    # The old key dropped from the list: its entries no longer verify.
    newest_only = replace(rotated, hmac_refs=env_refs(monkeypatch, B))
    report = verify_ledger(newest_only)
    assert (report.state, report.reason) == (LedgerState.TAMPERED, VerifyReason.HMAC_KEY_UNKNOWN)
    assert report.first_bad_seq == 0 and "keys.ledger_hmac" in report.message
    # Another signing key: the stored checkpoint is not signed by a trusted key.
    other = tmp_path / "other-seed"
    other.write_text(secrets.token_hex(32))
    report = verify_ledger(replace(rotated, signing_ref=SecretRef(file=other)))
    assert (report.state, report.reason) == (
        LedgerState.TAMPERED,
        VerifyReason.CHECKPOINT_KEY_UNKNOWN,
    )


def test_keys_of_another_ledger_are_refused_when_it_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = tmp_path / "seed"
    seed.write_text(SEED.hex())
    paths = ref_paths(tmp_path, env_refs(monkeypatch, A), seed)
    ledger = Ledger.open(paths)
    ledger.append(entries(1))
    ledger.close()
    wrong = replace(paths, hmac_refs=env_refs(monkeypatch, C))
    with pytest.raises(KeyFileError, match=rf"current HMAC key {hmac_key_id(A)} is not in keys"):
        Ledger.open(wrong)
    report = verify_ledger(wrong)
    assert (report.state, report.reason) == (LedgerState.TAMPERED, VerifyReason.HMAC_KEY_UNKNOWN)
