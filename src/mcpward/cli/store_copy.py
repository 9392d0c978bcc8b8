"""`mcpward store copy`: a single-box SQLite state into an empty PostgreSQL store.

Pins (verified first: tampered pins are not carried over), holds, token revocations, client
records (re-MACed with the target's pins key, then read back and compared), the ledger with its
checkpoints, and the evidence keys the ledger needs (copied, or checked against the target's
SecretRefs); then `ledger verify` on the target. The source is only read.
"""

from __future__ import annotations

from mcpward.cli.copy_keys import KeyCopyError, copy_evidence_keys
from mcpward.config.loader import ConfigError, load_config
from mcpward.contracts.store import PinStoreError
from mcpward.evidence.ledger import verify_ledger
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.vocabulary import LedgerState
from mcpward.identity.client_records import ClientRecordsUnavailable, StoredRecord
from mcpward.store.clients import DB_NAME as CLIENTS_DB
from mcpward.store.clients import SqliteClientRecords
from mcpward.store.factory import (
    StoreContext,
    open_client_records,
    open_pin_store,
    open_revocations,
    store_ready,
)
from mcpward.store.keys import KeyFileError
from mcpward.store.ledger_sqlite import LedgerStoreError, read_snapshot
from mcpward.store.pins_sqlite import DB_NAME as PINS_DB
from mcpward.store.pins_sqlite import SqlitePinStore
from mcpward.store.postgres.clients import PostgresClientRecords
from mcpward.store.postgres.ledger import open_postgres_snapshot
from mcpward.store.postgres.ledger_import import LedgerImportError, import_ledger
from mcpward.store.postgres.pool import PostgresUnavailable, acquire_pool, release_pool
from mcpward.store.revocations import DB_NAME as REVOCATIONS_DB
from mcpward.store.revocations import SqliteRevocations

# unsigned: entries after the last checkpoint (HMAC-checked); the first replica signs them
_COPYABLE = (LedgerState.OK, LedgerState.UNSIGNED)


class CopyError(Exception):
    """The copy cannot be made (or did not verify); the message says why and what to do."""


def _evidence_paths(context: StoreContext) -> EvidencePaths:
    ledger = None
    if context.config_path is not None:
        try:
            ledger = load_config(context.config_path).config.evidence.path
        except ConfigError as exc:
            raise CopyError(str(exc)) from None
    return EvidencePaths.resolve(context.state_dir, ledger, store=context)


def _copy_pins(source: StoreContext, target: StoreContext) -> tuple[int, int, int]:
    if not (source.state_dir / PINS_DB).exists():
        return 0, 0, 0
    try:
        src = SqlitePinStore(source.state_dir, key=source.pins_key(create=False))
    except (OSError, PinStoreError) as exc:
        raise CopyError(f"source pin store: {exc}") from None
    try:
        dst = open_pin_store(target, listen=False)
    except PinStoreError as exc:
        src.close()
        raise CopyError(str(exc)) from None
    upstreams = pins = holds = 0
    try:
        if dst.upstreams() or dst.holds():
            raise CopyError("the target already has pins; copy only into a new store")
        loaded = [src.load(upstream) for upstream in src.upstreams()]
        tampered = [f"{u.upstream}: {u.tampered}" for u in loaded if u.tampered]
        if tampered:
            raise CopyError(
                "source pins fail verification, nothing copied: " + "; ".join(tampered[:3])
            )
        for upstream in loaded:
            dst.write(
                upstream.upstream,
                put=list(upstream.pins.values()),
                put_holds=list(upstream.holds.values()),
                baseline_kinds=upstream.kinds,
            )
            upstreams += 1
            pins += len(upstream.pins)
            holds += len(upstream.holds)
    except PinStoreError as exc:
        raise CopyError(str(exc)) from None
    finally:
        src.close()
        dst.close()
    return upstreams, pins, holds


def _copy_revocations(source: StoreContext, target: StoreContext) -> int:
    if not (source.state_dir / REVOCATIONS_DB).exists():
        return 0
    src = SqliteRevocations(source.state_dir)
    dst = open_revocations(target, listen=False)
    try:
        return sum(dst.revoke(subject) for subject, _ in src.subjects())
    finally:
        src.close()
        dst.close()


def _copy_clients(source: StoreContext, target: StoreContext) -> int:
    """Client records, re-MACed with the target's pins key; then read back and compared."""
    if not (source.state_dir / CLIENTS_DB).exists():
        return 0
    src = SqliteClientRecords(source.state_dir)
    try:
        records = src.snapshot()
    finally:
        src.close()
    unreadable = [entry for entry in records.values() if isinstance(entry, str)]
    if unreadable:
        raise CopyError("source client records are unreadable, nothing copied: " + unreadable[0])
    dst = open_client_records(target, listen=False)
    try:
        if dst.snapshot():
            raise CopyError("the target already has client records; copy only into a new store")
        assert isinstance(dst, PostgresClientRecords)
        dst.import_records([r for r in records.values() if isinstance(r, StoredRecord)])
    finally:
        dst.close()
    check = open_client_records(target, listen=False)
    try:
        copied = check.snapshot()
    finally:
        check.close()
    if copied != records:
        wrong = sorted(set(copied.items()) ^ set(records.items()), key=str)[0]
        raise CopyError(f"the copied client records do not verify (client {wrong[0]!r})")
    return len(copied)


def _copy_ledger(source: EvidencePaths, target: StoreContext) -> tuple[int, int]:
    if not source.ledger.exists():
        return 0, 0
    pool = acquire_pool(target.settings)
    try:
        with read_snapshot(source.ledger) as view:
            return import_ledger(pool, view)
    finally:
        release_pool(pool)


def copy_store(source: StoreContext, target: StoreContext) -> list[str]:
    """Copy everything; returns what was done, line by line. Raises CopyError."""
    if source.postgres:
        raise CopyError("--from-config must name a SQLite (single-box) store")
    if not target.postgres:
        raise CopyError("--to-config must name a PostgreSQL store (store.kind: postgres)")
    reason = store_ready(target)
    if reason is not None:
        raise CopyError(f"the target store is not ready: {reason}")
    source_paths, target_paths = _evidence_paths(source), _evidence_paths(target)
    try:
        keys = copy_evidence_keys(source_paths, target_paths)
        upstreams, pins, holds = _copy_pins(source, target)
        revoked = _copy_revocations(source, target)
        clients = _copy_clients(source, target)
        entries, checkpoints = _copy_ledger(source_paths, target)
    except (
        KeyCopyError,
        ClientRecordsUnavailable,
        LedgerStoreError,
        LedgerImportError,
        PostgresUnavailable,
        OSError,
    ) as exc:
        raise CopyError(str(exc)) from None
    lines = [
        *keys,
        f"pins: {pins} pin(s) of {upstreams} upstream(s), {holds} hold(s)",
        f"token revocations: {revoked}",
        f"client records: {clients} (read back from the target, each MAC checked)",
        f"ledger: {entries} entries, {checkpoints} checkpoint(s)",
    ]
    if entries:
        try:
            report = verify_ledger(target_paths, view_of=open_postgres_snapshot(target.settings))
        except KeyFileError as exc:
            raise CopyError(str(exc)) from None
        if report.state not in _COPYABLE or report.entries != entries:
            raise CopyError(
                f"the copied ledger does not verify: {report.state.value} ({report.message}); "
                f"{report.entries} of {entries} entries"
            )
        lines.append(f"ledger verify on the target: {report.state.value} ({report.message})")
    return lines
