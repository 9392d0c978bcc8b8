"""server_allowlist: only allowed upstream ids run, each only with the identity pinned for it
(command + args digest or URL origin), and ids one edit or confusable away are typosquats.

Every check reads the configuration and the pin store only, so the gateway asks `refuses_upstream`
once the guard is attached and never starts a refused upstream (relay/refused.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mcpward.guards.detection.names import within_one_edit
from mcpward.guards.detection.unicode import skeleton
from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.decisions import Allow, Decision, Deny
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.services import GatewayServices
from mcpward.pipeline.spec import GuardSpec
from mcpward.pipeline.subject import Subject
from mcpward.store.sqlite import open_database, transaction

PIN_DB = "upstream_pins.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS upstream_identity_pins (
    upstream TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    pinned_at REAL NOT NULL
)
"""


class ServerAllowlistOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allowed: list[str] | None = Field(
        default=None,
        description="Upstream ids that may run; omitted = every id in the configuration.",
    )
    pin_identities: bool = Field(
        default=True,
        description="Pin each id's identity on first sight (state dir); refuse it if it changes.",
    )
    pins: dict[str, str] = Field(
        default_factory=dict,
        description="Identities to require per id (override and replace the stored pins).",
    )
    typosquat: bool = Field(
        default=True, description="Name near-misses of allowed ids as typosquats."
    )


def typosquat_of(candidate: str, allowed: list[str]) -> str | None:
    """The allowed id that `candidate` imitates (one edit, or the same confusable skeleton)."""
    if candidate in allowed:
        return None
    cand = skeleton(candidate)
    for name in allowed:
        if within_one_edit(candidate.casefold(), name.casefold()) or cand == skeleton(name):
            return name
    return None


class ServerAllowlistGuard(Guard):
    """Decides per upstream once at attach; the request hook only looks the verdict up."""

    kind = "server_allowlist"
    awaits_io = False
    Options = ServerAllowlistOptions

    def __init__(self, spec: GuardSpec, options: ServerAllowlistOptions) -> None:
        super().__init__(spec, options)
        self._identities: dict[str, str] | None = None
        self._changed: dict[str, tuple[str, str]] = {}  # id -> (pinned, current)

    async def attach(self, services: GatewayServices) -> None:
        self._identities = dict(services.upstream_identities)
        if not self.options.pin_identities:
            return
        conn = open_database(services.state_dir / PIN_DB)
        try:
            with transaction(conn):
                conn.execute(_SCHEMA)
                for upstream, identity in self._identities.items():
                    required = self.options.pins.get(upstream)
                    row = conn.execute(
                        "SELECT identity FROM upstream_identity_pins WHERE upstream = ?",
                        (upstream,),
                    ).fetchone()
                    pinned = required or (row[0] if row else None)
                    if pinned is None or (required and (row is None or row[0] != required)):
                        conn.execute(
                            "INSERT OR REPLACE INTO upstream_identity_pins VALUES (?, ?, ?)",
                            (upstream, pinned or identity, time.time()),
                        )
                    if pinned is not None and pinned != identity:
                        self._changed[upstream] = (pinned, identity)
        finally:
            conn.close()

    def _allowed(self, upstream_ids: Sequence[str]) -> list[str]:
        if self.options.allowed is not None:
            return list(self.options.allowed)
        return list(upstream_ids)

    def verdict(self, upstream: str, ctx: GuardContext) -> Deny | None:
        return self.refuses_upstream(upstream, ctx.upstream_order)

    def refuses_upstream(self, upstream: str, upstream_ids: Sequence[str]) -> Deny | None:
        """The denial for an upstream that may not run (None: it may). Needs only the config
        and the pins read at `attach`, so the gateway asks before it starts anything."""
        allowed = self._allowed(upstream_ids)
        if upstream not in allowed:
            imitated = typosquat_of(upstream, allowed) if self.options.typosquat else None
            if imitated is not None:
                return Deny(
                    code="upstream_typosquat",
                    message=f"upstream {upstream!r} is not allowed; it imitates {imitated!r}",
                    details={"upstream": upstream, "imitates": imitated},
                    evidence={"upstream": upstream, "check": "typosquat", "imitates": imitated},
                )
            return Deny(
                code="upstream_not_allowed",
                message=f"upstream {upstream!r} is not on the allow-list",
                details={"upstream": upstream},
                evidence={"upstream": upstream, "check": "allow-list"},
            )
        if not self.options.pin_identities:
            return None
        if self._identities is None or upstream not in self._identities:
            return Deny(
                code="upstream_identity_unknown",
                message=f"the identity of upstream {upstream!r} is unknown; refusing (fail closed)",
                details={"upstream": upstream},
                evidence={"upstream": upstream, "check": "identity"},
            )
        changed = self._changed.get(upstream)
        if changed is not None:
            pinned, current = changed
            details: dict[str, Any] = {
                "upstream": upstream,
                "pinned": pinned[:16],
                "current": current[:16],
                "fix": "if the change is intended, set the new identity in this guard's `pins`",
            }
            return Deny(
                code="upstream_identity_changed",
                message=f"upstream {upstream!r} is not the program or URL pinned for it",
                details=details,
                evidence={
                    "upstream": upstream,
                    "check": "identity",
                    "pinned": pinned[:16],
                    "current": current[:16],
                },
            )
        return None

    async def on_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        denial = self.verdict(ctx.server_name, ctx)
        if denial is not None:
            return denial
        return Allow()
