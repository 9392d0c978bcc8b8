"""`mcpward run`: the gateway, from a config file or wrapping one stdio server (the quick form).

stdio unless told otherwise; `--http` serves Streamable HTTP and refuses to start without a token.
"""

from __future__ import annotations

import dataclasses
import getpass
import os
import re
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from mcpward.cli.logs import configure_logging
from mcpward.cli.options import (
    AllowNonLoopbackOpt,
    ConfigOpt,
    TokenFileOpt,
    UpstreamIdOpt,
    example,
)

if TYPE_CHECKING:
    from mcpward.config.loader import LoadedConfig
    from mcpward.pipeline.context import Identity
    from mcpward.upstreams.stdio import StdioUpstreamConnection


def quick_config(
    command: list[str], upstream_id: str | None, pass_env: list[str], env: list[str], shadow: bool
) -> dict[str, Any]:
    """The config of the quick form: one stdio upstream, the default guards."""
    name = (
        upstream_id
        or re.sub(r"[^A-Za-z0-9_-]+", "-", Path(command[0]).name).strip("-_")
        or "upstream"
    )
    literal: dict[str, str] = {}
    for item in env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"--env takes NAME=VALUE, got {item!r}")
        literal[key] = value
    data: dict[str, Any] = {
        "upstreams": [
            {
                "id": name[:63],
                "kind": "stdio",
                "command": command[0],
                "args": command[1:],
                "pass_env": pass_env,
                "env": literal,
            }
        ]
    }
    if shadow:
        data["gateway"] = {"mode": "shadow"}
    return data


def local_identity() -> Identity:
    """Over stdio the caller is the local user who started the gateway."""
    from mcpward.pipeline.context import Identity

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return Identity(sub=user, client_id="stdio")


async def run_gateway(
    loaded: LoadedConfig, started: dict[str, StdioUpstreamConnection] | None = None
) -> None:
    """Serve until the front ends. `started`: upstream processes already running (the quick
    form starts its server before the gateway loads); the first session takes them."""
    from mcpward.config.http_front import HttpFront
    from mcpward.relay.gateway import Gateway

    front = loaded.config.front
    gateway = await Gateway.start(
        loaded, prestart=not isinstance(front, HttpFront), started=started
    )
    try:
        if isinstance(front, HttpFront):
            from mcpward.fronts.http.server import serve_http

            await serve_http(gateway, front)
            return
        from mcpward.fronts.stdio import serve_stdio

        if loaded.config.telemetry.metrics_listen is None:
            await serve_stdio(gateway, local_identity())
            return
        from mcpward.fronts.metrics_listener import served_metrics

        async with served_metrics(loaded.config.telemetry, gateway.metrics):
            await serve_stdio(gateway, local_identity())
    finally:
        await gateway.close()


async def run_quick_stdio(data: dict[str, Any], source: str) -> None:
    """The quick stdio form: the server starts first, and boots while the configuration is
    validated, the guards load and the stores open (a desktop client waits for all of it).

    Only the upstream's own entry is validated before it starts; the quick form's guards are the
    defaults, which never refuse an upstream before it starts (`Gateway.start` checks again)."""
    from pydantic import ValidationError

    from mcpward.config.upstreams import DEFAULT_MAX_FRAME_BYTES, StdioUpstream
    from mcpward.upstreams.base import UpstreamUnavailable
    from mcpward.upstreams.stdio import StdioUpstreamConnection

    started: dict[str, StdioUpstreamConnection] = {}
    try:
        spec = StdioUpstream.model_validate(data["upstreams"][0])
    except ValidationError:
        pass  # the full validation below names the problem
    else:
        early = StdioUpstreamConnection(spec, DEFAULT_MAX_FRAME_BYTES)
        try:
            await early.start()
            started[spec.id] = early
        except UpstreamUnavailable:
            pass  # started again for the first session, which reports the failure
    from mcpward.config.loader import parse_config

    try:
        loaded = parse_config(data, source)
    except BaseException:
        for conn in started.values():
            await conn.close()
        raise
    await run_gateway(loaded, started)  # the gateway takes them over (or stops them)


def with_metrics(
    loaded: LoadedConfig, address: str, allow_non_loopback: bool, token_file: Path | None = None
) -> LoadedConfig:
    """The config with `--metrics ADDRESS` as telemetry.metrics_listen (stdio mode only), and
    `--metrics-token-file` as its bearer token."""
    from mcpward.config.http_front import HttpFront
    from mcpward.fronts.metrics_posture import MetricsListenerRefused
    from mcpward.telemetry.settings import TelemetrySettings

    if isinstance(loaded.config.front, HttpFront):
        raise MetricsListenerRefused(
            "--metrics is for stdio mode; the HTTP front serves /metrics itself to the admin "
            "token (front.admin_token)"
        )
    data = loaded.config.telemetry.model_dump()
    data.update(metrics_listen=address, metrics_allow_non_loopback=allow_non_loopback)
    if token_file is not None:
        data["metrics_token"] = {"file": token_file}
    try:
        telemetry = TelemetrySettings.model_validate(data)
    except ValueError:
        raise MetricsListenerRefused(
            f"--metrics takes HOST:PORT (e.g. 127.0.0.1:9464), got {address!r}"
        ) from None
    config = loaded.config.model_copy(update={"telemetry": telemetry})
    return dataclasses.replace(loaded, config=config)


def _serve(main: Coroutine[Any, Any, None]) -> NoReturn:
    """Run the gateway until its front ends; a refusal becomes one line and an exit status."""
    import uvloop

    try:
        # uvloop roughly halves the per-frame cost of the event loop on the hot path.
        uvloop.run(main)
    except KeyboardInterrupt:
        pass
    except Exception as exc:
        from mcpward.config.http_front import HttpFrontRefused
        from mcpward.config.loader import ConfigError
        from mcpward.fronts.metrics_posture import MetricsListenerRefused
        from mcpward.fronts.stdio import StdioFrontFailed
        from mcpward.relay.gateway import GatewayStartError

        if isinstance(exc, ConfigError):
            typer.echo(str(exc), err=True)
            raise typer.Exit(2) from None
        if isinstance(exc, GatewayStartError | HttpFrontRefused | MetricsListenerRefused):
            raise _fail(str(exc)) from None
        if isinstance(exc, StdioFrontFailed):
            # Logged where it happened; the exit status says it was not a clean end of input.
            typer.echo(f"mcpward run: stopped on an error: {exc}", err=True)
            raise typer.Exit(1) from None
        raise
    sys.exit(0)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"mcpward run: {message}", err=True)
    return typer.Exit(2)


def register(app: typer.Typer) -> None:
    @app.command(
        "run",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        epilog=example("mcpward run --id time -- uvx mcp-server-time"),
    )
    def run(
        command: list[str] = typer.Argument(None, help="After `--`: the stdio server to wrap."),
        config: ConfigOpt = None,
        upstream_id: UpstreamIdOpt = None,
        pass_env: list[str] = typer.Option(
            [], "--pass-env", help="Quick form: pass this environment variable to the server."
        ),
        env: list[str] = typer.Option(
            [], "--env", help="Quick form: set NAME=VALUE for the server."
        ),
        http: str | None = typer.Option(
            None,
            "--http",
            help="Quick form: serve Streamable HTTP on HOST:PORT (needs --token-file).",
        ),
        token_file: TokenFileOpt = None,
        allow_non_loopback: AllowNonLoopbackOpt = False,
        shadow: bool = typer.Option(
            False, "--shadow", help="Record what would be denied; block nothing."
        ),
        metrics: str | None = typer.Option(
            None,
            "--metrics",
            help="stdio mode: serve GET /metrics on HOST:PORT (loopback; docs/operations.md).",
        ),
        metrics_allow_non_loopback: bool = typer.Option(
            False,
            "--metrics-allow-non-loopback",
            help="Acknowledge a non-loopback --metrics address (needs --metrics-token-file).",
        ),
        metrics_token_file: Path | None = typer.Option(
            None,
            "--metrics-token-file",
            help="stdio mode: /metrics asks for this bearer token (required off loopback).",
        ),
        log_level: str = typer.Option("info", "--log-level", help="debug, info, warning, error."),
        log_file: Path | None = typer.Option(
            None, "--log-file", help="Log here instead of stderr."
        ),
    ) -> None:
        """Run the gateway: `mcpward run --config FILE` or `mcpward run -- COMMAND ARGS…`.

        The quick form (`-- COMMAND`) takes --id, --pass-env, --env and --http (with
        --token-file and --allow-non-loopback); with --config they are set in the file."""
        if (config is None) == (not command):
            raise _fail("give either --config FILE or `-- COMMAND [ARGS…]` (not both)")
        if config is not None and (http or token_file or allow_non_loopback):
            raise _fail(
                "--http, --token-file and --allow-non-loopback belong to the quick form; "
                "put the front in the config file instead"
            )
        if http is None and (token_file is not None or allow_non_loopback):
            raise _fail("--token-file and --allow-non-loopback need --http HOST:PORT")
        if metrics is None and (metrics_allow_non_loopback or metrics_token_file is not None):
            raise _fail(
                "--metrics-allow-non-loopback and --metrics-token-file need --metrics HOST:PORT"
            )
        if config is None and http is None and metrics is None:
            # The quick stdio form (what `mcpward wire` writes): its server starts first.
            data = quick_config(list(command), upstream_id, pass_env, env, shadow)
            configure_logging(log_level, log_file)
            _serve(run_quick_stdio(data, "mcpward run -- " + " ".join(command)))
        from mcpward.config.http_front import HttpFrontRefused
        from mcpward.config.loader import ConfigError, load_config, parse_config
        from mcpward.fronts.metrics_posture import (
            MetricsListenerRefused,
            listen_address,
            metrics_token,
        )

        try:
            if config is not None:
                loaded = load_config(config)
            else:
                data = quick_config(list(command), upstream_id, pass_env, env, shadow)
                if http is not None:
                    from mcpward.fronts.http.server import quick_front

                    front = quick_front(http, token_file, allow_non_loopback)
                    data["front"] = front.model_dump(mode="json")
                loaded = parse_config(data, "mcpward run -- " + " ".join(command))
        except ConfigError as exc:
            typer.echo(str(exc), err=True)
            raise typer.Exit(2) from None
        except HttpFrontRefused as exc:
            raise _fail(str(exc)) from None
        try:
            if metrics is not None:
                loaded = with_metrics(
                    loaded, metrics, metrics_allow_non_loopback, metrics_token_file
                )
            if loaded.config.telemetry.metrics_listen is not None:
                listen_address(loaded.config.telemetry)  # refused here, before anything starts
                metrics_token(loaded.config.telemetry)
        except MetricsListenerRefused as exc:
            raise _fail(str(exc)) from None
        settings = loaded.config.logging
        configure_logging(
            log_level if log_level != "info" else settings.level, log_file or settings.file
        )
        _serve(run_gateway(loaded))
