"""The server entries of a client's config: found under the client's containers and classified.

Anything not in a documented shape raises `ConfigShapeError`; the file is then left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from mcpward.wiring.clients import ClientFormat, ContainerPath
from mcpward.wiring.jsonc import Node, position
from mcpward.wiring.launcher import is_wired

REMOTE_TYPES = {"http", "sse", "streamable-http", "streamablehttp", "ws", "websocket"}
URL_KEYS = ("url", "serverUrl")


class ConfigShapeError(ValueError):
    """The document parses but is not in the shape the client documents."""


class EntryKind(str, Enum):
    STDIO = "stdio"  # to be wired
    WIRED = "wired"  # already runs `mcpward run`
    REMOTE = "remote"  # a URL; left alone
    ENV_FILE = "env_file"  # stdio with an envFile: variable names unknown at wire time


def entry_label(where: tuple[str, ...], name: str) -> str:
    """A server's name, with its scope when it is not at the top (Claude Code's projects)."""
    scope = where[:-1]
    return f"{name} (in {' > '.join(scope)})" if scope else name


@dataclass(frozen=True, slots=True)
class ServerEntry:
    """One server: where it is (container keys + name), its node, and what it is."""

    where: tuple[str, ...]  # the container's concrete keys, e.g. ("projects", "/src/app", ...)
    name: str
    node: Node
    kind: EntryKind
    url: str | None = None

    @property
    def label(self) -> str:
        return entry_label(self.where, self.name)

    @property
    def command(self) -> str:
        return str(self.node.value["command"])

    @property
    def args(self) -> list[str]:
        return list(self.node.value.get("args") or [])

    @property
    def env_names(self) -> list[str]:
        return list((self.node.value.get("env") or {}).keys())


def _containers(root: Node, path: ContainerPath) -> list[tuple[tuple[str, ...], Node]]:
    found: list[tuple[tuple[str, ...], Node]] = [((), root)]
    for key in path:
        nxt: list[tuple[tuple[str, ...], Node]] = []
        for where, node in found:
            if node.kind != "object":
                continue
            if key == "*":
                nxt.extend(((*where, m.key), m.value) for m in node.members)
            else:
                child = node.get(key)
                if child is not None:
                    nxt.append(((*where, key), child))
        found = nxt
    return found


def _classify(text: str, where: tuple[str, ...], name: str, node: Node) -> ServerEntry:
    at = f"server {name!r} ({position(text, node.start)})"
    if node.kind != "object":
        raise ConfigShapeError(f"{at} is not an object")
    value = node.value
    kind = value.get("type")
    if kind is not None and not isinstance(kind, str):
        raise ConfigShapeError(f"{at}: 'type' is not a string")
    urls = [key for key in URL_KEYS if key in value]
    if "command" in value and (urls or (kind or "stdio").lower() != "stdio"):
        raise ConfigShapeError(f"{at} has both a command and a URL or a remote type")
    if "command" not in value:
        if not urls and (kind or "").lower() not in REMOTE_TYPES:
            raise ConfigShapeError(f"{at} has neither a 'command' nor a 'url'")
        url = value.get(urls[0]) if urls else None
        if url is not None and not isinstance(url, str):
            raise ConfigShapeError(f"{at}: '{urls[0]}' is not a string")
        return ServerEntry(where, name, node, EntryKind.REMOTE, url)
    if not isinstance(value["command"], str) or not value["command"]:
        raise ConfigShapeError(f"{at}: 'command' is not a non-empty string")
    args = value.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigShapeError(f"{at}: 'args' is not a list of strings")
    env = value.get("env", {})
    if env is None:
        env = {}
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ConfigShapeError(f"{at}: 'env' is not an object of strings")
    if is_wired(value["command"], args):
        return ServerEntry(where, name, node, EntryKind.WIRED)
    if "envFile" in value:
        return ServerEntry(where, name, node, EntryKind.ENV_FILE)
    return ServerEntry(where, name, node, EntryKind.STDIO)


def server_entries(text: str, root: Node, client: ClientFormat) -> list[ServerEntry]:
    """Every server entry in document order; raises ConfigShapeError on an unknown shape."""
    if root.kind != "object":
        raise ConfigShapeError("the top level is not a JSON object")
    entries: list[ServerEntry] = []
    for path in client.containers:
        for where, container in _containers(root, path):
            if container.kind == "literal" and container.value is None:
                continue  # "mcpServers": null, as some tools write for "none"
            if container.kind != "object":
                raise ConfigShapeError(
                    f"'{'/'.join(where)}' ({position(text, container.start)}) is not an object"
                )
            for member in container.members:
                entries.append(_classify(text, where, member.key, member.value))
    return sorted(entries, key=lambda e: e.node.start)
