"""The console over HTTP: auth, CSRF, headers, token separation, pagination, no secrets."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from starlette.testclient import TestClient

from mcpward.console.auth import (
    SESSION_COOKIE,
    AdminAuth,
    AdminTokenError,
    check_not_a_client_token,
)
from mcpward.console.queries import MAX_PAGE_SIZE
from mcpward.console.security import CONTENT_SECURITY_POLICY
from mcpward.evidence.ledger import verify_ledger
from mcpward.evidence.reviews import read_reviews
from mcpward.evidence.settings import EvidencePaths
from mcpward.identity.tokens import hash_token
from mcpward.store.ledger_sqlite import read_snapshot
from mcpward.store.pins_sqlite import SqlitePinStore
from tests.console.conftest import login
from tests.console.state import ADMIN_TOKEN, CLIENT_TOKEN, NEW_TOOL, SECRET_ARGUMENT, make_state

PAGES = ["/", "/holds", "/pins", "/receipts", "/ledger", "/guards", "/guards/data.json"]


@pytest.mark.parametrize("path", PAGES)
def test_pages_need_the_admin_credential(client: TestClient, path: str) -> None:
    assert client.get(path).status_code == 303  # a browser is sent to the login form
    assert client.get(path).headers["location"] == "/login"
    bad = client.get(path, headers={"authorization": f"Bearer {CLIENT_TOKEN}"})
    assert bad.status_code == 401
    client.cookies.set(SESSION_COOKIE, "abc.9999999999.YWRtaW4.forged")
    assert client.get(path).status_code == 303
    client.cookies.clear()
    assert client.get(path, headers={"authorization": f"Bearer {ADMIN_TOKEN}"}).status_code == 200


def test_login_sets_a_strict_httponly_cookie_and_a_wrong_token_is_refused(
    client: TestClient,
) -> None:
    page = client.get("/login")
    nonce = page.text.split('name="nonce" value="', 1)[1].split('"', 1)[0]
    wrong = client.post("/login", data={"nonce": nonce, "token": CLIENT_TOKEN})
    assert wrong.status_code == 401
    assert SESSION_COOKIE not in wrong.cookies
    nonce = wrong.text.split('name="nonce" value="', 1)[1].split('"', 1)[0]
    ok = client.post("/login", data={"nonce": nonce, "token": ADMIN_TOKEN, "operator": "bob"})
    assert ok.status_code == 303
    cookie = next(
        v for k, v in ok.headers.multi_items() if k == "set-cookie" and SESSION_COOKIE in v
    )
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Max-Age=" in cookie
    assert "signed in as" in client.get("/holds").text


def test_login_without_the_form_nonce_is_refused(client: TestClient) -> None:
    response = client.post("/login", data={"token": ADMIN_TOKEN})
    assert response.status_code == 400
    assert SESSION_COOKIE not in response.cookies


def test_an_expired_session_is_refused() -> None:
    auth = AdminAuth(ADMIN_TOKEN, ttl_s=60)
    cookie = auth.new_session("alice", now=1000.0)
    assert auth.read_session(cookie, now=1030.0) is not None
    assert auth.read_session(cookie, now=1061.0) is None
    assert AdminAuth(ADMIN_TOKEN).read_session(cookie, now=1030.0) is None  # another key


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    for path in ["/login", "/static/console.js"]:
        headers = client.get(path).headers
        assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert "default-src 'self'" in headers["content-security-policy"]
        assert "unsafe-inline" not in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"
    assert client.get("/login").headers["cache-control"] == "no-store"


def test_pages_have_no_inline_script_or_style(client: TestClient) -> None:
    login(client)
    for path in PAGES[:-1]:
        text = client.get(path).text
        assert "<script>" not in text and "<style" not in text and " style=" not in text
        assert " on" + "click=" not in text


def test_review_without_the_csrf_token_is_refused(client: TestClient, state_dir: Path) -> None:
    csrf = login(client)
    form = {
        "action": "accept",
        "upstream": "files",
        "item_kind": "tool",
        "item": "read_file",
        "expected_hash": _held_hash(state_dir),
        "reason": "reviewed",
    }
    assert client.post("/holds/review", data=form).status_code == 403
    assert client.post("/holds/review", data={**form, "csrf": csrf + "x"}).status_code == 403
    assert _holds(state_dir) == 1
    assert client.post("/holds/review", data={**form, "csrf": csrf}).status_code == 303
    assert _holds(state_dir) == 0


def test_accept_needs_a_reason_and_records_the_operator(
    client: TestClient, state_dir: Path
) -> None:
    csrf = login(client, operator="carol")
    form = {
        "csrf": csrf,
        "upstream": "files",
        "item_kind": "tool",
        "item": "read_file",
        "expected_hash": _held_hash(state_dir),
    }
    refused = client.post("/holds/review", data={**form, "action": "accept", "reason": ""})
    assert refused.status_code == 400 and "reason" in refused.text
    kept = client.post(
        "/holds/review", data={**form, "action": "keep_held", "reason": "ask vendor"}
    )
    assert kept.status_code == 303 and _holds(state_dir) == 1
    done = client.post("/holds/review", data={**form, "action": "accept", "reason": "vendor ok"})
    assert done.status_code == 303 and _holds(state_dir) == 0
    paths = EvidencePaths.resolve(state_dir)
    with read_snapshot(paths.ledger) as view:
        reviews = read_reviews(view.entries())
    assert [(r["action"], r["operator"], r["reason"]) for r in reviews] == [
        ("keep_held", "carol", "ask vendor"),
        ("accept", "carol", "vendor ok"),
    ]
    assert verify_ledger(paths).ok
    store = SqlitePinStore(state_dir)
    try:
        pin = next(iter(store.load("files").pins.values()))
        assert pin.contract == NEW_TOOL and pin.source == "accept by carol"
    finally:
        store.close()
    assert "accept by carol" in client.get("/pins").text


def test_accept_refuses_a_hold_that_changed_since_the_page(
    client: TestClient, state_dir: Path
) -> None:
    csrf = login(client)
    form = {"csrf": csrf, "action": "accept", "upstream": "files", "item_kind": "tool"}
    form |= {"item": "read_file", "expected_hash": "sha256:" + "0" * 64, "reason": "looks fine"}
    response = client.post("/holds/review", data=form)
    assert response.status_code == 400 and "changed since" in response.text
    assert _holds(state_dir) == 1


def test_a_bearer_script_can_review_without_a_cookie(client: TestClient, state_dir: Path) -> None:
    form = {"action": "keep_held", "upstream": "files", "item_kind": "tool", "item": "read_file"}
    form |= {"expected_hash": _held_hash(state_dir), "reason": "scripted"}
    auth = {"authorization": f"Bearer {ADMIN_TOKEN}"}
    assert client.post("/holds/review", data=form, headers=auth).status_code == 303
    bad = {"authorization": f"Bearer {CLIENT_TOKEN}"}
    assert client.post("/holds/review", data=form, headers=bad).status_code == 401


def test_a_client_token_cannot_be_the_admin_token() -> None:
    with pytest.raises(AdminTokenError, match="also a client token"):
        check_not_a_client_token(ADMIN_TOKEN, [hash_token(CLIENT_TOKEN), hash_token(ADMIN_TOKEN)])
    check_not_a_client_token(ADMIN_TOKEN, [hash_token(CLIENT_TOKEN)])


def test_receipts_are_paginated_and_bounded(tmp_path: Path) -> None:
    from mcpward.console.app import ConsoleSettings, create_console_app

    make_state(tmp_path, receipts=30)
    settings = ConsoleSettings(tmp_path, EvidencePaths.resolve(tmp_path), AdminAuth(ADMIN_TOKEN))
    client = TestClient(create_console_app(settings))
    auth = {"authorization": f"Bearer {ADMIN_TOKEN}"}
    first = client.get("/receipts?page_size=10", headers=auth).text
    assert "30 matching receipt(s)" in first and "page 1 of 3" in first
    assert first.count("<tr title=") == 10
    last = client.get("/receipts?page_size=10&page=3", headers=auth).text
    assert last.count("<tr title=") == 10 and 'rel="next"' not in last
    for bad in [
        f"page_size={MAX_PAGE_SIZE + 1}",
        "page=0",
        "page=-1",
        "decision=nope",
        "since=yesterday",
        "upstream=" + "x" * 200,
    ]:
        assert client.get(f"/receipts?{bad}", headers=auth).status_code == 400, bad
    assert "0 matching" in client.get("/receipts?decision=allow", headers=auth).text
    assert "30 matching" in client.get("/receipts?guard=rug_pull&tool=read_file", headers=auth).text


def test_no_page_shows_a_secret_or_a_body(client: TestClient) -> None:
    login(client)
    for path in PAGES:
        text = client.get(path).text
        assert SECRET_ARGUMENT not in text, path
        assert ADMIN_TOKEN not in text, path


def test_upstream_text_is_escaped(client: TestClient) -> None:
    login(client)
    page = client.get("/holds").text
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_ledger_page_verifies_and_serves_the_public_key(client: TestClient) -> None:
    login(client)
    page = client.get("/ledger").text
    assert "verify: ok" in page and "Latest signed checkpoint" in page
    key = client.get("/ledger/signing.pub")
    assert key.status_code == 200 and "attachment" in key.headers["content-disposition"]


def test_guard_chart_data_counts_holds_per_guard(client: TestClient) -> None:
    login(client)
    data = orjson.loads(client.get("/guards/data.json").content)
    series = {s["guard"]: s for s in data["series"]}
    assert sum(series["rug_pull"]["hold"]) == 3 and len(data["days"]) == 14


def test_an_oversized_form_is_refused(client: TestClient) -> None:
    csrf = login(client)
    big = {"csrf": csrf, "reason": "x" * 20_000}
    assert client.post("/holds/review", data=big).status_code == 413


def _held_hash(state_dir: Path) -> str:
    store = SqlitePinStore(state_dir)
    try:
        return str(store.holds("files")[0].new_hash)
    finally:
        store.close()


def _holds(state_dir: Path) -> int:
    store = SqlitePinStore(state_dir)
    try:
        return len(store.holds("files"))
    finally:
        store.close()
