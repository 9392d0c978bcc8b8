"""Built-in guard kinds, one module each. Importing this package registers them all."""

from mcpward.guards import tool_filter

__all__ = ["tool_filter"]
