"""`mcpward token new|hash|revoke|revoked`: HTTP client tokens, their hashed form, revocations.

The token is printed once, to stdout; the config only ever holds its SHA-256.
"""

from __future__ import annotations

import sys
import time
from typing import Annotated

import typer
from rich.console import Console

from mcpward.cli.options import ConfigOpt, OutputOpt, StateDirOpt, example
from mcpward.cli.store_context import StoreChoiceError, cli_store_context
from mcpward.identity.consent import ConsentCeiling
from mcpward.identity.models import StaticToken
from mcpward.identity.revocations import RevocationUnavailable, parse_subject
from mcpward.identity.tokens import hash_token, new_token
from mcpward.store.factory import open_revocations
from mcpward.wiring.files import replace_atomically

err = Console(stderr=True)


def _entry_yaml(entry: StaticToken) -> str:
    roles = ", ".join(entry.roles)
    return (
        f"    - client_id: {entry.client_id}\n"
        f'      token_sha256: "{entry.token_sha256}"\n'
        f"      roles: [{roles}]\n"
        f"      consent_ceiling: {entry.consent_ceiling.value}\n"
    )


def register(app: typer.Typer) -> None:
    token_app = typer.Typer(help="HTTP front client tokens.", no_args_is_help=True)
    app.add_typer(token_app, name="token")

    @token_app.command(
        "new",
        epilog=example("mcpward token new --client-id ci-bot --ceiling read_only -o ci.token"),
    )
    def new(
        client_id: Annotated[str, typer.Option("--client-id", help="Who presents the token.")],
        ceiling: Annotated[
            ConsentCeiling, typer.Option("--ceiling", help="read_only | no_destructive | full.")
        ] = ConsentCeiling.READ_ONLY,
        role: Annotated[
            list[str] | None, typer.Option("--role", help="An access-guard role.")
        ] = None,
        output: OutputOpt = None,
    ) -> None:
        """Make a random token; print it once, and the `front.tokens` entry that admits it.

        --output writes the token to a file only its owner can read (mode 600), as
        `mcpward run --http --token-file` requires."""
        token = new_token()
        try:
            entry = StaticToken(
                client_id=client_id,
                token_sha256=hash_token(token),
                roles=role or [],
                consent_ceiling=ceiling,
            )
        except ValueError as exc:
            err.print(f"[red]mcpward token new:[/red] {exc}")
            raise typer.Exit(2) from None
        if output is None:
            err.print("Give this token to the client (it is shown only now):")
            typer.echo(token)
        else:
            try:
                replace_atomically(output, (token + "\n").encode(), 0o600)
            except OSError as exc:
                err.print(f"[red]mcpward token new:[/red] {output}: {exc.strerror}")
                raise typer.Exit(2) from None
            err.print(f"The token is in {output} (mode 600); give it to the client.")
        err.print("\nAdd this entry under front.tokens in the gateway config:")
        err.print(_entry_yaml(entry), markup=False, highlight=False, soft_wrap=True)

    @token_app.command("hash", epilog=example("mcpward token hash < ci-bot.token"))
    def hash_() -> None:
        """Read a token from standard input; print the `token_sha256` value for the config."""
        token = sys.stdin.readline().strip()
        if len(token) < 16:
            err.print("[red]mcpward token hash:[/red] give a token of at least 16 characters")
            raise typer.Exit(2)
        typer.echo(hash_token(token))

    @token_app.command(
        "revoke", epilog=example("mcpward token revoke ci-bot --config mcpward.yaml")
    )
    def revoke(
        subject: Annotated[str, typer.Argument(help="A client id, or sha256:<hex> of one token.")],
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
    ) -> None:
        """Refuse a client (or one token) from now on, on every replica of the store."""
        try:
            parsed = parse_subject(subject)
            context = cli_store_context(state_dir, config)
            revocations = open_revocations(context, listen=False)
        except (ValueError, StoreChoiceError, RevocationUnavailable) as exc:
            err.print(f"[red]mcpward token revoke:[/red] {exc}", highlight=False)
            raise typer.Exit(2 if isinstance(exc, ValueError) else 1) from None
        try:
            added = revocations.revoke(parsed)
        except RevocationUnavailable as exc:
            err.print(f"[red]mcpward token revoke:[/red] {exc}", highlight=False)
            raise typer.Exit(1) from None
        finally:
            revocations.close()
        state = "revoked" if added else "was already revoked"
        err.print(f"{parsed} {state} ({' '.join(context.cli_args())})", highlight=False)

    @token_app.command("revoked", epilog=example("mcpward token revoked --config mcpward.yaml"))
    def revoked(
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
    ) -> None:
        """List the revoked clients and tokens."""
        try:
            revocations = open_revocations(cli_store_context(state_dir, config), listen=False)
            rows = revocations.subjects()
            revocations.close()
        except (StoreChoiceError, RevocationUnavailable) as exc:
            err.print(f"[red]mcpward token revoked:[/red] {exc}", highlight=False)
            raise typer.Exit(1) from None
        for subject, at in rows:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
            typer.echo(f"{stamp}  {subject}")
