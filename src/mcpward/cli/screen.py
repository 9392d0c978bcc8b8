"""`mcpward screen -- COMMAND ARGS` / `mcpward screen --url URL`: an advisory screen of a server
before it is wired (started with a minimal environment and, where possible, no network).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from mcpward.cli.options import (
    UPSTREAM_ID,
    ConfigOpt,
    JsonOpt,
    OutputOpt,
    StateDirOpt,
    TimeoutOpt,
    example,
)
from mcpward.config.loader import ConfigError, parse_config
from mcpward.contracts.model import ItemKind, Pin
from mcpward.contracts.snapshot_file import Snapshot, SnapshotError
from mcpward.guards.screen import SCREEN_MEANING, ScreenReport, ScreenVerdict, judge

out = Console(highlight=False)
SCREEN_ID = "screened"
KINDS = {
    "tools": ItemKind.TOOL,
    "prompts": ItemKind.PROMPT,
    "resources": ItemKind.RESOURCE,
    "resourceTemplates": ItemKind.RESOURCE_TEMPLATE,
}


def network_isolation() -> list[str] | None:
    """A prefix that starts a command with no network (`unshare -n`, or `unshare -rn` without
    root), if this machine allows it; None otherwise."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    for prefix in ([unshare, "-n"], [unshare, "-rn"]):
        try:
            done = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return [*prefix, "--"]
    return None


def _config(
    upstream_id: str, command: list[str], url: str | None, allow_private: list[str]
) -> dict[str, Any]:
    if url is not None:
        upstream: dict[str, Any] = {"id": upstream_id, "url": url}
        if allow_private:
            upstream["allow_private"] = allow_private
    else:
        upstream = {"id": upstream_id, "command": command[0], "args": command[1:]}
        upstream["restart"] = {"enabled": False}
    return {"version": 1, "upstreams": [upstream], "guards": []}


def screen_server(
    upstream_id: str,
    command: list[str],
    url: str | None,
    allowed_ids: list[str],
    allow_private: list[str],
    timeout: float,
) -> tuple[ScreenReport, Snapshot | None, str]:
    """Start and list the server, then judge it. Returns the report, what was listed, and how
    the network was isolated."""
    from mcpward.cli.pins import fetch_snapshot
    from mcpward.cli.scan import scan_upstreams

    identity = _identity(upstream_id, command, url, allow_private)
    isolation = "not applicable (remote server)"
    if url is None:
        prefix = network_isolation()
        if prefix:
            isolation = f"no network ({' '.join([Path(prefix[0]).name, *prefix[1:-1]])})"
            command = [*prefix, *command]
        else:
            isolation = "not isolated: unshare is not available here"
    loaded = parse_config(_config(upstream_id, command, url, allow_private), "<screen>")
    try:
        snap = asyncio.run(asyncio.wait_for(fetch_snapshot(loaded.config, upstream_id), timeout))
    except (SnapshotError, TimeoutError, OSError) as exc:
        report = judge(upstream_id, None, [], allowed_ids)
        report.reasons.append(str(exc) or "timed out")
        report.identity = identity
        return report, None, isolation
    scanned = scan_upstreams({upstream_id: snap})
    dropped = [
        f"{key}:{row['name']}"
        for key, rows in scanned["upstreams"][upstream_id].items()
        for row in rows
        if row["would_drop"]
    ]
    report = judge(upstream_id, snap.lists, dropped, allowed_ids)
    report.identity = identity
    return report, snap, isolation


def _identity(
    upstream_id: str, command: list[str], url: str | None, allow_private: list[str]
) -> dict[str, str | None]:
    """What identifies the screened server, as the gateway would name it (before isolation)."""
    from mcpward.upstreams.connectors import make_connection

    loaded = parse_config(_config(upstream_id, command, url, allow_private), "<screen>")
    connection = make_connection(loaded.config.upstreams[0], loaded.config.gateway)
    executable = getattr(connection, "executable_sha256", None)
    return {"digest": connection.identity_digest, "executable_sha256": executable}


def pin_screened(state_dir: Path, upstream_id: str, snap: Snapshot) -> int:
    """Record the screened contracts as the upstream's baseline (source `screen`); refused if
    the upstream is pinned already (review changes with `mcpward pins diff/accept` instead)."""
    from mcpward.contracts.extract import contract_hash
    from mcpward.store.pins_sqlite import SqlitePinStore

    store = SqlitePinStore(state_dir)
    try:
        if store.load(upstream_id).known:
            raise typer.Exit(_refuse(f"upstream {upstream_id!r} is pinned already in {state_dir}"))
        now = time.time()
        contracts = snap.contracts()
        pins = [
            Pin(upstream_id, kind, name, contract_hash(c), c, now, "screen")
            for (kind, name), c in contracts.items()
        ]
        kinds = {KINDS[key] for key in snap.lists if key in KINDS}
        if snap.has_instructions:
            kinds.add(ItemKind.SERVER)
        store.write(upstream_id, put=pins, baseline_kinds=kinds)
        return len(pins)
    finally:
        store.close()


def _contract_hashes(snap: Snapshot) -> dict[str, str]:
    from mcpward.contracts.extract import contract_hash

    return {
        f"{kind.value}:{name}": contract_hash(c) for (kind, name), c in snap.contracts().items()
    }


def _shared_verdicts(report: ScreenReport, snap: Snapshot, state_dir: Path) -> None:
    """Record this screen locally; a stricter verdict imported from a trusted operator on the
    same contracts raises it (never lowers it)."""
    from mcpward.contracts.verdicts import STRICTNESS, SharedVerdict, VerdictStore

    store = VerdictStore(state_dir)
    hashes = _contract_hashes(snap)
    shared = store.strictest(hashes)
    if shared is not None and STRICTNESS[shared.verdict] > STRICTNESS[report.verdict.value]:
        report.verdict = ScreenVerdict(shared.verdict)
        report.reasons.append(f"a shared verdict on these exact contracts says {shared.verdict} "
                              f"({shared.source}, {shared.screened_at})")  # fmt: skip
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    store.add([SharedVerdict(report.upstream, hashes, report.verdict.value, stamp)])


def _refuse(message: str) -> int:
    Console(stderr=True).print(Text(message, style="red"))
    return 4


def _print(report: ScreenReport, isolation: str) -> None:
    colour = {"ALLOW": "green", "REVIEW": "yellow", "DENY": "red"}.get(report.verdict.value, "red")
    out.print(Text.assemble((report.verdict.value, f"bold {colour}"), f"  {report.upstream}"))
    out.print(Text(f"  network during the screen: {isolation}"))
    identity = report.identity or {}
    executable = identity.get("executable_sha256") or "n/a"
    out.print(Text(f"  server identity: {identity.get('digest')} (executable sha256 {executable})"))
    out.print(Text(f"  {SCREEN_MEANING}", style="dim"))
    if report.counts:
        out.print(Text("  listed: " + ", ".join(f"{n} {k}" for k, n in report.counts.items())))
    for reason in report.reasons:
        out.print(Text(f"  - {reason}"))
    for item in report.dropped:
        out.print(Text(f"    would drop {item}"))
    for flag in report.red_flags:
        out.print(Text(f"    {flag.flag}: {flag.item} ({flag.detail})"))


def register(app: typer.Typer) -> None:
    @app.command(
        "screen",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        epilog=example("mcpward screen --id time --json -- uvx mcp-server-time"),
    )
    def screen(
        command: list[str] = typer.Argument(None, help="After `--`: the stdio server to screen."),
        url: Annotated[str | None, typer.Option("--url", help="Screen a remote server.")] = None,
        upstream_id: Annotated[str, UPSTREAM_ID] = SCREEN_ID,
        allowed: Annotated[
            list[str] | None,
            typer.Option("--allowed", help="An allowed upstream id (typosquat check); repeat."),
        ] = None,
        config: ConfigOpt = None,
        allow_private: Annotated[
            list[str] | None,
            typer.Option("--allow-private", help="--url: a private address/CIDR it may reach."),
        ] = None,
        pin: Annotated[
            bool, typer.Option("--pin", help="Record the screened contracts as the pins.")
        ] = False,
        state_dir: StateDirOpt = None,
        timeout: TimeoutOpt = 60.0,
        as_json: JsonOpt = False,
    ) -> None:
        """Screen a server before wiring it. Exit 0 ALLOW, 1 REVIEW, 2 DENY, 3 UNVERIFIED
        (4: refused, e.g. --pin on a pinned upstream).

        --id is checked against the allowed ids (--allowed, and a --config's upstreams) for
        typosquats; --pin records the screened contracts under it in the state directory."""
        if (url is None) == (not command):
            raise typer.Exit(_refuse("give a command after `--`, or --url (not both)"))
        allowed_ids = list(allowed or [])
        directory = state_dir
        if config is not None:
            from mcpward.config.loader import load_config
            from mcpward.store.paths import resolve_state_dir

            try:
                loaded = load_config(config)
            except ConfigError as exc:
                raise typer.Exit(_refuse(str(exc))) from None
            allowed_ids += [u.id for u in loaded.config.upstreams]
            directory = directory or resolve_state_dir(loaded.config.state_dir)
        report, snap, isolation = screen_server(
            upstream_id, list(command or []), url, allowed_ids, list(allow_private or []), timeout
        )
        from mcpward.store.paths import resolve_state_dir

        directory = directory or resolve_state_dir(None)
        if snap is not None:
            _shared_verdicts(report, snap, directory)
        pinned = None
        if pin and snap is not None and report.verdict is not ScreenVerdict.UNVERIFIED:
            pinned = pin_screened(directory, upstream_id, snap)
        if as_json:
            body = {**report.to_json(), "network": isolation, "pinned": pinned}
            typer.echo(json.dumps(body, indent=2, ensure_ascii=False))
        else:
            _print(report, isolation)
            if pinned is not None:
                out.print(Text(f"  pinned {pinned} contract(s) as reviewed (source: screen)"))
        raise typer.Exit(report.exit_code)


def register_verdicts(app: typer.Typer) -> None:
    verdicts = typer.Typer(help="Screen verdicts: export them signed, import others' (checked).")
    app.add_typer(verdicts, name="verdicts")

    @verdicts.command("export", epilog=example("mcpward verdicts export -o my-verdicts.note"))
    def export(
        output: OutputOpt = None,
        state_dir: StateDirOpt = None,
    ) -> None:
        """This operator's screen verdicts, signed with the state dir's Ed25519 key."""
        from mcpward.contracts.verdicts import VerdictStore, export_note
        from mcpward.evidence.keyring import load_or_create_signer
        from mcpward.evidence.settings import EvidencePaths
        from mcpward.store.paths import resolve_state_dir

        directory = state_dir or resolve_state_dir(None)
        local = [v for v in VerdictStore(directory).all() if v.source == "local"]
        paths = EvidencePaths.resolve(directory)
        note = export_note(local, load_or_create_signer(paths.keys, paths.public_key))
        if output is None:
            typer.echo(note, nl=False)
        else:
            output.write_text(note, encoding="utf-8")
            out.print(Text(f"wrote {len(local)} verdict(s) to {output}; "
                           f"their verifier key is {paths.public_key}"))  # fmt: skip

    @verdicts.command(
        "import",
        epilog=example("mcpward verdicts import their-verdicts.note --trust their-key.pub"),
    )
    def import_(
        source: Annotated[Path, typer.Argument(help="A file from `mcpward verdicts export`.")],
        trust: Annotated[
            list[Path], typer.Option("--trust", help="The exporter's public key file; repeat.")
        ],
        state_dir: StateDirOpt = None,
    ) -> None:
        """Import verdicts signed by a trusted key. They can make a later screen stricter, never
        laxer, and they never change a pin or a HOLD."""
        from mcpward.contracts.verdicts import VerdictFileError, VerdictStore, import_note
        from mcpward.evidence.keyring import read_verifier_keys
        from mcpward.store.paths import resolve_state_dir

        try:
            keys = [k for path in trust for k in read_verifier_keys(path)]
            found = import_note(source.read_text(encoding="utf-8"), keys)
        except (OSError, ValueError, VerdictFileError) as exc:
            raise typer.Exit(_refuse(f"refused {source}: {exc}")) from None
        added = VerdictStore(state_dir or resolve_state_dir(None)).add(found)
        out.print(Text(f"imported {added} verdict(s) from {source}"))
