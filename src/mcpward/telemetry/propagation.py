"""The W3C `traceparent` of the upstream round trip under way in this task (None: no tracing).

Set by the relay around a traced upstream request; read by the HTTP upstream connector, whose
POST task inherits the context. It identifies a span; it is not a credential.
"""

from __future__ import annotations

from contextvars import ContextVar

TRACEPARENT: ContextVar[str | None] = ContextVar("mcpward_traceparent", default=None)
