"""A gateway replica's hold on the fleet's database: it starts whether or not the server answers.

A server that is away at start is an outage, not a configuration error: the replica serves
/healthz, reports /readyz not ready, and every call fails closed until the server answers (the
pool probes it with bounded backoff). A schema behind or ahead of the code is refused at start
when the server answers then, and reported as `migrations` when it only answers later.
"""

from __future__ import annotations

import logging

from mcpward.store.factory import StoreContext, migrate_hint, store_problem
from mcpward.store.postgres.errors import PostgresUnavailable

log = logging.getLogger("mcpward.store")


class ReplicaStore:
    """Keeps the process's pool open for the gateway's life and answers its readiness.

    Raises PostgresUnavailable when the DSN cannot be read (a configuration error)."""

    def __init__(self, context: StoreContext) -> None:
        from mcpward.store.postgres.migrations import defer_check
        from mcpward.store.postgres.pool import acquire_pool

        self.context = context
        self.pool = acquire_pool(context.settings)
        try:
            self.pool.connect_direct().close()
        except PostgresUnavailable as exc:
            defer_check(self.pool, migrate_hint(context))
            self.pool.mark_down(str(exc))
            log.warning(
                "starting while the database is away: /readyz says not ready and calls fail "
                "closed until it answers; the schema is checked then"
            )

    @property
    def away(self) -> bool:
        """The server has not answered since it was last found gone (or since start)."""
        return self.pool.down is not None

    def not_ready(self) -> str | None:
        """For /readyz: None, `store` or `migrations` (the reason goes to the debug log)."""
        if self.pool.down is not None:
            return "store"
        problem = store_problem(self.context)
        if self.pool.schema_problem is not None:
            return "migrations"
        if problem is None:
            return None
        log.debug("not ready: %s", problem[1])
        return problem[0]

    def close(self) -> None:
        from mcpward.store.postgres.pool import release_pool

        release_pool(self.pool)
