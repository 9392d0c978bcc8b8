"""`python -m mcpward`: the same CLI as the `mcpward` command (used when it is not on PATH)."""

from mcpward.cli.main import main

main()
