"""Wiring MCP clients through mcpward: client config formats, default paths, in-place rewrite,
backups and markers (`mcpward wire` / `mcpward unwire`), and the installation checks of `doctor`.
"""
