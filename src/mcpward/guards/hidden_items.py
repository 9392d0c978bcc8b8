"""What the guards that hide listed items share when they judge a call to one of them."""

from __future__ import annotations

from mcpward.pipeline.decisions import Deny


def lists_unreadable(what: str, upstream: str) -> Deny:
    """The call's connection's lists could not be read, so whether the item is hidden cannot be
    told: fail closed."""
    return Deny(
        code="definition_unverifiable",
        message=f"the {what}s of upstream {upstream!r} could not be read; failing closed",
    )
