"""`mcpward config check|schema|init`: validate, describe and start a configuration."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from mcpward.cli.options import ForceOpt, example
from mcpward.config.loader import ConfigError, LoadedConfig, load_config
from mcpward.config.protections import guards_origin, protection_states
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

# The built-in guards stay on: pins and HOLDs (rug_pull), tool_poisoning, tool_shadowing,
# secrets, response_injection. This list adds guards; an entry with a built-in guard's id
# adjusts that guard (e.g. `- id: rug_pull` with `config: {posture: strict}`). To run ONLY
# the listed guards, write: guards: {replace_defaults: true, list: [...]}
guards:
  - kind: tool_filter
    priority: 10
    runs_on: [tools_list, tool_invoke]
    config:
      rules:
        - upstream: "*"
          deny: ["*delete*", "*drop*"]
"""


def _missing_commands(loaded: LoadedConfig) -> list[str]:
    """Each stdio upstream whose command would not start, with the OS error."""
    from mcpward.config.upstreams import StdioUpstream
    from mcpward.upstreams.command_check import command_problem
    from mcpward.upstreams.stdio import child_environment

    found = []
    for upstream in loaded.config.upstreams:
        if not isinstance(upstream, StdioUpstream):
            continue
        problem = command_problem(upstream.command, child_environment(upstream), upstream.cwd)
        if problem is not None:
            found.append(f"upstreams: {upstream.id}: {problem}")
    return found


def _print_protections(console: Console, loaded: LoadedConfig) -> None:
    """Each protection on or off in plain words, then a warning for each that is not on."""
    console.print("  protections:")
    states = protection_states(loaded)
    for item in states:
        mark = {"on": "[green]on    [/green]", "off": "[red]OFF   [/red]"}.get(
            item.state, "[yellow]RECORD[/yellow]"
        )
        console.print(f"    {mark}  {item.kind}: {item.meaning}", highlight=False)
    for item in states:
        if item.warning:
            console.print(f"  [yellow]warning:[/yellow] {item.warning}", highlight=False)


def register(app: typer.Typer) -> None:
    config_app = typer.Typer(
        help="Validate, describe and start a configuration.", no_args_is_help=True
    )
    app.add_typer(config_app, name="config")

    @config_app.command("check", epilog=example("mcpward config check mcpward.yaml"))
    def check(file: Path = typer.Argument(..., help="The YAML configuration to validate.")) -> None:
        """Validate FILE and explain what it configures; exit 1 if it is invalid."""
        console = Console(stderr=False, soft_wrap=True)
        try:
            loaded = load_config(file)
        except ConfigError as exc:
            Console(stderr=True).print(f"[red]{exc}[/red]", markup=True, highlight=False)
            raise typer.Exit(1) from None
        cfg = loaded.config
        missing = _missing_commands(loaded)
        if missing:
            err = Console(stderr=True, soft_wrap=True)
            err.print(f"[red]{file}: {len(missing)} upstream(s) cannot start[/red]")
            for line in missing:
                err.print(f"  - {line}", markup=False, highlight=False)
            raise typer.Exit(1)
        console.print(
            f"[green]ok[/green] {file}: front {cfg.front.kind}, {len(cfg.upstreams)} upstream(s)"
        )
        for upstream in cfg.upstreams:
            target = getattr(upstream, "command", None) or getattr(upstream, "url", "")
            console.print(
                f"  upstream [bold]{upstream.id}[/bold] ({upstream.kind}): {target}",
                highlight=False,
            )
        _print_protections(console, loaded)
        console.print(f"  {guards_origin(loaded)}:", highlight=False)
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

    @config_app.command("schema", epilog=example("mcpward config schema > mcpward.schema.json"))
    def schema() -> None:
        """Print the configuration's JSON Schema (for editor completion); the same document as
        `mcpward schema config`."""
        from mcpward.evidence.schemas import config_schema

        typer.echo(json.dumps(config_schema(), indent=2))

    @config_app.command("init", epilog=example("mcpward config init mcpward.yaml"))
    def init(
        file: Path = typer.Argument(
            Path("mcpward.yaml"), help="Where to write the starter config."
        ),
        force: ForceOpt = False,
    ) -> None:
        """Write a commented starter configuration."""
        if file.exists() and not force:
            typer.echo(f"{file} exists; use --force to overwrite", err=True)
            raise typer.Exit(1)
        file.write_text(STARTER, encoding="utf-8")
        typer.echo(f"wrote {file}; check it with: mcpward config check {file}")
