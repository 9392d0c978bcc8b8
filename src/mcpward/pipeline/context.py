"""The context every guard sees: which upstream, who is asking, and read-only gateway views."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcpward.pipeline.services import LiveContracts
from mcpward.protocol.eras import Era


@dataclass(frozen=True, slots=True)
class Identity:
    """Who is calling: from the transport's authentication, or from config over stdio."""

    sub: str
    client_id: str | None = None
    email: str | None = None
    groups: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class GuardContext:
    """Per-message context. `catalog` maps upstream id -> its last listed tool definitions
    (gateway-wide); `contracts` is what the connection this request goes to serves (judged
    requests only)."""

    server_name: str
    method: str
    era: Era = Era.HANDSHAKE
    identity: Identity | None = None
    session_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    catalog: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    upstream_order: Sequence[str] = ()
    contracts: LiveContracts | None = None
