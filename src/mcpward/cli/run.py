"""`mcpward run`: the gateway, from a config file or wrapping one stdio server (the quick form)."""

from __future__ import annotations

import getpass
import os
import re
import sys
from pathlib import Path
from typing import Any

import typer
import uvloop

from mcpward.cli.logs import configure_logging
from mcpward.config import ConfigError, load_config, parse_config
from mcpward.config.loader import LoadedConfig
from mcpward.pipeline.context import Identity
from mcpward.relay.gateway import Gateway, GatewayStartError
from mcpward.transport.stdio_front import serve_stdio


def quick_config(
    command: list[str], upstream_id: str | None, pass_env: list[str], env: list[str], shadow: bool
) -> dict[str, Any]:
    """The config of the quick form: one stdio upstream, the default guards."""
    name = upstream_id or re.sub(r"[^A-Za-z0-9_-]+", "-", Path(command[0]).name).strip("-_") or "upstream"
    literal: dict[str, str] = {}
    for item in env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"--env takes NAME=VALUE, got {item!r}")
        literal[key] = value
    data: dict[str, Any] = {
        "upstreams": [
            {"id": name[:63], "kind": "stdio", "command": command[0], "args": command[1:],
             "pass_env": pass_env, "env": literal}
        ]
    }
    if shadow:
        data["gateway"] = {"mode": "shadow"}
    return data


def local_identity() -> Identity:
    """Over stdio the caller is the local user who started the gateway."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return Identity(sub=user, client_id="stdio")


async def run_gateway(loaded: LoadedConfig) -> None:
    gateway = await Gateway.start(loaded)
    try:
        await serve_stdio(gateway, local_identity())
    finally:
        await gateway.close()


def register(app: typer.Typer) -> None:
    @app.command(
        "run",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def run(
        command: list[str] = typer.Argument(None, help="After `--`: the stdio server to wrap."),
        config: Path | None = typer.Option(None, "--config", "-c", help="Gateway config (YAML)."),
        upstream_id: str | None = typer.Option(None, "--id", help="Quick form: the upstream's id."),
        pass_env: list[str] = typer.Option(
            [], "--pass-env", help="Quick form: pass this environment variable to the server."
        ),
        env: list[str] = typer.Option([], "--env", help="Quick form: set NAME=VALUE for the server."),
        shadow: bool = typer.Option(False, "--shadow", help="Record what would be denied; block nothing."),
        log_level: str = typer.Option("info", "--log-level", help="debug, info, warning, error."),
        log_file: Path | None = typer.Option(None, "--log-file", help="Log here instead of stderr."),
    ) -> None:
        """Run the gateway on stdio: `mcpward run --config FILE` or `mcpward run -- COMMAND ARGS…`."""
        if (config is None) == (not command):
            typer.echo(
                "mcpward run: give either --config FILE or `-- COMMAND [ARGS…]` (not both)", err=True
            )
            raise typer.Exit(2)
        try:
            if config is not None:
                loaded = load_config(config)
            else:
                data = quick_config(list(command), upstream_id, pass_env, env, shadow)
                loaded = parse_config(data, "mcpward run -- " + " ".join(command))
        except ConfigError as exc:
            typer.echo(str(exc), err=True)
            raise typer.Exit(2) from None
        settings = loaded.config.logging
        configure_logging(
            log_level if log_level != "info" else settings.level, log_file or settings.file
        )
        try:
            # uvloop roughly halves the per-frame cost of the event loop on the hot path.
            uvloop.run(run_gateway(loaded))
        except GatewayStartError as exc:
            typer.echo(f"mcpward run: {exc}", err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            pass
        sys.exit(0)
