"""Built-in guard kinds, one module each; `mcpward.guards.kinds` lists them by name."""
