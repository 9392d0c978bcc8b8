"""What a wrapped session's gateway is built from: the config (a path, a mapping or a
`LoadedConfig`) narrowed to the one upstream the session stands in for, and that upstream's
identity (what it is, for the identity pin and for the provenance of every verdict).
"""

from __future__ import annotations

import dataclasses
import getpass
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters

from mcpward.config.loader import LoadedConfig, load_config, parse_config
from mcpward.config.models import GatewaySettings
from mcpward.config.upstreams import HttpUpstream, RestartPolicy, StdioUpstream
from mcpward.pipeline.context import Identity
from mcpward.protocol.canonical import canonical_sha256
from mcpward.upstreams.connectors import make_connection

ConfigSource = LoadedConfig | Mapping[str, Any] | Path | str | None
ServerSource = StdioServerParameters | str | None

# The command of the config entry added for an upstream the config does not name; never run.
STAND_IN_COMMAND = "mcpward-in-process"


@dataclass(frozen=True, slots=True)
class ServerIdentity:
    digest: str
    executable_sha256: str | None


def gateway_config(config: ConfigSource, upstream_id: str) -> LoadedConfig:
    """The gateway config with exactly one upstream, `upstream_id`: its own entry if the config
    has one (its settings apply; its command or URL is never used), else a stand-in entry. The
    SDK session cannot be restarted, so the entry's restart policy is switched off; and names
    stay the server's own (no `<id>__` prefix), as the application knows them from its session.
    Guards, state dir, evidence and gateway settings are the config's."""
    if isinstance(config, (Path, str)):
        loaded = load_config(config)
    elif isinstance(config, LoadedConfig):
        loaded = config
    else:
        data = dict(config or {})
        if not data.get("upstreams"):
            data["upstreams"] = [{"id": upstream_id, "command": STAND_IN_COMMAND}]
        loaded = parse_config(data, source=f"<guarded {upstream_id}>")
    spec = next((u for u in loaded.config.upstreams if u.id == upstream_id), None)
    if spec is None:
        # Validated like any entry (the id must be a valid upstream id).
        stand_in = parse_config(
            {"upstreams": [{"id": upstream_id, "command": STAND_IN_COMMAND}]},
            source=f"<guarded {upstream_id}>",
        )
        spec = stand_in.config.upstreams[0]
    spec = spec.model_copy(update={"restart": RestartPolicy(enabled=False)})
    settings = loaded.config.gateway.model_copy(update={"namespacing": "never"})
    narrowed = loaded.config.model_copy(update={"upstreams": [spec], "gateway": settings})
    return dataclasses.replace(loaded, config=narrowed)


def server_identity(
    server: ServerSource, server_name: str | None, settings: GatewaySettings, upstream_id: str
) -> ServerIdentity:
    """What the wrapped server is. With `server` (the `StdioServerParameters` the application
    started it with, or its URL) the digest is the one `mcpward run` computes for the same
    command or URL, with the executable's hash; without, the digest of the name the server
    gave in its handshake (self-reported: weaker, and said so in the docs)."""
    if isinstance(server, StdioServerParameters):
        spec: StdioUpstream | HttpUpstream = StdioUpstream(
            id=upstream_id, command=server.command, args=list(server.args)
        )
    elif isinstance(server, str):
        spec = HttpUpstream(id=upstream_id, url=server)
    else:
        return ServerIdentity(canonical_sha256({"kind": "in-process", "server": server_name}), None)
    probe = make_connection(spec, settings)  # never started: it only names the server
    executable = getattr(probe, "executable_sha256", None)
    return ServerIdentity(
        probe.identity_digest, executable if isinstance(executable, str) else None
    )


def server_name(session: ClientSession) -> str | None:
    """The name the server gave in its handshake (or its 2026-07-28 serverInfo stamp)."""
    info = session.server_info
    return info.name if info is not None else None


def local_identity() -> Identity:
    """In-process the caller is the local user running the application (as over stdio)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return Identity(sub=user, client_id="library")
