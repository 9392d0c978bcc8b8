"""The bundled demo MCP server and the `mcpward demo` walkthrough."""
