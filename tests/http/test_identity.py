"""Identities: static tokens (hashed, constant-time lookup) and OAuth resource-server JWTs."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpward.identity.authenticator import Authenticator, AuthFailure, NoCredentialConfigured
from mcpward.identity.consent import CEILING_CLAIM, ConsentCeiling, ceiling_of
from mcpward.identity.models import OAuthSettings, StaticToken
from mcpward.identity.oauth import JwksUnavailable
from mcpward.identity.tokens import StaticTokenTable, hash_token, new_token
from tests.http.http_asgi_server import serve_asgi
from tests.http.jwt_issuer import ISSUER, RESOURCE, TestIssuer

TOKEN_A = new_token()
TOKEN_B = new_token()


def static_tokens() -> list[StaticToken]:
    return [
        StaticToken(
            client_id="alice",
            token_sha256=hash_token(TOKEN_A),
            roles=["dev"],
            consent_ceiling=ConsentCeiling.READ_ONLY,
        ),
        StaticToken(
            client_id="bob", token_sha256=hash_token(TOKEN_B), consent_ceiling=ConsentCeiling.FULL
        ),
    ]


def test_no_credential_refuses() -> None:
    with pytest.raises(NoCredentialConfigured, match="at least one client credential"):
        Authenticator([], None)


def test_token_hash_format_and_duplicates() -> None:
    assert hash_token("x").startswith("sha256:") and len(hash_token("x")) == 71
    with pytest.raises(ValidationError):
        StaticToken(client_id="c", token_sha256=TOKEN_A, consent_ceiling=ConsentCeiling.FULL)
    entry = static_tokens()[0]
    with pytest.raises(ValueError, match="reuses"):
        StaticTokenTable([entry, entry.model_copy(update={"client_id": "other"})])


async def test_static_tokens_map_to_identity_and_ceiling() -> None:
    auth = Authenticator(static_tokens())
    alice = await auth.authenticate(f"Bearer {TOKEN_A}")
    assert alice.identity.client_id == "alice"
    assert alice.identity.roles == ("dev",)
    assert alice.ceiling is ConsentCeiling.READ_ONLY
    assert ceiling_of(alice.identity) is ConsentCeiling.READ_ONLY
    assert TOKEN_A not in repr(alice) and TOKEN_A not in alice.binding
    bob = await auth.authenticate(f"bearer {TOKEN_B}")
    assert bob.identity.client_id == "bob" and bob.ceiling is ConsentCeiling.FULL


@pytest.mark.parametrize(
    ("header", "error"),
    [
        (None, None),
        ("", None),
        ("Basic YWxpY2U6cHc=", "invalid_request"),
        ("Bearer", "invalid_request"),
        ("Bearer not-a-token", "invalid_token"),
        (f"Bearer {TOKEN_A}x", "invalid_token"),
        (f"Bearer {TOKEN_A} extra", "invalid_request"),
    ],
    # the tokens are random per run: ids that do not show them keep collection stable
    ids=["none", "empty", "basic", "bearer-alone", "unknown", "token-plus-char", "two-words"],
)
async def test_bad_credentials_are_401(header: str | None, error: str | None) -> None:
    auth = Authenticator(static_tokens())
    with pytest.raises(AuthFailure) as info:
        await auth.authenticate(header)
    assert info.value.status == 401
    assert info.value.error == error
    challenge = info.value.challenge("http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp")
    assert challenge.startswith("Bearer ")
    assert 'resource_metadata="http://127.0.0.1:1/' in challenge


def oauth_settings(jwks: Path, **extra: object) -> OAuthSettings:
    base: dict[str, object] = {"issuer": ISSUER, "resource": RESOURCE, "jwks_file": jwks}
    base.update(extra)
    return OAuthSettings.model_validate(base)


@pytest.fixture(scope="module")
def issuer() -> TestIssuer:
    return TestIssuer()


@pytest.fixture(scope="module")
def other_issuer() -> TestIssuer:
    return TestIssuer()


@pytest.fixture
def jwks_file(issuer: TestIssuer, tmp_path: Path) -> Path:
    return issuer.write_jwks(tmp_path / "jwks.json")


async def test_valid_jwt_maps_to_identity(issuer: TestIssuer, jwks_file: Path) -> None:
    settings = oauth_settings(
        jwks_file,
        clients={"ide-1": {"roles": ["dev"], "consent_ceiling": "no_destructive"}},
        roles_claim="roles",
    )
    auth = Authenticator([], settings)
    await auth.start()
    p = await auth.authenticate(f"Bearer {issuer.token(roles=['ops'])}")
    assert p.identity.sub == "user-42"
    assert p.identity.client_id == "ide-1"
    assert p.identity.roles == ("dev", "ops")
    assert p.ceiling is ConsentCeiling.NO_DESTRUCTIVE
    es = await auth.authenticate(f"Bearer {issuer.token(alg='ES256', client_id='other')}")
    assert es.ceiling is ConsentCeiling.READ_ONLY  # unlisted client: the default ceiling


async def test_a_token_cannot_raise_its_own_ceiling(issuer: TestIssuer, jwks_file: Path) -> None:
    auth = Authenticator([], oauth_settings(jwks_file))
    claims = {CEILING_CLAIM: "full", "mcpward.consent_ceiling": "full"}
    p = await auth.authenticate(f"Bearer {issuer.token(**claims)}")
    assert p.ceiling is ConsentCeiling.READ_ONLY
    assert ceiling_of(p.identity) is ConsentCeiling.READ_ONLY


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _forge_alg(token: str, alg: str, secret: bytes) -> str:
    """Re-sign a token's claims with `none` or HMAC keyed by public material (alg confusion)."""
    payload = token.split(".")[1]
    head = _b64(json.dumps({"alg": alg, "kid": "k1", "typ": "JWT"}).encode()) + "." + payload
    if alg == "none":
        return head + "."
    return head + "." + _b64(hmac.new(secret, head.encode(), hashlib.sha256).digest())


def public_pem(issuer: TestIssuer) -> bytes:
    return issuer.rsa.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


@pytest.mark.parametrize(
    ("case", "expect_status"),
    [
        ("wrong_audience", 401),
        ("no_audience", 401),
        ("wrong_issuer", 401),
        ("expired", 401),
        ("no_exp", 401),
        ("unknown_kid", 401),
        ("other_key", 401),
        ("alg_none", 401),
        ("hs256_with_public_key", 401),
        ("tampered", 401),
        ("missing_scope", 403),
    ],
)
async def test_jwt_rejections(
    issuer: TestIssuer, other_issuer: TestIssuer, jwks_file: Path, case: str, expect_status: int
) -> None:
    settings = oauth_settings(jwks_file, required_scopes=["mcp:tools"])
    auth = Authenticator([], settings)
    await auth.start()
    now = int(time.time())
    token = {
        "wrong_audience": lambda: issuer.token(aud="https://other.example/mcp"),
        "no_audience": lambda: issuer.token(aud=None),
        "wrong_issuer": lambda: issuer.token(iss="https://evil.example"),
        "expired": lambda: issuer.token(exp=now - 3600, iat=now - 7200),
        "no_exp": lambda: issuer.token(exp=None),
        "unknown_kid": lambda: issuer.token(kid="nope"),
        "other_key": lambda: other_issuer.token(),
        "alg_none": lambda: _forge_alg(issuer.token(), "none", b""),
        "hs256_with_public_key": lambda: _forge_alg(issuer.token(), "HS256", public_pem(issuer)),
        "tampered": lambda: issuer.token()[:-4] + "AAAA",
        "missing_scope": lambda: issuer.token(scope="other"),
    }[case]()
    with pytest.raises(AuthFailure) as info:
        await auth.authenticate(f"Bearer {token}")
    assert info.value.status == expect_status
    if expect_status == 403:
        assert 'error="insufficient_scope"' in info.value.challenge(None)
        assert 'scope="mcp:tools"' in info.value.challenge(None)


def test_symmetric_algorithms_are_refused_in_config(jwks_file: Path) -> None:
    with pytest.raises(ValidationError, match="algorithms"):
        oauth_settings(jwks_file, algorithms=["HS256"])
    with pytest.raises(ValidationError, match="exactly one"):
        OAuthSettings(issuer=ISSUER, resource=RESOURCE)


async def test_jwks_url_goes_through_the_egress_filter(issuer: TestIssuer) -> None:
    async def keys(request: Request) -> JSONResponse:
        return JSONResponse(issuer.jwks())

    async with serve_asgi(Starlette(routes=[Route("/jwks", keys)])) as port:
        url = f"http://127.0.0.1:{port}/jwks"
        blocked = Authenticator([], OAuthSettings(issuer=ISSUER, resource=RESOURCE, jwks_url=url))
        with pytest.raises(JwksUnavailable, match="loopback"):
            await blocked.start()
        allowed = Authenticator(
            [],
            OAuthSettings(
                issuer=ISSUER, resource=RESOURCE, jwks_url=url, jwks_allow_private=["127.0.0.1"]
            ),
        )
        await allowed.start()
        principal = await allowed.authenticate(f"Bearer {issuer.token()}")
        assert principal.identity.sub == "user-42"
