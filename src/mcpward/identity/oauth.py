"""OAuth 2.1 resource-server mode: verify JWT access tokens against the AS's JWKS (a file, or a
URL fetched through the egress filter), with issuer, audience (RFC 8707) and scope checks.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import jwt

from mcpward.egress.client import egress_client
from mcpward.egress.policy import EgressPolicy
from mcpward.identity.consent import ConsentCeiling
from mcpward.identity.models import OAuthSettings

log = logging.getLogger("mcpward.identity")

MAX_JWKS_BYTES = 1024 * 1024
UNKNOWN_KID_REFETCH_S = 30.0


class TokenRejected(Exception):
    """A bearer token that is not acceptable. `status` 401 (invalid) or 403 (insufficient scope)."""

    def __init__(self, message: str, *, status: int = 401, error: str = "invalid_token") -> None:
        super().__init__(message)
        self.status = status
        self.error = error


class JwksUnavailable(Exception):
    """The key set could not be read or is not a usable JWKS."""


def parse_jwks(data: bytes | str) -> jwt.PyJWKSet:
    try:
        value = json.loads(data)
        keys = value.get("keys") if isinstance(value, dict) else None
        if not isinstance(keys, list) or not keys:
            raise JwksUnavailable('a JWKS is a JSON object with a non-empty "keys" list')
        return jwt.PyJWKSet(keys)
    except (ValueError, jwt.PyJWKSetError, jwt.InvalidKeyError) as exc:
        raise JwksUnavailable(f"not a usable JWKS: {exc}") from None


class JwksSource:
    """Holds the current key set; re-reads it every `refresh_s`, and early on an unknown `kid`."""

    def __init__(self, settings: OAuthSettings) -> None:
        self._settings = settings
        self._keys: jwt.PyJWKSet | None = None
        self._loaded_at = 0.0
        self._lock = anyio.Lock()
        self._policy = EgressPolicy.from_allow_list(settings.jwks_allow_private)

    async def _read(self) -> jwt.PyJWKSet:
        if self._settings.jwks_file is not None:
            try:
                data = await anyio.Path(self._settings.jwks_file).read_bytes()
            except OSError as exc:
                raise JwksUnavailable(f"cannot read {self._settings.jwks_file}: {exc}") from None
            return parse_jwks(data)
        assert self._settings.jwks_url is not None
        try:
            async with (
                egress_client(self._policy, timeout=10) as client,
                client.stream("GET", self._settings.jwks_url) as response,
            ):
                if response.status_code != 200:
                    raise JwksUnavailable(f"JWKS URL answered HTTP {response.status_code}")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_JWKS_BYTES:
                        raise JwksUnavailable("JWKS larger than 1 MiB")
        except JwksUnavailable:
            raise
        except Exception as exc:  # EgressBlocked and every httpx error mean "unavailable"
            raise JwksUnavailable(f"cannot fetch JWKS: {exc}") from None
        return parse_jwks(bytes(body))

    async def load(self) -> jwt.PyJWKSet:
        """Read now (at startup: a gateway whose keys cannot be read refuses to start)."""
        async with self._lock:
            self._keys = await self._read()
            self._loaded_at = time.monotonic()
            return self._keys

    async def key_for(self, kid: str | None) -> jwt.PyJWK:
        keys = self._keys
        age = time.monotonic() - self._loaded_at
        if keys is None or age > self._settings.jwks_refresh_s:
            keys = await self._reload_quietly(keys)
        key = _find(keys, kid)
        if key is None and age > UNKNOWN_KID_REFETCH_S:
            keys = await self._reload_quietly(keys)
            key = _find(keys, kid)
        if key is None:
            raise TokenRejected("token signed by an unknown key")
        return key

    async def _reload_quietly(self, previous: jwt.PyJWKSet | None) -> jwt.PyJWKSet | None:
        try:
            return await self.load()
        except JwksUnavailable as exc:
            log.warning("JWKS refresh failed, keeping the previous keys: %s", exc)
            self._loaded_at = time.monotonic()  # do not hammer a failing endpoint
            return previous


def _find(keys: jwt.PyJWKSet | None, kid: str | None) -> jwt.PyJWK | None:
    if keys is None:
        return None
    if kid is None:
        return keys.keys[0] if len(keys.keys) == 1 else None
    for key in keys.keys:
        if key.key_id == kid:
            return key
    return None


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    """`record_roles` and `ceiling` are what the config records for the client id (or the
    default); `token_roles` come from the token's `roles_claim`."""

    sub: str
    client_id: str | None
    record_roles: tuple[str, ...]
    token_roles: tuple[str, ...]
    scopes: tuple[str, ...]
    ceiling: ConsentCeiling
    issuer: str

    @property
    def roles(self) -> tuple[str, ...]:
        return merge_roles(self.record_roles, self.token_roles)


def merge_roles(recorded: tuple[str, ...], from_token: tuple[str, ...]) -> tuple[str, ...]:
    """The recorded roles, then the token's that are not among them."""
    return recorded + tuple(r for r in from_token if r not in recorded)


class JwtVerifier:
    """Checks signature, algorithm, expiry, issuer, audience (this gateway) and scopes."""

    def __init__(self, settings: OAuthSettings, source: JwksSource | None = None) -> None:
        self.settings = settings
        self.source = source or JwksSource(settings)

    async def verify(self, token: str) -> VerifiedToken:
        s = self.settings
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRejected("malformed token") from None
        alg = header.get("alg")
        if alg not in s.algorithms:
            raise TokenRejected(f"token algorithm {alg!r} is not accepted")
        key = await self.source.key_for(header.get("kid"))
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=list(s.algorithms),
                audience=s.resource,
                issuer=s.issuer,
                leeway=s.leeway_s,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRejected("token expired") from None
        except jwt.InvalidAudienceError:
            raise TokenRejected("token was not issued for this resource (audience)") from None
        except jwt.InvalidIssuerError:
            raise TokenRejected("token issuer is not trusted") from None
        except jwt.PyJWTError as exc:
            raise TokenRejected(f"invalid token: {type(exc).__name__}") from None
        scopes = _scopes(claims)
        missing = [scope for scope in s.required_scopes if scope not in scopes]
        if missing:
            raise TokenRejected(
                "token lacks required scope", status=403, error="insufficient_scope"
            )
        client_id = claims.get(s.client_id_claim) or claims.get("azp")
        client_id = client_id if isinstance(client_id, str) else None
        record = s.clients.get(client_id) if client_id else None
        token_roles = _str_list(claims.get(s.roles_claim)) if s.roles_claim else []
        ceiling = record.consent_ceiling if record else s.default_consent_ceiling
        return VerifiedToken(
            sub=str(claims["sub"]),
            client_id=client_id,
            record_roles=tuple(record.roles) if record else (),
            token_roles=tuple(dict.fromkeys(token_roles)),
            scopes=scopes,
            ceiling=ceiling,
            issuer=str(claims["iss"]),
        )


def _scopes(claims: Mapping[str, Any]) -> tuple[str, ...]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return tuple(scope.split())
    return tuple(_str_list(claims.get("scp")))


def _str_list(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []
