"""`mcpward validate UPSTREAM TOOL`: tier 3 of the drift gate. Observes a held tool in a
no-egress sandbox (or probes an owned HTTP server) and prints CLEARED, FAILED or UNAVAILABLE;
exit 0 only when CLEARED released the hold.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import secrets
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from mcpward.cli.options import ByOpt, ConfigOpt, JsonOpt, StateDirOpt, example
from mcpward.cli.pins import _fail, _open
from mcpward.contracts.sanitize import sanitize_text

out = Console(highlight=False)


def register(app: typer.Typer) -> None:
    @app.command("validate", epilog=example("mcpward validate demo read_config --seed 7"))
    def validate(
        upstream: Annotated[str, typer.Argument(help="The upstream id.")],
        tool: Annotated[str, typer.Argument(help="The held tool.")],
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
        seed: Annotated[
            int | None, typer.Option("--seed", help="The battery's seed (default: random).")
        ] = None,
        samples: Annotated[
            int, typer.Option("--samples", min=0, max=500, help="Random valid inputs to add.")
        ] = 12,
        as_json: JsonOpt = False,
        call_timeout: Annotated[
            float, typer.Option("--call-timeout", min=0.1, max=300, help="Seconds per call.")
        ] = 15.0,
        by: ByOpt = None,
    ) -> None:
        """Observe a held tool's behaviour in a no-egress sandbox: CLEARED (exit 0) releases the
        hold for the running gateway only; FAILED adds the evidence to it; UNAVAILABLE leaves it."""
        from mcpward.cli.pins import _context
        from mcpward.config.loader import ConfigError, load_config
        from mcpward.config.models import GatewayConfig
        from mcpward.evidence.settings import EvidencePaths
        from mcpward.evidence.source import LedgerSource
        from mcpward.validation.isolator import Limits
        from mcpward.validation.record import record
        from mcpward.validation.runner import find_hold
        from mcpward.validation.runner import validate as run_validation

        if config is not None:
            try:
                gateway = load_config(config).config
            except ConfigError as exc:
                raise _fail(str(exc), 2) from None
        else:  # the store alone says what is held, not how to start the server
            gateway = GatewayConfig.model_validate({"version": 1, "upstreams": []})
        context = _context(state_dir, config)
        store = _open(state_dir, config)
        try:
            hold = find_hold(store, upstream, tool)
            chosen = secrets.randbelow(2**31) if seed is None else seed
            report = asyncio.run(
                run_validation(
                    gateway,
                    hold,
                    upstream,
                    tool,
                    seed=chosen,
                    samples=samples,
                    limits=Limits(call_timeout_s=call_timeout),
                )
            )
            if (
                config is None
                and report.reason is not None
                and report.reason.value == "unknown_upstream"
            ):
                report.detail = "how to start the server is in the gateway config: pass --config"
            evidence = EvidencePaths.resolve(
                context.state_dir,
                gateway.evidence.path if config is not None else None,
                store=context,
            )
            report.requested_by = sanitize_text(by or getpass.getuser(), 64)
            released, effect = record(report, store, LedgerSource(evidence, context))
        finally:
            store.close()
        if as_json:
            typer.echo(
                json.dumps({**report.to_json(), "released": released, "effect": effect}, indent=2)
            )
        else:
            _print(report.to_json(), effect)
        if not released:
            raise typer.Exit(1)


def _print(data: dict, effect: str) -> None:
    out.print(Text(data["verdict"], style="bold"))
    if data["reason"]:
        out.print(Text(f"reason: {data['reason']}: {sanitize_text(data['detail'], 300)}"))
    origin = data["provenance"]
    out.print(
        Text(
            f"leg {origin['leg']}, seed {origin['seed']}, battery {origin['battery_size']}, "
            f"calls {origin['calls_made']}"
        )
    )
    for item in data["observations"]:
        mark = "CONTRADICTION " if item["contradiction"] else ""
        out.print(Text(f"  {mark}{item['finding']} [{item['case']}] {item['detail']}"))
    for blind in origin["cannot_see"]:
        out.print(Text(f"cannot see: {blind}", style="dim"))
    out.print(Text(effect))
    out.print(Text(origin["meaning"], style="dim"))
