"""Where the ledger's keys come from: SecretRefs in `keys:` (`ledger_hmac`, `signing`; read, never
created, and they win over the files), else files in the keys directory (created on first run).

Each kind of key is taken from one place only; errors name the setting and its source, never a
value (KeyFileError).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcpward.evidence.keyring import (
    ConfiguredHmacKeys,
    HmacKeyring,
    load_or_create_signer,
    read_verifier_keys,
    signer_from_ref,
)
from mcpward.evidence.note import NoteSigner, VerifierKey
from mcpward.evidence.settings import EvidencePaths


@dataclass(frozen=True, slots=True)
class LedgerKeys:
    """What a ledger writer needs: the HMAC keys and the checkpoint signer."""

    keyring: HmacKeyring
    signer: NoteSigner


def load_ledger_keys(paths: EvidencePaths) -> LedgerKeys:
    """The writer's keys; the files of a kind not given by SecretRef are created on first run."""
    if paths.hmac_refs:
        keyring: HmacKeyring = ConfiguredHmacKeys(paths.hmac_refs)
    else:
        paths.keys.mkdir(parents=True, exist_ok=True, mode=0o700)
        keyring = HmacKeyring(paths.keys)
        keyring.ensure_active()
    if paths.signing_ref is not None:
        signer = signer_from_ref(paths.signing_ref)
    else:
        signer = load_or_create_signer(paths.keys, paths.public_key)
    return LedgerKeys(keyring, signer)


def existing_hmac_keys(paths: EvidencePaths) -> HmacKeyring | None:
    """The HMAC keys as a reader sees them (nothing created): the SecretRefs, else the keys
    directory when it exists, else None."""
    if paths.hmac_refs:
        return ConfiguredHmacKeys(paths.hmac_refs)
    return HmacKeyring(paths.keys) if paths.keys.is_dir() else None


def local_verifier_key(paths: EvidencePaths) -> str | None:
    """The checkpoint verifier key to publish (`name+id+key`): derived from `keys.signing`, else
    the `signing.pub` written with the signing key (None before the first run)."""
    if paths.signing_ref is not None:
        return signer_from_ref(paths.signing_ref).verifier().encode()
    try:
        return paths.public_key.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None


def local_verifiers(paths: EvidencePaths) -> list[VerifierKey]:
    """The verifier keys of this store's own signing key (none before the first run)."""
    if paths.signing_ref is not None:
        return [signer_from_ref(paths.signing_ref).verifier()]
    return read_verifier_keys(paths.public_key) if paths.public_key.exists() else []
