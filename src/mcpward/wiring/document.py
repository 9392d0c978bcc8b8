"""A client's config file as read: its exact bytes, its text, the parse tree and the server entries.

An unreadable, oversized, non-UTF-8, unparseable or unknown-shaped file raises `ConfigRefused`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mcpward.wiring.clients import ClientFormat
from mcpward.wiring.entries import ConfigShapeError, ServerEntry, server_entries
from mcpward.wiring.jsonc import JsoncError, Node, parse

# ~/.claude.json also holds Claude Code's history; a few MB is normal, 64 MiB is not.
MAX_CONFIG_BYTES = 64 * 1024 * 1024


class ConfigRefused(Exception):
    """The file cannot be wired safely; the message names the path and the reason."""


@dataclass(frozen=True, slots=True)
class ConfigDocument:
    path: Path
    raw: bytes
    text: str
    root: Node
    entries: list[ServerEntry]

    def find(self, where: tuple[str, ...], name: str) -> Node | None:
        node: Node | None = self.root
        for key in (*where, name):
            if node is None or node.kind != "object":
                return None
            node = node.get(key)
        return node


def parse_document(path: Path, raw: bytes, client: ClientFormat) -> ConfigDocument:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigRefused(f"{path}: not UTF-8 text (byte {exc.start})") from None
    dialect = "JSONC" if client.jsonc else "JSON"
    try:
        root = parse(text, jsonc=client.jsonc)
    except JsoncError as exc:
        raise ConfigRefused(f"{path}: not valid {dialect}: {exc}; left unchanged") from None
    try:
        entries = server_entries(text, root, client)
    except ConfigShapeError as exc:
        raise ConfigRefused(
            f"{path}: not a {client.title} MCP config: {exc}; left unchanged"
        ) from None
    return ConfigDocument(path, raw, text, root, entries)


def read_document(path: Path, client: ClientFormat) -> ConfigDocument:
    """Read and parse the file; ConfigRefused with path and reason if it cannot be wired."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigRefused(f"{path}: no such file") from None
    except OSError as exc:
        raise ConfigRefused(f"{path}: cannot be read ({exc.strerror})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigRefused(f"{path}: larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB")
    return parse_document(path, raw, client)
