"""Turns an HTTP `Authorization` header into a Principal (identity + recorded consent ceiling),
or an AuthFailure that says what `WWW-Authenticate` challenge to answer with.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mcpward.identity.client_records import (
    ClientRecordRefused,
    ClientRecordSet,
    ClientRecordsUnavailable,
    StoredRecord,
)
from mcpward.identity.consent import CEILING_CLAIM, ConsentCeiling
from mcpward.identity.models import OAuthSettings, StaticToken
from mcpward.identity.oauth import JwtVerifier, TokenRejected, merge_roles
from mcpward.identity.revocations import RevocationSet, RevocationUnavailable
from mcpward.identity.tokens import StaticTokenTable, TokenEntry, hash_token
from mcpward.pipeline.context import Identity

# RFC 6750 b64token
_BEARER = re.compile(r"^[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9\-._~+/]+=*) *$")
AUTH_CLAIM = "mcpward.auth"
log = logging.getLogger("mcpward.identity")


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated client. `binding` is what a session is bound to (never the token): the
    credential and the roles and ceiling it had, so a changed client record ends the sessions
    opened under the old one (the client starts a new session, under the new record)."""

    identity: Identity
    ceiling: ConsentCeiling
    binding: str


class AuthFailure(Exception):
    """Why a request is refused: 401 (no or bad credential) or 403 (insufficient scope)."""

    def __init__(
        self, status: int, description: str, error: str | None = None, scope: str | None = None
    ) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.error = error
        self.scope = scope

    def challenge(self, resource_metadata_url: str | None) -> str:
        """The `WWW-Authenticate` header value (RFC 6750 section 3, RFC 9728 section 5.1)."""
        params = ['realm="mcpward"']
        if self.error:
            params.append(f'error="{self.error}"')
            params.append(f'error_description="{self.description}"')
        if self.scope:
            params.append(f'scope="{self.scope}"')
        if resource_metadata_url:
            params.append(f'resource_metadata="{resource_metadata_url}"')
        return "Bearer " + ", ".join(params)


class AuthUnavailable(AuthFailure):
    """The credential cannot be checked right now (the store behind revocations or client
    records is away): 503 with `Retry-After`, never a 401 that tells the client to log in again."""

    def __init__(self, description: str) -> None:
        super().__init__(503, description)


class NoCredentialConfigured(ValueError):
    """The HTTP front would be open to anyone: refuse to start."""


class Authenticator:
    """Static tokens are tried first (constant-time), then JWT verification if OAuth is on.
    `records` (the store's client records) replace a client's configured roles or ceiling.

    Revocations and client records are asked on every request; what follows from a static
    token's entry and its stored record (the Principal) is built once per pair and reused."""

    def __init__(
        self,
        tokens: Sequence[StaticToken],
        oauth: OAuthSettings | None = None,
        revocations: RevocationSet | None = None,
        records: ClientRecordSet | None = None,
    ) -> None:
        if not tokens and oauth is None:
            raise NoCredentialConfigured(
                "the HTTP front needs at least one client credential: add front.tokens "
                "(see `mcpward token new`) or front.oauth, or pass --token-file"
            )
        self._table = StaticTokenTable(tokens)
        self._jwt = JwtVerifier(oauth) if oauth is not None else None
        self.oauth = oauth
        self._revocations = revocations
        self._records = records
        # per configured token: the stored record it was built with, and the Principal
        self._principals: dict[bytes, tuple[StoredRecord | None, Principal]] = {}

    def _refuse_revoked(self, client_id: str | None, token_sha256: str) -> None:
        """401 for a revoked client or token; 503 when revocations cannot be read (fail closed)."""
        if self._revocations is None:
            return
        try:
            revoked = self._revocations.revoked(client_id, token_sha256)
        except RevocationUnavailable:
            raise AuthUnavailable("token revocations cannot be checked right now") from None
        if revoked:
            raise AuthFailure(401, "token revoked", error="invalid_token")

    def _stored(self, client_id: str | None) -> StoredRecord | None:
        """The client's stored record, if any; 503 when the records cannot be read, 401 when
        its record fails its check (fail closed)."""
        if self._records is None or client_id is None:
            return None
        try:
            return self._records.record(client_id)
        except ClientRecordRefused as exc:
            log.warning("client %r refused: %s", client_id, exc)
            raise AuthFailure(401, "client record refused", error="invalid_token") from None
        except ClientRecordsUnavailable as exc:
            log.warning("client %r refused: %s", client_id, exc)
            raise AuthUnavailable("client records cannot be read right now") from None

    def _recorded(
        self, client_id: str | None, roles: Sequence[str], ceiling: ConsentCeiling
    ) -> tuple[tuple[str, ...], ConsentCeiling]:
        """The client's roles and ceiling after its stored record."""
        stored = self._stored(client_id)
        return (tuple(roles), ceiling) if stored is None else stored.apply(roles, ceiling)

    def _static_principal(self, found: TokenEntry) -> Principal:
        entry = found.entry
        stored = self._stored(entry.client_id)
        cached = self._principals.get(found.digest)
        if cached is not None and cached[0] == stored:
            return cached[1]
        roles, ceiling = (
            (tuple(entry.roles), entry.consent_ceiling)
            if stored is None
            else stored.apply(entry.roles, entry.consent_ceiling)
        )
        principal = Principal(
            identity=Identity(
                sub=entry.client_id,
                client_id=entry.client_id,
                roles=roles,
                claims={CEILING_CLAIM: ceiling.value, AUTH_CLAIM: "token"},
            ),
            ceiling=ceiling,
            binding=_binding(f"token:{entry.client_id}", roles, ceiling),
        )
        self._principals[found.digest] = (stored, principal)
        return principal

    async def start(self) -> None:
        """Load the JWKS now, so a gateway whose keys cannot be read does not start."""
        if self._jwt is not None:
            await self._jwt.source.load()

    async def authenticate(self, authorization: str | None) -> Principal:
        if not authorization:
            raise AuthFailure(401, "authentication required")
        match = _BEARER.match(authorization)
        if match is None:
            raise AuthFailure(401, "expected a Bearer token", error="invalid_request")
        token = match.group(1)
        found = self._table.lookup(token)
        if found is not None:
            self._refuse_revoked(found.entry.client_id, found.subject)
            return self._static_principal(found)
        if self._jwt is None:
            raise AuthFailure(401, "invalid token", error="invalid_token")
        try:
            verified = await self._jwt.verify(token)
        except TokenRejected as exc:
            scope = " ".join(self._jwt.settings.required_scopes) if exc.status == 403 else None
            raise AuthFailure(exc.status, str(exc), error=exc.error, scope=scope) from None
        self._refuse_revoked(verified.client_id, hash_token(token))
        recorded, ceiling = self._recorded(
            verified.client_id, verified.record_roles, verified.ceiling
        )
        roles = merge_roles(recorded, verified.token_roles)
        credential = f"oauth:{verified.issuer}|{verified.sub}|{verified.client_id or ''}"
        return Principal(
            identity=Identity(
                sub=verified.sub,
                client_id=verified.client_id,
                roles=roles,
                claims={
                    CEILING_CLAIM: ceiling.value,
                    AUTH_CLAIM: "oauth",
                    "iss": verified.issuer,
                },
            ),
            ceiling=ceiling,
            binding=_binding(credential, roles, ceiling),
        )


def _binding(credential: str, roles: tuple[str, ...], ceiling: ConsentCeiling) -> str:
    """Ceiling and roles first: neither can hold `#`, so the parts cannot run into each other."""
    return f"{ceiling.value}#{','.join(roles)}#{credential}"
