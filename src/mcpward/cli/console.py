"""`mcpward console`: serve the review console (holds, pins, receipts, ledger, guards) on loopback.

Thin wiring: reads the config and the admin token file, builds `console.app`, runs uvicorn.
"""

from __future__ import annotations

import socket
from typing import Annotated

import typer
import uvicorn
from rich.console import Console as RichConsole
from rich.text import Text

from mcpward.cli.options import (
    AllowNonLoopbackOpt,
    ConfigOpt,
    StateDirOpt,
    TokenFileOpt,
    example,
)
from mcpward.cli.store_context import StoreChoiceError, cli_store_context
from mcpward.config.http_front import HttpFront, is_loopback_host
from mcpward.config.loader import ConfigError, load_config
from mcpward.console.app import ConsoleSettings, create_console_app
from mcpward.console.auth import (
    ADMIN_TOKEN_NAME,
    AdminAuth,
    AdminTokenError,
    check_not_a_client_token,
    ensure_admin_token,
    read_admin_token_file,
)
from mcpward.evidence.settings import EvidencePaths
from mcpward.fronts.http.origin import LOOPBACK_NAMES, HostOriginPolicy

DEFAULT_LISTEN = "127.0.0.1:8932"
err = RichConsole(stderr=True, highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(Text(message, style="red"))
    return typer.Exit(code)


def _listen(host: str, port: int) -> socket.socket:
    """The console's listening socket; exit 2 with the fix if it cannot be had (as `run`)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise _fail(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; stop what uses it or pick "
            "another with --listen HOST:PORT"
        ) from None
    return sock


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise _fail(f"--listen {value!r}: expected HOST:PORT, e.g. {DEFAULT_LISTEN}")
    return host, int(port)


def host_policy(host: str, port: int, allowed_hosts: list[str]) -> HostOriginPolicy:
    """Which Host/Origin headers the console answers (the DNS-rebinding defence)."""
    names = list(LOOPBACK_NAMES) if is_loopback_host(host) else []
    hosts = {f"{name}:{port}" for name in names} | {h.strip().lower() for h in allowed_hosts}
    origins = {f"http://{h}" for h in hosts} | {f"https://{h}" for h in hosts}
    setting = "--allowed-host HOST:PORT"
    return HostOriginPolicy(frozenset(hosts), frozenset(), frozenset(origins), setting, setting)


def register(app: typer.Typer) -> None:
    @app.command(
        "console",
        epilog=example("mcpward console --state-dir ~/mcpward-demo/state"),
    )
    def console(
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
        token_file: TokenFileOpt = None,
        listen: Annotated[
            str, typer.Option("--listen", help="HOST:PORT to serve on (loopback by default).")
        ] = DEFAULT_LISTEN,
        allow_non_loopback: AllowNonLoopbackOpt = False,
        allowed_host: Annotated[
            list[str] | None,
            typer.Option("--allowed-host", help="A Host header to accept (HOST:PORT), repeatable."),
        ] = None,
    ) -> None:
        """Serve the review console: open holds with their diffs, accept or keep them.

        Sign in with the admin token in --token-file (default: STATE_DIR/{ADMIN_TOKEN_NAME},
        made with mode 600 on first use)."""
        try:
            store = cli_store_context(state_dir, config)
            loaded = load_config(config) if config is not None else None
            if token_file is None:
                token_file = store.state_dir / ADMIN_TOKEN_NAME
                if ensure_admin_token(token_file):
                    err.print(f"made an admin token in {token_file} (mode 600)")
            token = read_admin_token_file(token_file)
            front = loaded.config.front if loaded is not None else None
            if isinstance(front, HttpFront):
                check_not_a_client_token(token, (t.token_sha256 for t in front.tokens))
        except (ConfigError, AdminTokenError, StoreChoiceError) as exc:
            raise _fail(str(exc)) from None
        host, port = parse_listen(listen)
        loopback = is_loopback_host(host)
        if not loopback and not allow_non_loopback:
            raise _fail(
                f"--listen {host!r} is not a loopback address: also pass --allow-non-loopback "
                "(and --allowed-host NAME:PORT) to serve the console beyond this host"
            )
        if not loopback and not any(h.strip() for h in allowed_host or []):
            raise _fail("a non-loopback console needs --allowed-host NAME:PORT (Host is checked)")
        state = store.state_dir
        evidence_path = loaded.config.evidence.path if loaded is not None else None
        settings = ConsoleSettings(
            state_dir=state,
            evidence=EvidencePaths.resolve(state, evidence_path, store=store),
            store=store,
            auth=AdminAuth(token),
            request_problem=host_policy(host, port, allowed_host or []).problem,
        )
        sock = _listen(host, port)  # before the success line: a port in use fails cleanly
        err.print(
            f"mcpward console on http://{host}:{port}/ (state: {state}); sign in with the "
            f"token in {token_file}"
        )
        server = uvicorn.Server(
            uvicorn.Config(
                create_console_app(settings),
                log_level="warning",
                access_log=False,
                server_header=False,
            )
        )
        server.run(sockets=[sock])
