"""The evidence keys a copied ledger needs (`mcpward store copy`): key files are copied into the
target's keys directory; a kind of key that either side gives by SecretRef (`keys.ledger_hmac`,
`keys.signing`) is not copied but checked: the target must hold the source's keys."""

from __future__ import annotations

import os
from pathlib import Path

from mcpward.evidence.keyring import SIGNING_FILE
from mcpward.evidence.ledger_keys import existing_hmac_keys, local_verifier_key
from mcpward.evidence.settings import EvidencePaths
from mcpward.store.keys import KeyFileError


class KeyCopyError(Exception):
    """The target cannot verify the copied ledger with its keys; the message says what to do."""


def copy_evidence_keys(source: EvidencePaths, target: EvidencePaths) -> list[str]:
    """Copy or check the HMAC keys and the signing key; one line per kind, for the report."""
    try:
        return [_hmac_keys(source, target), _signing_key(source, target)]
    except KeyFileError as exc:
        raise KeyCopyError(str(exc)) from None


def _hmac_keys(source: EvidencePaths, target: EvidencePaths) -> str:
    if not source.hmac_refs and not target.hmac_refs:
        copied = 0
        if source.keys.is_dir():
            for path in sorted(source.keys.iterdir()):
                if path.is_file() and path.name != SIGNING_FILE:
                    copied += _copy_key_file(path, target.keys / path.name)
        return f"HMAC keys: {copied} file(s) copied to {target.keys}"
    theirs = existing_hmac_keys(source)
    if theirs is None:
        return "HMAC keys: the source has none yet"
    ours = existing_hmac_keys(target)
    missing = [key_id for key_id in theirs.ids() if ours is None or ours.get(key_id) is None]
    where = ours.where if ours is not None else str(target.keys)
    if missing:
        raise KeyCopyError(
            f"the target's HMAC keys ({where}) lack the source's key(s) {', '.join(missing)} "
            f"(from {theirs.where}); give the target the source's keys (a key file as base64: "
            "`base64 < FILE`)"
        )
    return f"HMAC keys: the source's {len(theirs)} key(s) are in the target's {where}"


def _signing_key(source: EvidencePaths, target: EvidencePaths) -> str:
    if source.signing_ref is None and target.signing_ref is None:
        copied = 0
        private = source.keys / SIGNING_FILE
        if private.exists():
            copied += _copy_key_file(private, target.keys / private.name)
        if source.public_key.exists():
            copied += _copy_key_file(source.public_key, target.public_key)
        return f"signing key: {copied} file(s) copied to {target.keys.parent}"
    theirs = local_verifier_key(source)
    if theirs is None:
        return "signing key: the source has none yet"
    if local_verifier_key(target) != theirs:
        where = "keys.signing" if target.signing_ref is not None else str(target.keys)
        raise KeyCopyError(
            f"the target's signing key ({where}) is not the source's ({theirs.split('+')[0]}); "
            "its checkpoints would not verify: give the target the source's signing key"
        )
    return "signing key: the target's is the source's"


def _copy_key_file(source: Path, target: Path) -> bool:
    """Copy one key file (0600, never overwriting); True if copied. A different key already at
    the target is refused: the ledger would not verify with it."""
    data = source.read_bytes()
    if target.exists():
        if target.read_bytes() != data:
            raise KeyCopyError(
                f"{target} exists and differs from {source}; the copied ledger needs the "
                "source's keys (use an empty keys.dir, or the source's keys)"
            )
        return False
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, source.stat().st_mode & 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return True
