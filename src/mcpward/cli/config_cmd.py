"""`mcpward config check|schema|init`: validate, describe and start a configuration."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from mcpward.config.loader import ConfigError, load_config
from mcpward.config.models import GatewayConfig
from mcpward.guards.kinds import resolve_guard_kind

STARTER = """\
# mcpward configuration. Validate with: mcpward config check mcpward.yaml
# Editor completion: mcpward config schema > mcpward.schema.json
version: 1

front:
  kind: stdio            # the client speaks MCP over our stdin/stdout

gateway:
  namespacing: auto      # prefix names with the upstream id when there are 2+ upstreams
  namespace_separator: "__"
  max_frame_bytes: 4194304
  mode: enforce          # or shadow: record what would be denied, block nothing

upstreams:
  - id: time             # the upstream's identity (never the command line)
    kind: stdio
    command: mcp-server-time
    args: []
    pass_env: []         # names of environment variables passed through; nothing else is
  # - id: remote
  #   kind: http
  #   url: https://mcp.example.com/mcp
  #   headers:
  #     Authorization: {env: REMOTE_MCP_TOKEN, prefix: "Bearer "}

# Omit `guards` to get the built-in defaults.
guards:
  - kind: tool_filter
    priority: 10
    runs_on: [tools_list, tool_invoke]
    config:
      rules:
        - upstream: "*"
          deny: ["*delete*", "*drop*"]
"""


def register(app: typer.Typer) -> None:
    config_app = typer.Typer(
        help="Validate, describe and start a configuration.", no_args_is_help=True
    )
    app.add_typer(config_app, name="config")

    @config_app.command("check")
    def check(file: Path = typer.Argument(..., help="The YAML configuration to validate.")) -> None:
        """Validate FILE and explain what it configures; exit 1 if it is invalid."""
        console = Console(stderr=False)
        try:
            loaded = load_config(file)
        except ConfigError as exc:
            Console(stderr=True).print(f"[red]{exc}[/red]", markup=True, highlight=False)
            raise typer.Exit(1) from None
        cfg = loaded.config
        console.print(
            f"[green]ok[/green] {file}: front {cfg.front.kind}, {len(cfg.upstreams)} upstream(s)"
        )
        for upstream in cfg.upstreams:
            target = getattr(upstream, "command", None) or getattr(upstream, "url", "")
            console.print(
                f"  upstream [bold]{upstream.id}[/bold] ({upstream.kind}): {target}",
                highlight=False,
            )
        source = "built-in defaults" if cfg.guards is None else "config"
        console.print(f"  {len(loaded.guard_specs)} guard(s) from {source}:")
        for spec in sorted(loaded.guard_specs, key=lambda s: s.priority):
            # a guard that hides listed items also judges calls to them ("+": not in runs_on)
            added = resolve_guard_kind(spec.kind).effective_phases(spec.runs_on) - set(spec.runs_on)
            phases = ", ".join([p.value for p in spec.runs_on] + [f"+{p.value}" for p in added])
            state = "" if spec.enabled else " [dim](disabled)[/dim]"
            console.print(
                f"    {spec.priority:>3}  {spec.id or spec.kind} ({spec.kind}) on {phases}; "
                f"{spec.timeout_ms} ms, {spec.failure_mode.value}{state}",
                highlight=False,
            )

    @config_app.command("schema")
    def schema() -> None:
        """Print the configuration's JSON Schema (for editor completion)."""
        typer.echo(json.dumps(GatewayConfig.model_json_schema(), indent=2))

    @config_app.command("init")
    def init(
        file: Path = typer.Argument(
            Path("mcpward.yaml"), help="Where to write the starter config."
        ),
        force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
    ) -> None:
        """Write a commented starter configuration."""
        if file.exists() and not force:
            typer.echo(f"{file} exists; use --force to overwrite", err=True)
            raise typer.Exit(1)
        file.write_text(STARTER, encoding="utf-8")
        typer.echo(f"wrote {file}; check it with: mcpward config check {file}")
