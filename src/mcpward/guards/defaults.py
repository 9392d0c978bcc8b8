"""The guard pipeline used when the config names none (and by the quick `mcpward run -- CMD`)."""

from __future__ import annotations

from mcpward.pipeline.spec import GuardSpec


def default_guard_specs() -> list[GuardSpec]:
    """Built-in defaults, lowest priority first. Each later guard kind adds its default here."""
    return []
