"""The configured store's checks of `mcpward doctor`: a PostgreSQL server (its DSN readable, the
server answering within seconds, the schema current) and the keys given by SecretRefs (readable,
32 bytes). Messages name settings and sources, never a key, a DSN or its password."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from mcpward.evidence.keyring import ConfiguredHmacKeys, hmac_key_id, signer_from_seed
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


def check_key_refs(context: StoreContext) -> list[Finding]:
    """The keys a config gives by SecretRef (`keys.pins`, `keys.ledger_hmac`, `keys.signing`)."""
    found: list[Finding] = []
    if context.pins_ref is not None:
        found.append(_key_ref("keys.pins", context.pins_ref, _pins))
    found.extend(_hmac_refs(context.hmac_refs))
    if context.signing_ref is not None:
        found.append(_key_ref("keys.signing", context.signing_ref, _signer))
    return found
