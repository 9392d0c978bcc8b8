"""Configuration of client credentials: static tokens (stored as hashes) and OAuth 2.1 resource
server settings. Used by the HTTP front's config model.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mcpward.identity.ceilings import ConsentCeiling

CLIENT_ID = r"^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}$"
ROLE = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"
TOKEN_HASH = r"^sha256:[0-9a-f]{64}$"

# Asymmetric algorithms only: a shared-secret (HS*) or unsigned ("none") token could be minted by
# anyone who knows or guesses the verification material.
ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StaticToken(Strict):
    """One client's bearer token, stored as its SHA-256 (`mcpward token new` prints both)."""

    client_id: str = Field(pattern=CLIENT_ID, description="Who presents this token.")
    token_sha256: str = Field(
        pattern=TOKEN_HASH, description='"sha256:" + hex SHA-256 of the token; never the token.'
    )
    roles: list[str] = Field(default_factory=list, description="Roles for the access guard.")
    consent_ceiling: ConsentCeiling = Field(
        description="read_only | no_destructive | full: the most this client may ever do."
    )

    @field_validator("roles")
    @classmethod
    def _roles(cls, value: list[str]) -> list[str]:
        return check_role_names(value)


class ClientRecord(Strict):
    """What is recorded for an OAuth client id: its roles and consent ceiling."""

    roles: list[str] = Field(default_factory=list)
    consent_ceiling: ConsentCeiling

    @field_validator("roles")
    @classmethod
    def _roles(cls, value: list[str]) -> list[str]:
        return check_role_names(value)


def check_role_names(value: list[str]) -> list[str]:
    for role in value:
        if not re.match(ROLE, role):
            raise ValueError(f"role {role!r} must match {ROLE}")
    return value


class OAuthSettings(Strict):
    """OAuth 2.1 resource-server mode: JWT access tokens issued for this gateway."""

    issuer: str = Field(pattern=r"^https?://", description="Expected `iss` of every token.")
    resource: str = Field(
        pattern=r"^https?://",
        description="This gateway's canonical MCP URL (RFC 8707 resource); tokens must name it "
        "in `aud`.",
    )
    jwks_file: Path | None = Field(default=None, description="JWKS JSON file with the AS keys.")
    jwks_url: str | None = Field(
        default=None,
        pattern=r"^https?://",
        description="JWKS URL, fetched through the egress filter.",
    )
    jwks_allow_private: list[str] = Field(
        default_factory=list,
        description="Private addresses/CIDRs the JWKS URL may resolve to (egress allow-list).",
    )
    jwks_refresh_s: float = Field(default=300.0, ge=10, le=86400)
    algorithms: list[str] = Field(default_factory=lambda: ["RS256", "ES256", "EdDSA"])
    authorization_servers: list[str] = Field(
        default_factory=list, description="For RFC 9728 metadata; default: [issuer]."
    )
    scopes_supported: list[str] = Field(default_factory=list)
    required_scopes: list[str] = Field(
        default_factory=list, description="Every token must carry these scopes (else 403)."
    )
    client_id_claim: str = Field(default="client_id", description="Falls back to `azp`.")
    roles_claim: str | None = Field(
        default=None, description="Claim holding a list of roles (e.g. `roles`); none by default."
    )
    clients: dict[str, ClientRecord] = Field(
        default_factory=dict, description="Recorded roles and consent ceiling per OAuth client id."
    )
    default_consent_ceiling: ConsentCeiling = Field(
        default=ConsentCeiling.READ_ONLY,
        description="Ceiling of a client id not listed in `clients`.",
    )
    leeway_s: int = Field(default=30, ge=0, le=300)

    @field_validator("algorithms")
    @classmethod
    def _asymmetric(cls, value: list[str]) -> list[str]:
        bad = [a for a in value if a not in ASYMMETRIC_ALGORITHMS]
        if bad or not value:
            allowed = ", ".join(sorted(ASYMMETRIC_ALGORITHMS))
            raise ValueError(f"algorithms must be non-empty and among {allowed}; got {bad}")
        return value

    @model_validator(mode="after")
    def _one_jwks(self) -> OAuthSettings:
        if (self.jwks_file is None) == (self.jwks_url is None):
            raise ValueError("give exactly one of jwks_file or jwks_url")
        return self
