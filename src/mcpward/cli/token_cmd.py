"""`mcpward token new|hash`: make HTTP client tokens and the hashed form the config stores.

The token is printed once, to stdout; the config only ever holds its SHA-256.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console

from mcpward.identity.consent import ConsentCeiling
from mcpward.identity.models import StaticToken
from mcpward.identity.tokens import hash_token, new_token

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

    @token_app.command("new")
    def new(
        client_id: Annotated[str, typer.Option("--client-id", help="Who presents the token.")],
        ceiling: Annotated[
            ConsentCeiling, typer.Option("--ceiling", help="read_only | no_destructive | full.")
        ] = ConsentCeiling.READ_ONLY,
        role: Annotated[
            list[str] | None, typer.Option("--role", help="An access-guard role.")
        ] = None,
    ) -> None:
        """Make a random token; print it once, and the `front.tokens` entry that admits it."""
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
        err.print("Give this token to the client (it is shown only now):")
        typer.echo(token)
        err.print("\nAdd this entry under front.tokens in the gateway config:")
        err.print(_entry_yaml(entry), markup=False, highlight=False, soft_wrap=True)

    @token_app.command("hash")
    def hash_() -> None:
        """Read a token from standard input; print the `token_sha256` value for the config."""
        token = sys.stdin.readline().strip()
        if len(token) < 16:
            err.print("[red]mcpward token hash:[/red] give a token of at least 16 characters")
            raise typer.Exit(2)
        typer.echo(hash_token(token))
