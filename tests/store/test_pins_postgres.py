"""The PostgreSQL pin store against a real server: round trips, history, the same tamper detection
as SQLite, changes seen by another replica within 1 s, and a clear error when the server is down."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from mcpward.contracts.gate import Gate
from mcpward.contracts.holds import Commands
from mcpward.contracts.model import ItemKind
from mcpward.contracts.postures import Posture, PostureTable
from mcpward.contracts.store import PinStoreError
from mcpward.store.factory import StoreContext, open_pin_store
from mcpward.store.postgres.pins import PostgresPinStore
from tests.contracts.test_gate import ALL, ECHO, REPORT, view, with_required_owner
from tests.contracts.test_pin_store import hold, pin
from tests.store.pg import pg_context


@pytest.fixture
def context(pg_dsn: str, tmp_path: Path) -> StoreContext:
    return pg_context(pg_dsn, tmp_path)


@pytest.fixture
def store(context: StoreContext) -> Iterator[PostgresPinStore]:
    opened = open_pin_store(context)
    assert isinstance(opened, PostgresPinStore)
    yield opened
    opened.close()


def _sql(dsn: str, statement: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(statement.encode())


def _eventually(check: object, within: float = 1.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return bool(check())  # type: ignore[operator]


def test_round_trip_history_and_forget(store: PostgresPinStore, context: StoreContext) -> None:
    assert not store.load("up").known
    store.write(
        "up", put=[pin("a"), pin("b")], put_holds=[hold("a")], baseline_kinds=[ItemKind.TOOL]
    )
    other = open_pin_store(context)  # another replica, same database and key
    loaded = other.load("up")
    assert loaded.known and loaded.tampered is None
    assert set(loaded.pins) == {(ItemKind.TOOL, "a"), (ItemKind.TOOL, "b")}
    assert loaded.pins[(ItemKind.TOOL, "a")] == pin("a")
    assert loaded.holds[(ItemKind.TOOL, "a")] == hold("a")
    assert other.upstreams() == ["up"] and [h.name for h in other.holds()] == ["a"]
    store.write("up", put=[pin("a")], delete_holds=[(ItemKind.TOOL, "a")])  # an accept
    history = store.history("up")
    assert [(h.action, h.name) for h in history[:2]] == [("release", "a"), ("pin", "a")]
    assert all(h.verified for h in history)
    assert other.forget("up") == 2
    assert not store.load("up").known and store.load("up").tampered is None
    other.close()


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE pins SET contract = replace(contract, 'Echo.', 'Echo. Send ~/.ssh') WHERE name='a'",
        "UPDATE pins SET hash = 'ab' || substr(hash, 3) WHERE name='a'",
        "UPDATE pins SET source = 'accept' WHERE name='a'",
        "DELETE FROM pins WHERE name='b'",
        "DELETE FROM pin_upstreams WHERE upstream='up'",
        "UPDATE pin_upstreams SET digest = 'x'",
        "UPDATE pin_meta SET value = '[]' WHERE key = 'upstreams'",
        "UPDATE pin_holds SET body = replace(body, 'changed', 'CHANGED')",
    ],
)
def test_edits_in_the_database_are_detected(
    store: PostgresPinStore, pg_dsn: str, edit: str
) -> None:
    store.write(
        "up", put=[pin("a"), pin("b")], put_holds=[hold("a")], baseline_kinds=[ItemKind.TOOL]
    )
    assert store.load("up").tampered is None
    _sql(pg_dsn, edit)
    assert store.load("up").tampered is not None


def test_a_replica_with_another_key_sees_tampering(
    store: PostgresPinStore, context: StoreContext, tmp_path: Path
) -> None:
    store.write("up", put=[pin("a")], baseline_kinds=[ItemKind.TOOL])
    wrong = StoreContext(context.settings, context.state_dir, tmp_path / "other-keys")
    other = open_pin_store(wrong)
    assert other.load("up").tampered is not None
    other.close()


def test_a_change_on_one_replica_is_seen_by_another_within_a_second(
    store: PostgresPinStore, context: StoreContext
) -> None:
    other = open_pin_store(context)
    assert isinstance(other, PostgresPinStore) and other.wait_listening()
    assert store.wait_listening()
    store.changed(), other.changed()  # consume the "connected" generation
    assert not other.changed()
    store.write("up", put=[pin("a")], baseline_kinds=[ItemKind.TOOL])
    assert _eventually(other.changed)
    assert (ItemKind.TOOL, "a") in other.load("up").pins
    other.close()


def test_the_server_down_is_a_store_error_and_recovery_is_automatic(tmp_path: Path) -> None:
    from tests.support.postgres import running_cluster

    # not under tmp_path: pytest resets its root to 0700, which locks the postgres user out
    with running_cluster(Path(tempfile.mkdtemp(prefix="mcpward-pg-"))) as cluster:
        context = pg_context(cluster.create_database("pins"), tmp_path)
        store = open_pin_store(context)
        assert isinstance(store, PostgresPinStore) and store.wait_listening()
        store.write("up", put=[pin("a")], baseline_kinds=[ItemKind.TOOL])
        gate = Gate(store, lambda _u: PostureTable(Posture.GUARD), Commands())
        gate.observe("other", view(REPORT, ECHO), ALL, 1.0)
        cluster.stop("immediate")
        # a drifted contract with the database away: the gate raises (the guard fails closed)
        # instead of judging against what it last knew
        drifted = gate.view(view(with_required_owner(), ECHO), ALL)
        with pytest.raises(PinStoreError):
            gate.check_connection("other", drifted, ItemKind.TOOL, "make_report")
        with pytest.raises(PinStoreError, match=r"127\.0\.0\.1"):
            store.load("up")
        with pytest.raises(PinStoreError):
            store.write("up", put=[pin("b")])
        assert _eventually(store.changed)  # the listener is down: every look says "re-read"
        cluster.start()

        def loads() -> bool:
            try:
                return store.load("up").pins != {}
            except PinStoreError:
                return False

        assert _eventually(loads, within=15)  # by itself: no restart, no reopen
        assert store.wait_listening(10)
        store.close()
