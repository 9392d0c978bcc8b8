"""Consent ceilings on an authenticated identity: where the ceiling recorded for a client is kept,
and how a session may narrow, never widen, that record (the ceilings themselves: ceilings.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mcpward.identity.ceilings import ConsentCeiling, parse_ceiling
from mcpward.pipeline.context import Identity

# Identity.claims key under which the authenticator records the client's ceiling. The key is set by
# mcpward itself after authentication; a JWT claim of the same name is never copied through.
CEILING_CLAIM = "mcpward.consent_ceiling"

# Where a client asks for a narrower ceiling for its session: `initialize` params, or the _meta of
# any request (2026-07-28). It can only lower the ceiling recorded for its credential.
CEILING_META_KEY = "dev.mcpward/consentCeiling"
CEILING_PARAM = "consentCeiling"


def ceiling_of(identity: Identity | None) -> ConsentCeiling | None:
    """The ceiling recorded for an authenticated identity, or None when none was recorded."""
    if identity is None:
        return None
    return parse_ceiling(identity.claims.get(CEILING_CLAIM))


def requested_ceiling(params: Any) -> tuple[bool, ConsentCeiling | None]:
    """(valid, ceiling) a client asks for in request params; (True, None) when it asks for none."""
    if not isinstance(params, dict):
        return True, None
    meta = params.get("_meta")
    raw = meta.get(CEILING_META_KEY) if isinstance(meta, dict) else None
    if raw is None:
        raw = params.get(CEILING_PARAM)
    if raw is None:
        return True, None
    ceiling = parse_ceiling(raw)
    return ceiling is not None, ceiling


def session_identity(
    identity: Identity, recorded: ConsentCeiling, requested: ConsentCeiling | None
) -> Identity:
    """The identity a session runs as: the recorded ceiling, narrowed (never widened)."""
    ceiling = recorded.narrowed_to(requested)
    if ceiling is recorded and ceiling_of(identity) is recorded:
        return identity
    claims = {**identity.claims, CEILING_CLAIM: ceiling.value}
    return dataclasses.replace(identity, claims=claims)
