"""JSON-RPC frames, the two MCP protocol eras, error codes and synthesised results.

Imports nothing else of mcpward.
"""
