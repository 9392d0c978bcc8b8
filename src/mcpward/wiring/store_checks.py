"""The configured store's checks of `mcpward doctor`: a PostgreSQL server (its DSN readable, the
server answering within seconds, the schema current) and the keys given by SecretRefs (readable,
32 bytes). Messages name settings and sources, never a key, a DSN or its password."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

from mcpward.evidence.chain import next_key_id
from mcpward.evidence.keyring import ConfiguredHmacKeys, hmac_key_id, signer_from_seed
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.source import LedgerSource
from mcpward.secret_refs import SecretRef
from mcpward.store.factory import StoreContext, migrate_hint, store_problem
from mcpward.store.keys import KeyFileError, key_from_ref, ref_source
from mcpward.store.settings import PoolSettings
from mcpward.wiring.findings import Finding, Level

if TYPE_CHECKING:  # the driver is imported only when a config names PostgreSQL
    from mcpward.store.postgres.pool import PgPool

WAIT_S = 2.0  # longest wait for the server: doctor answers in seconds, even for a dead host
KEY_FIX = "give {source} a 32-byte key (64 hex digits or base64); see docs/deploy.md"


def _dsn_source(context: StoreContext) -> str:
    dsn = context.settings.dsn
    return f"store.dsn from {ref_source(dsn)}" if isinstance(dsn, SecretRef) else "store.dsn"


def _probe(context: StoreContext) -> StoreContext:
    """The same store with a short wait and one connection."""
    settings = context.settings.model_copy(
        update={
            "timeout_s": min(context.settings.timeout_s, WAIT_S),
            "pool": PoolSettings(min=1, max=1),
        }
    )
    return dataclasses.replace(context, settings=settings)


def _scrub(text: str, pool: PgPool) -> str:
    """A driver's message without the DSN or its password, should it quote them."""
    import psycopg

    try:
        password = psycopg.conninfo.conninfo_to_dict(pool.dsn).get("password")
    except psycopg.Error:
        password = None
    for secret in (pool.dsn, password):
        if secret:
            text = text.replace(str(secret), "***")
    return text


def _reach(context: StoreContext, pool: PgPool) -> Finding:
    """The server answers and the schema is exactly this code's."""
    from mcpward.store.postgres.migrations import code_version
    from mcpward.store.postgres.pool import PostgresUnavailable

    source = _dsn_source(context)
    try:
        pool.connect_direct().close()
    except PostgresUnavailable as exc:
        fix = f"start the server at {pool.where}, or correct {source}"
        return Finding(Level.FIX, "store", _scrub(str(exc), pool), fix)
    problem = store_problem(context)
    if problem is None:
        message = f"{pool.where} ({source}) answers; schema at version {code_version()}"
        return Finding(Level.OK, "store", message)
    reason = _scrub(problem[1], pool)
    command = f"mcpward store migrate {migrate_hint(context)}"
    return Finding(Level.FIX, "store", reason, command if command in reason else reason)


def check_postgres(context: StoreContext) -> list[Finding]:
    """The PostgreSQL store a config names: DSN readable, server answering, schema current."""
    from mcpward.store.postgres.pool import PostgresUnavailable, acquire_pool, release_pool

    probe = _probe(context)
    try:
        pool = acquire_pool(probe.settings)
    except PostgresUnavailable as exc:  # the DSN's SecretRef cannot be read
        fix = f"make {_dsn_source(context)} readable here, as for the gateway"
        return [Finding(Level.FIX, "store", str(exc), fix)]
    try:
        return [_reach(probe, pool)]
    finally:
        release_pool(pool)


def _key_ref(setting: str, ref: SecretRef, describe: Callable[[bytes], str]) -> Finding:
    """One key SecretRef: read and decoded, or what is wrong with it."""
    source = ref_source(ref)
    try:
        key = key_from_ref(ref, setting)
    except KeyFileError as exc:
        return Finding(Level.FIX, "keys", str(exc), KEY_FIX.format(source=f"{setting} ({source})"))
    return Finding(Level.OK, "keys", f"{setting} ({source}): {describe(key)}")


def _pins(key: bytes) -> str:
    return f"a {len(key)}-byte key"


def _hmac(key: bytes) -> str:
    return f"HMAC key {hmac_key_id(key)}"  # the id is a hash: it reveals nothing of the key


def _signer(key: bytes) -> str:
    return f"signs as {signer_from_seed(key).name}"


def _hmac_refs(refs: tuple[SecretRef, ...]) -> list[Finding]:
    """Every `keys.ledger_hmac` entry, then whether two of them hold the same key."""
    name = "keys.ledger_hmac"
    found = [_key_ref(f"{name}[{i}]", ref, _hmac) for i, ref in enumerate(refs)]
    if len(refs) > 1 and all(f.level == Level.OK for f in found):
        try:
            ConfiguredHmacKeys(refs)
        except KeyFileError as exc:
            fix = f"give each entry of {name} its own key (newest first)"
            found.append(Finding(Level.FIX, "keys", str(exc), fix))
    return found


def _ledger_key(context: StoreContext) -> list[Finding]:
    """Whether `keys.ledger_hmac` still holds the key the ledger's last entry names: the next
    receipt is sealed with it (until `ledger rotate-key`), so without it the gateway refuses to
    start. Nothing to say when the ledger is empty, missing or unreadable (the
    store's own check says why)."""
    try:
        keys = ConfiguredHmacKeys(context.hmac_refs)
    except KeyFileError:
        return []  # each unreadable or repeated entry is reported on its own
    source = LedgerSource(EvidencePaths.resolve(context.state_dir, store=context), context)
    if not source.exists():
        return []
    try:
        with source.snapshot() as view:
            last = view.last_entries(1)
        needed = next_key_id(orjson.loads(last[0].body)) if last else None
    except Exception:  # unreachable, not migrated or unreadable: reported by the store check
        return []
    if needed is None:
        return []
    name = "keys.ledger_hmac"
    if needed in keys.listed():
        index = keys.listed().index(needed)
        message = f"{name}[{index}] is key {needed}, the one the ledger's next entry is sealed with"
        return [Finding(Level.OK, "keys", message)]
    message = (
        f"the ledger's last entry (seq {last[0].seq}) says its next entry is sealed with HMAC key "
        f"{needed}, which {name} does not hold: the gateway refuses to start without it"
    )
    fix = (
        f"put that key back in {name} (after any newer one: newest first); to move the ledger "
        f"to the first key, run `mcpward ledger rotate-key {' '.join(context.cli_args())}` once "
        "it is back"
    )
    return [Finding(Level.FIX, "keys", message, fix)]


def check_key_refs(context: StoreContext) -> list[Finding]:
    """The keys a config gives by SecretRef (`keys.pins`, `keys.ledger_hmac`, `keys.signing`)."""
    found: list[Finding] = []
    if context.pins_ref is not None:
        found.append(_key_ref("keys.pins", context.pins_ref, _pins))
    hmac = _hmac_refs(context.hmac_refs)
    found.extend(hmac)
    if hmac and all(f.level == Level.OK for f in hmac):
        found.extend(_ledger_key(context))
    if context.signing_ref is not None:
        found.append(_key_ref("keys.signing", context.signing_ref, _signer))
    return found
