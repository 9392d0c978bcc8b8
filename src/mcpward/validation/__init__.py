"""Tier 3 of the drift gate: observe a held tool's behaviour in a no-egress sandbox (on demand,
in its own process: nothing here is imported by `mcpward run`)."""
