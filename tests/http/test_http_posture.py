"""The HTTP front's default-closed posture, table-driven: start-up refusals, 401/403 on every
path, the credential decided before the body is read, the body cap, RFC 9728 metadata."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import pytest_asyncio
from pydantic import ValidationError

from mcpward.config.http_front import HttpFront, HttpFrontRefused, parse_http_address
from mcpward.config.loader import ConfigError, parse_config
from mcpward.fronts.http.server import quick_front
from tests.http.gateway_harness import gateway_front, token_entry

on_module_loop = pytest.mark.asyncio(loop_scope="module")

TOKEN = "posture-token-0123456789abcdef"
CAP = 64 * 1024
TIME_UPSTREAM = {"id": "time", "command": sys.executable, "args": ["-c", "pass"]}  # never spawned
HASH = token_entry(TOKEN, "c1")["token_sha256"]
ONE_TOKEN = [{"client_id": "c1", "token_sha256": HASH, "consent_ceiling": "full"}]


# ---- start-up refusals ---------------------------------------------------------------------

REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    ("no credential", {}, "without a client credential"),
    ("no credential, non-loopback", {"host": "0.0.0.0"}, "without a client credential"),
    (
        "non-loopback without acknowledgement",
        {"host": "0.0.0.0", "tokens": ONE_TOKEN, "allowed_hosts": ["gw.example"]},
        "acknowledgement is missing",
    ),
    (
        "acknowledgement without non-loopback address",
        {"allow_non_loopback": True, "tokens": ONE_TOKEN},
        "non-loopback address is missing",
    ),
    (
        "non-loopback without allowed hosts",
        {"host": "0.0.0.0", "allow_non_loopback": True, "tokens": ONE_TOKEN},
        "allowed_hosts",
    ),
    (
        "plain-text token in config",
        {"tokens": [{"client_id": "c1", "token_sha256": TOKEN, "consent_ceiling": "full"}]},
        "token_sha256",
    ),
    (
        "symmetric JWT algorithm",
        {
            "oauth": {
                "issuer": "https://as.example",
                "resource": "http://127.0.0.1:8931/mcp",
                "jwks_file": "/nonexistent",
                "algorithms": ["HS256"],
            }
        },
        "algorithms",
    ),
]


@pytest.mark.parametrize(("case", "front", "message"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_config_refusals(case: str, front: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"front": {"kind": "http", **front}, "upstreams": [TIME_UPSTREAM]}, "t.yaml")
    assert message in str(info.value)
    assert "front" in str(info.value)


def test_config_accepts_the_closed_defaults_and_an_acknowledged_exposure() -> None:
    loaded = parse_config(
        {"front": {"kind": "http", "tokens": ONE_TOKEN}, "upstreams": [TIME_UPSTREAM]}, "t.yaml"
    )
    front = loaded.config.front
    assert isinstance(front, HttpFront) and front.host == "127.0.0.1"
    exposed = HttpFront.model_validate(
        {
            "host": "0.0.0.0",
            "allow_non_loopback": True,
            "tokens": ONE_TOKEN,
            "allowed_hosts": ["gw.example"],
        }
    )
    assert exposed.host == "0.0.0.0"


QUICK: list[tuple[str, str, bool, bool, str | None]] = [
    # (case, --http, token file given, --allow-non-loopback, refusal or None)
    ("loopback with token", "127.0.0.1:8080", True, False, None),
    ("bare port", "8080", True, False, None),
    ("no token", "127.0.0.1:8080", False, False, "without a client credential"),
    ("non-loopback, no acknowledgement", "0.0.0.0:8080", True, False, "acknowledgement"),
    ("acknowledgement, loopback", "127.0.0.1:8080", True, True, "non-loopback address is missing"),
    ("non-loopback acknowledged", "0.0.0.0:8080", True, True, None),
    ("bad address", "localhost", True, False, "HOST:PORT"),
]


@pytest.mark.parametrize(
    ("case", "http", "with_token", "ack", "refusal"), QUICK, ids=[q[0] for q in QUICK]
)
def test_quick_form_refusals(
    tmp_path: Path, case: str, http: str, with_token: bool, ack: bool, refusal: str | None
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    if refusal is None:
        front = quick_front(http, token_file if with_token else None, ack)
        assert (front.host, front.port) == parse_http_address(http)
        assert TOKEN not in front.model_dump_json()
        return
    with pytest.raises(HttpFrontRefused, match=refusal):
        quick_front(http, token_file if with_token else None, ack)


def test_quick_form_rejects_a_short_token(tmp_path: Path) -> None:
    short = tmp_path / "short"
    short.write_text("abc\n")
    short.chmod(0o600)
    with pytest.raises(HttpFrontRefused, match="at least 16"):
        quick_front("127.0.0.1:1", short, False)


def test_quick_form_refuses_a_token_file_others_can_read(tmp_path: Path) -> None:
    """As the console refuses its admin token file (issue #25)."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o644)
    with pytest.raises(HttpFrontRefused, match=r"readable by group or others \(mode 644\)"):
        quick_front("127.0.0.1:8080", token_file, False)


def test_front_model_refuses_directly() -> None:
    with pytest.raises(ValidationError, match="client credential"):
        HttpFront()


# ---- requests against a running front ------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def front(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    spec = {"tokens": [token_entry(TOKEN, "c1")], "max_body_bytes": CAP}
    state = tmp_path_factory.mktemp("posture")
    async with gateway_front([TIME_UPSTREAM], state, spec) as (_gateway, url):
        yield url


def _auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
JSON_SSE = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

# (case, method, path, headers, expected status, expected challenge error or None)
REQUESTS: list[tuple[str, str, str, dict[str, str], int, str | None]] = [
    ("no credential", "POST", "/mcp", JSON_SSE, 401, None),
    ("wrong token", "POST", "/mcp", {**JSON_SSE, **_auth("x" * 30)}, 401, "invalid_token"),
    (
        "basic auth",
        "POST",
        "/mcp",
        {**JSON_SSE, "Authorization": "Basic YTpi"},
        401,
        "invalid_request",
    ),
    ("token in query only", "POST", f"/mcp?access_token={TOKEN}", JSON_SSE, 401, None),
    ("GET without credential", "GET", "/mcp", {"Accept": "text/event-stream"}, 401, None),
    ("DELETE without credential", "DELETE", "/mcp", {}, 401, None),
    ("evil Host", "POST", "/mcp", {**JSON_SSE, **_auth(), "Host": "evil.example"}, 403, None),
    ("evil Host, no credential", "POST", "/mcp", {**JSON_SSE, "Host": "evil.example"}, 403, None),
    (
        "evil Origin",
        "POST",
        "/mcp",
        {**JSON_SSE, **_auth(), "Origin": "http://evil.example"},
        403,
        None,
    ),
    (
        "evil Host on metadata",
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        {"Host": "evil.example"},
        403,
        None,
    ),
    (
        "evil Origin on metadata",
        "GET",
        "/.well-known/oauth-protected-resource",
        {"Origin": "https://evil.example"},
        403,
        None,
    ),
    ("evil Host on unknown path", "GET", "/admin", {"Host": "evil.example"}, 403, None),
    ("unknown path", "GET", "/admin", {}, 404, None),
    ("unsupported method", "PUT", "/mcp", _auth(), 405, None),
    ("wrong content type", "POST", "/mcp", {**_auth(), "Content-Type": "text/plain"}, 415, None),
    ("no session id", "GET", "/mcp", {**_auth(), "Accept": "text/event-stream"}, 400, None),
    ("unknown session", "GET", "/mcp", {**_auth(), "Mcp-Session-Id": "nope"}, 404, None),
]


@on_module_loop
@pytest.mark.parametrize(
    ("case", "method", "path", "headers", "status", "challenge_error"),
    REQUESTS,
    ids=[r[0] for r in REQUESTS],
)
async def test_request_posture(
    front: str,
    case: str,
    method: str,
    path: str,
    headers: dict[str, str],
    status: int,
    challenge_error: str | None,
) -> None:
    base = front.rsplit("/mcp", 1)[0]
    async with httpx.AsyncClient() as client:
        response = await client.request(
            method, base + path, headers=headers, json=INIT if method == "POST" else None
        )
    assert response.status_code == status, response.text
    if status == 401:
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        # static tokens: no OAuth metadata, which would send the Inspector into an OAuth prompt
        assert "resource_metadata" not in challenge
        if challenge_error is not None:
            assert f'error="{challenge_error}"' in challenge
        else:
            assert "error=" not in challenge
    assert TOKEN not in response.text


@on_module_loop
async def test_valid_credential_reaches_the_handshake(front: str) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.post(
            front, headers={**JSON_SSE, **_auth()}, json={**INIT, "method": "tools/list"}
        )
        # Authenticated, well-formed, but no session yet: the session layer answers.
        assert response.status_code == 400
        assert "Missing session ID" in response.text


@on_module_loop
async def test_no_oauth_metadata_with_static_tokens(front: str) -> None:
    """Static tokens only: no protected-resource metadata (issue #25); with `front.oauth` it is
    served (tests/http/test_http_aggregate_oauth.py)."""
    base = front.rsplit("/mcp", 1)[0]
    async with httpx.AsyncClient() as client:
        for path in (
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ):
            response = await client.get(base + path)
            assert response.status_code == 404


@on_module_loop
async def test_a_refused_host_or_origin_is_named_with_its_setting(front: str) -> None:
    async with httpx.AsyncClient() as client:
        host = await client.post(front, headers={**JSON_SSE, **_auth(), "Host": "evil.example"})
        assert host.status_code == 403
        message = host.json()["error"]["message"]
        assert "Host 'evil.example' is not allowed" in message
        assert "front.allowed_hosts" in message
        origin = await client.post(
            front, headers={**JSON_SSE, **_auth(), "Origin": "http://evil.example"}, json=INIT
        )
        assert origin.status_code == 403
        message = origin.json()["error"]["message"]
        assert "Origin 'http://evil.example' is not allowed" in message
        assert "front.allowed_origins" in message


async def _raw(url: str, head: str, body: bytes = b"") -> bytes:
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(head.encode() + body)
        await writer.drain()
        return await asyncio.wait_for(reader.read(65536), 10)
    finally:
        writer.close()


@on_module_loop
async def test_credential_is_decided_before_the_body_is_read(front: str) -> None:
    """Headers promise a large body that never comes: the 401 still arrives."""
    host = urlsplit(front).netloc
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {CAP - 1}\r\n\r\n"
    )
    answer = await _raw(front, head)
    assert answer.startswith(b"HTTP/1.1 401")
    assert b"www-authenticate: bearer" in answer.lower()


@on_module_loop
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_body_cap(front: str, chunked: bool) -> None:
    host = urlsplit(front).netloc
    common = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    )
    big = b"[" + b"0," * CAP + b"0]"
    if chunked:
        body = (
            b"".join(
                f"{len(big[i : i + 8192]):x}\r\n".encode() + big[i : i + 8192] + b"\r\n"
                for i in range(0, len(big), 8192)
            )
            + b"0\r\n\r\n"
        )
        answer = await _raw(front, common + "Transfer-Encoding: chunked\r\n\r\n", body)
    else:
        # Refused on the declared length alone, before any of the body is read.
        answer = await _raw(front, common + f"Content-Length: {len(big)}\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413")


@on_module_loop
async def test_body_just_under_the_cap_is_parsed(front: str) -> None:
    async with httpx.AsyncClient() as client:
        padded = {**INIT, "method": "tools/list", "params": {"pad": "x" * (CAP - 200)}}
        response = await client.post(front, headers={**JSON_SSE, **_auth()}, json=padded)
    assert response.status_code == 400  # past the cap check: the session layer answered
