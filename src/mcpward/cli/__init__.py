"""The `mcpward` command line (typer): thin wiring, rich output. Nothing imports this package."""
