"""The MCP clients `mcpward wire` knows: where each keeps its servers and in which JSON dialect.

Default paths follow each client's documentation, per platform (macOS, Linux, Windows).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

# A container path names the objects holding server entries; "*" matches every key at that level.
ContainerPath = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClientFormat:
    name: str
    title: str
    containers: tuple[ContainerPath, ...]
    jsonc: bool  # comments and trailing commas allowed (the client itself reads JSONC)
    note: str  # other places the client reads, reachable with --config-file


def _home() -> Path:
    return Path.home()


def _appdata() -> Path:
    return Path(os.environ.get("APPDATA") or _home() / "AppData" / "Roaming")


def _xdg_config() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or _home() / ".config")


def _macos_support() -> Path:
    return _home() / "Library" / "Application Support"


CLIENTS: dict[str, ClientFormat] = {
    client.name: client
    for client in (
        ClientFormat(
            "claude-desktop",
            "Claude Desktop",
            (("mcpServers",),),
            jsonc=False,
            note="Claude Desktop keeps all its MCP servers in this one file.",
        ),
        ClientFormat(
            "claude-code",
            "Claude Code",
            (("mcpServers",), ("projects", "*", "mcpServers")),
            jsonc=False,
            note="User and local scopes live in ~/.claude.json; a project's .mcp.json is "
            "wired with --config-file PROJECT/.mcp.json. Quit Claude Code first: it rewrites "
            "~/.claude.json from memory.",
        ),
        ClientFormat(
            "cursor",
            "Cursor",
            (("mcpServers",),),
            jsonc=False,
            note="A project's servers are in PROJECT/.cursor/mcp.json (use --config-file).",
        ),
        ClientFormat(
            "vscode",
            "Visual Studio Code",
            (("servers",),),
            jsonc=True,
            note="A workspace's servers are in WORKSPACE/.vscode/mcp.json (use --config-file).",
        ),
        ClientFormat(
            "windsurf",
            "Windsurf",
            (("mcpServers",),),
            jsonc=False,
            note="Windsurf keeps all its MCP servers in this one file.",
        ),
    )
}


def default_config_path(client: str, platform: str | None = None) -> Path:
    """Where the client keeps its user-level MCP servers on this (or the given) platform."""
    platform = platform or sys.platform
    macos, windows = platform == "darwin", platform.startswith("win")
    if client == "claude-desktop":
        if macos:
            return _macos_support() / "Claude" / "claude_desktop_config.json"
        if windows:
            return _appdata() / "Claude" / "claude_desktop_config.json"
        return _xdg_config() / "Claude" / "claude_desktop_config.json"
    if client == "claude-code":
        return _home() / ".claude.json"
    if client == "cursor":
        return _home() / ".cursor" / "mcp.json"
    if client == "vscode":
        if macos:
            return _macos_support() / "Code" / "User" / "mcp.json"
        if windows:
            return _appdata() / "Code" / "User" / "mcp.json"
        return _xdg_config() / "Code" / "User" / "mcp.json"
    if client == "windsurf":
        return _home() / ".codeium" / "windsurf" / "mcp_config.json"
    raise KeyError(client)
