"""`mcpward pins ...`, `mcpward holds`, `mcpward diff` and `mcpward snapshot`: review contract pins.

Thin wiring over `contracts.review`, `contracts.snapshot_file` and the SQLite pin store.
"""

from __future__ import annotations

import asyncio
import dataclasses
import getpass
import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from mcpward.cli.options import (
    AllOpt,
    ByOpt,
    ConfigOpt,
    JsonOpt,
    KindOpt,
    OutputOpt,
    RequiredConfigOpt,
    StateDirOpt,
    TimeoutOpt,
    example,
)
from mcpward.cli.store_context import StoreChoiceError, cli_store_context
from mcpward.config.loader import ConfigError, load_config
from mcpward.config.models import GatewayConfig
from mcpward.contracts.clearance import verdict_of
from mcpward.contracts.extract import contract_hash
from mcpward.contracts.holds import Commands, hold_headline, identity_text
from mcpward.contracts.model import ItemKind
from mcpward.contracts.postures import Posture, PostureTable
from mcpward.contracts.provenance import HOLD_MEANING
from mcpward.contracts.render import (
    hold_diff_view,
    holds_table,
    pins_table,
    snapshot_diff_json,
    snapshot_diff_view,
)
from mcpward.contracts.review import ReviewError, accept, diff_holds, revoke
from mcpward.contracts.sanitize import sanitize_text
from mcpward.contracts.snapshot_file import (
    Snapshot,
    SnapshotError,
    diff_snapshots,
    read_snapshot,
    write_snapshot,
)
from mcpward.contracts.store import (
    PinStore,
    PinStoreError,
    hold_to_json,
    pin_from_json,
    pin_to_json,
)
from mcpward.guards.rug_pull import marker_scan
from mcpward.store.factory import StoreContext, open_pin_store
from mcpward.store.pins_sqlite import DB_NAME

out = Console(highlight=False, soft_wrap=True)  # command lines stay whole (copy-paste)
err = Console(stderr=True, highlight=False)

Upstream = Annotated[str, typer.Argument(help="The upstream id.")]
EXPORT_FORMAT = "mcpward-pins/1"


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(Text(message, style="red"))
    return typer.Exit(code)


def _context(state_dir: Path | None, config: Path | None) -> StoreContext:
    try:
        return cli_store_context(state_dir, config)
    except StoreChoiceError as exc:
        raise _fail(str(exc)) from None


def _exists(context: StoreContext) -> bool:
    """SQLite: the gateway has created its pin store. PostgreSQL: always (the open checks it)."""
    return context.postgres or (context.state_dir / DB_NAME).exists()


def _open(state_dir: Path | None, config: Path | None, *, must_exist: bool = True) -> PinStore:
    context = _context(state_dir, config)
    if must_exist and not _exists(context):
        raise _fail(
            f"no pin store in {context.state_dir} (has the gateway run with the rug_pull guard?)"
        )
    try:
        return open_pin_store(context, listen=False)
    except PinStoreError as exc:
        raise _fail(str(exc)) from None


def _kind(value: str) -> ItemKind:
    try:
        return ItemKind(value)
    except ValueError:
        raise _fail(
            f"unknown --kind {value!r}; use one of: {', '.join(k.value for k in ItemKind)}", 2
        ) from None


def _commands(state_dir: Path | None, config: Path | None) -> Commands:
    """The commands to print: they name the same store this command used."""
    return Commands(_context(state_dir, config).cli_args())


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def register(app: typer.Typer) -> None:
    pins = typer.Typer(help="Review, accept and revoke contract pins.", no_args_is_help=True)
    app.add_typer(pins, name="pins")

    @pins.command("list", epilog=example("mcpward pins list"))
    def list_(
        upstream: Annotated[str | None, typer.Argument(help="Only this upstream.")] = None,
        state_dir: StateDirOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Pinned upstreams with their pin and hold counts."""
        store = _open(state_dir, config)
        rows = []
        for up in [upstream] if upstream else store.upstreams():
            loaded = store.load(up)
            rows.append(
                {
                    "upstream": up,
                    "pins": len(loaded.pins),
                    "holds": len(loaded.holds),
                    "tampered": loaded.tampered,
                }
            )
        if as_json:
            _print_json(rows)
            return
        if not rows:
            out.print(f"no pins yet in {store.location()}")
        for row in rows:
            name = sanitize_text(row["upstream"], 64)
            line = Text(f"{name}: {row['pins']} pin(s), {row['holds']} hold(s)")
            if row["tampered"]:
                line.append(f"  TAMPERED: {sanitize_text(row['tampered'], 200)}", style="bold red")
            out.print(line)

    @pins.command("history", epilog=example("mcpward pins history demo --config fleet.yaml"))
    def history(
        upstream: Annotated[str | None, typer.Argument(help="Only this upstream.")] = None,
        limit: Annotated[int, typer.Option("--limit", min=1, max=100_000)] = 50,
        state_dir: StateDirOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Changes to pins and holds, newest first (the PostgreSQL store; each row MACed)."""
        store = _open(state_dir, config)
        read = getattr(store, "history", None)
        if read is None:
            raise _fail(
                "this store keeps no pin history (SQLite); accepts and revokes made in the "
                "console are in the ledger: mcpward ledger tail"
            )
        try:
            rows = read(upstream, limit)
        except PinStoreError as exc:
            raise _fail(str(exc)) from None
        if as_json:
            _print_json([dataclasses.asdict(r) for r in rows])
            return
        for r in rows:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(r.at))
            mark = "" if r.verified else "  FAILS VERIFICATION"
            line = f"{stamp}  {r.action:<7} {r.upstream} {r.kind} {r.name} {r.hash or ''}"
            out.print(Text(sanitize_text(line, 300) + mark))

    @pins.command("show", epilog=example("mcpward pins show demo echo"))
    def show(
        upstream: Upstream,
        name: Annotated[str | None, typer.Argument(help="One item's pinned contract.")] = None,
        kind: KindOpt = "tool",
        state_dir: StateDirOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """An upstream's pins (and whether they verify), or one pinned contract."""
        store = _open(state_dir, config)
        loaded = store.load(upstream)
        if name is not None:
            pin = loaded.pins.get((_kind(kind), name))
            if pin is None:
                raise _fail(f"upstream {upstream!r} has no pin for {kind} {name!r}")
            if as_json:
                _print_json(pin_to_json(pin))
            else:
                label = f"{pin.kind.value} {sanitize_text(pin.name, 80)}"
                out.print(Text(f"{label}  {pin.hash}  ({pin.source})"))
                # contract text is attacker-controlled: print as JSON, never interpreted as markup
                out.print(Text(json.dumps(pin.contract, indent=2, ensure_ascii=True)))
            return
        if as_json:
            _print_json(
                {
                    "upstream": upstream,
                    "baselined": sorted(k.value for k in loaded.kinds),
                    "tampered": loaded.tampered,
                    "pins": [pin_to_json(p) for p in loaded.pins.values()],
                    "holds": [hold_to_json(h) for h in loaded.holds.values()],
                }
            )
            return
        if loaded.tampered:
            out.print(Text(f"TAMPERED: {sanitize_text(loaded.tampered, 400)}", style="bold red"))
            reset = _commands(state_dir, config).reset(upstream)
            out.print(Text(f"reset (forget, re-pin on next sight): {reset}"))
        if not loaded.known:
            out.print(f"upstream {upstream!r} has no baseline yet")
        out.print(pins_table(list(loaded.pins.values())))
        if loaded.holds:
            out.print(holds_table(list(loaded.holds.values())))

    @pins.command("diff", epilog=example("mcpward pins diff demo echo"))
    def diff(
        upstream: Upstream,
        name: Annotated[str | None, typer.Argument(help="One held item (default: all).")] = None,
        kind: KindOpt = "tool",
        state_dir: StateDirOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """What changed in held contracts, against their pins."""
        store = _open(state_dir, config)
        try:
            diffs = diff_holds(store, upstream, name, _kind(kind))
        except ReviewError as exc:
            raise _fail(str(exc)) from None
        if not diffs:
            raise _fail(
                f"nothing held on upstream {upstream!r}" + (f" for {kind} {name!r}" if name else "")
            )
        if as_json:
            _print_json(
                [
                    {
                        "hold": hold_to_json(d.hold),
                        "changes": [c.to_json(with_values=True) for c in d.changes],
                    }
                    for d in diffs
                ]
            )
            return
        for d in diffs:
            # soft_wrap off: the banner's commands wrap inside it instead of being cut at its edge
            out.print(hold_diff_view(d, _commands(state_dir, config)), soft_wrap=False)

    @pins.command(
        "accept",
        epilog=example("mcpward pins accept demo echo --hash HASH_FROM_THE_HOLD --by alice"),
    )
    def accept_(
        upstream: Upstream,
        name: Annotated[str | None, typer.Argument(help="The held item to accept.")] = None,
        kind: KindOpt = "tool",
        hash_: Annotated[
            str | None,
            typer.Option("--hash", help="Accept only if the held contract has this hash."),
        ] = None,
        every: AllOpt = False,
        by: ByOpt = None,
        state_dir: StateDirOpt = None,
        config: ConfigOpt = None,
    ) -> None:
        """Re-pin held contracts after review; the next call proceeds."""
        store = _open(state_dir, config)
        who = sanitize_text(by or getpass.getuser(), 64)
        try:
            accepted = accept(
                store, upstream, name=name, kind=_kind(kind), hash_=hash_, every=every, by=who
            )
        except ReviewError as exc:
            raise _fail(str(exc)) from None
        for hold in accepted:
            what = "removal of" if hold.new_contract is None else "new contract of"
            out.print(Text(f"accepted {what} {hold.kind.value} {sanitize_text(hold.name, 80)}"))

    @pins.command("revoke", epilog=example("mcpward pins revoke demo --all"))
    def revoke_(
        upstream: Upstream,
        name: Annotated[str | None, typer.Argument(help="The item to forget.")] = None,
        kind: KindOpt = "tool",
        every: AllOpt = False,
        state_dir: StateDirOpt = None,
        config: ConfigOpt = None,
    ) -> None:
        """Forget pins: the next listing pins them again (trust on first use)."""
        store = _open(state_dir, config)
        try:
            count = revoke(store, upstream, name=name, kind=_kind(kind), every=every)
        except ReviewError as exc:
            raise _fail(str(exc)) from None
        out.print(f"forgot {count} pin(s) of upstream {upstream!r}")

    @pins.command("export", epilog=example("mcpward pins export demo -o reviewed-pins.json"))
    def export(
        upstream: Annotated[
            list[str] | None, typer.Argument(help="Upstreams to export (default: all).")
        ] = None,
        output: OutputOpt = None,
        state_dir: StateDirOpt = None,
        config: ConfigOpt = None,
    ) -> None:
        """Write verified pins as JSON (to share a reviewed baseline)."""
        store = _open(state_dir, config)
        data: dict[str, Any] = {
            "format": EXPORT_FORMAT,
            "exported_at": time.time(),
            "upstreams": {},
        }
        for up in upstream or store.upstreams():
            loaded = store.load(up)
            if loaded.tampered:
                raise _fail(
                    f"upstream {up!r} fails verification ({loaded.tampered}); not exporting it"
                )
            data["upstreams"][up] = [pin_to_json(p) for p in loaded.pins.values()]
        text = json.dumps(data, indent=2, ensure_ascii=False)
        if output is None:
            typer.echo(text)
        else:
            output.write_text(text + "\n", encoding="utf-8")
            out.print(f"wrote {sum(len(v) for v in data['upstreams'].values())} pin(s) to {output}")

    @pins.command("import", epilog=example("mcpward pins import reviewed-pins.json"))
    def import_(
        file: Annotated[Path, typer.Argument(help="A file written by `mcpward pins export`.")],
        replace: Annotated[
            bool, typer.Option("--replace", help="Forget each upstream's pins first.")
        ] = False,
        state_dir: StateDirOpt = None,
        config: ConfigOpt = None,
    ) -> None:
        """Pin contracts from an export; every contract must match its hash."""
        store = _open(state_dir, config, must_exist=False)
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise _fail(f"{file}: cannot read an export: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
            raise _fail(f"{file}: not a {EXPORT_FORMAT} export")
        total = 0
        for up, rows in dict(data.get("upstreams") or {}).items():
            try:
                pins_ = [pin_from_json({**row, "upstream": up, "source": "import"}) for row in rows]
            except (KeyError, ValueError, TypeError) as exc:
                raise _fail(f"{file}: upstream {up!r}: malformed pin ({exc})") from None
            for pin in pins_:
                if contract_hash(pin.contract) != pin.hash:
                    raise _fail(
                        f"{file}: {pin.kind.value} {pin.name!r} of {up!r} does not match its hash"
                    )
            if replace:
                store.forget(up)
            store.write(up, put=pins_, baseline_kinds={p.kind for p in pins_} | {ItemKind.TOOL})
            total += len(pins_)
        out.print(f"imported {total} pin(s)")

    @app.command("holds", epilog=example("mcpward holds --state-dir ~/mcpward-demo/state"))
    def holds(
        upstream: Annotated[str | None, typer.Argument(help="Only this upstream.")] = None,
        state_dir: StateDirOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """What is held right now and why (readable while the gateway runs)."""
        context = _context(state_dir, config)
        if not _exists(context):
            if as_json:
                _print_json([])
            else:
                out.print(f"nothing is held (no pin store in {context.state_dir} yet)")
            return
        store = _open(state_dir, config)
        current = store.holds(upstream)
        if as_json:
            _print_json([hold_to_json(h) for h in current])
            return
        if not current:
            out.print("nothing is held")
            return
        enforced = [h for h in current if h.enforced]
        out.print(
            Text(
                f"{len(enforced)} open hold(s): calls to these are held until a person reviews "
                "them"
                + (
                    f" ({len(current) - len(enforced)} more only observed)"
                    if len(enforced) < len(current)
                    else ""
                ),
                style="bold red" if enforced else "bold",
            )
        )
        commands = _commands(state_dir, config)
        for hold in sorted(current, key=lambda h: (not h.enforced, -h.first_seen)):
            out.print(Text(f"\n- {hold_headline(hold)}", style="bold"))
            origin = hold.extra.get("provenance")
            if isinstance(origin, dict):
                pin = origin.get("pin") or {}
                out.print(
                    Text(
                        f"  pinned {pin.get('how', 'never')} {pin.get('at', '')}; server "
                        f"identity {identity_text(origin.get('server_identity'))}; posture "
                        f"{origin.get('posture')}"
                    )
                )
            verdict = verdict_of(hold)
            if verdict is not None:
                stamp = time.strftime(
                    "%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(verdict.get("at") or 0))
                )
                out.print(Text(f"  behaviour validated: {verdict.get('verdict')} at {stamp}"))
            out.print(Text(f"  review: {commands.review(hold)}\n  accept: {commands.accept(hold)}"))
        out.print()
        out.print(holds_table(current))
        out.print(Text(HOLD_MEANING, style="dim"))

    @app.command("diff", epilog=example("mcpward diff before.json after.json --posture strict"))
    def diff_files(
        old: Annotated[
            Path,
            typer.Argument(help='The earlier list: a JSON-RPC response or {"tools": [...]}.'),
        ],
        new: Annotated[Path, typer.Argument(help="The later list.")],
        posture: Annotated[
            Posture, typer.Option("--posture", "-p", help="monitor | guard | strict")
        ] = Posture.GUARD,
        new_tools: Annotated[
            str | None, typer.Option("--new-tools", help="tofu | review (default: the posture's)")
        ] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Classify the drift between two saved lists. Exit 0: no drift that holds; 1: the
        posture would hold; 2: an input is unusable."""
        if new_tools not in (None, "tofu", "review"):
            raise _fail("--new-tools must be tofu or review", 2)
        try:
            result = diff_snapshots(
                read_snapshot(old),
                read_snapshot(new),
                PostureTable(posture, None, new_tools),
                marker_scan(),
            )
        except SnapshotError as exc:
            raise _fail(str(exc), 2) from None
        if as_json:
            _print_json(snapshot_diff_json(result, posture.value))
        else:
            out.print(snapshot_diff_view(result))
        if result.verdict.holds:
            raise typer.Exit(1)

    @app.command(
        "snapshot",
        epilog=example("mcpward snapshot --config mcpward.yaml --server demo -o after.json"),
    )
    def snapshot(
        config: RequiredConfigOpt,
        server: Annotated[str, typer.Option("--server", "-s", help="The upstream id.")],
        output: OutputOpt = None,
        timeout: TimeoutOpt = 30.0,
    ) -> None:
        """Connect to one upstream directly (not through the gateway) and save its lists."""
        try:
            loaded = load_config(config)
        except ConfigError as exc:
            raise _fail(str(exc), 2) from None
        try:
            snap = asyncio.run(asyncio.wait_for(fetch_snapshot(loaded.config, server), timeout))
        except (SnapshotError, TimeoutError) as exc:
            raise _fail(f"snapshot of {server!r} failed: {exc or 'timed out'}", 2) from None
        if output is None:
            sys.stdout.write(
                json.dumps(snap.to_json(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"
            )
        else:
            write_snapshot(output, snap)
            counts = ", ".join(f"{len(v)} {k}" for k, v in snap.lists.items())
            out.print(f"wrote {output}: {counts}")


# -- reading an upstream's lists directly ------------------------------------------------------

_LISTS = (
    ("tools/list", "tools", "tools"),
    ("prompts/list", "prompts", "prompts"),
    ("resources/list", "resources", "resources"),
    ("resources/templates/list", "resources", "resourceTemplates"),
)
_MAX_PAGES = 100


async def fetch_snapshot(config: GatewayConfig, upstream_id: str) -> Snapshot:
    """Read every list of one upstream over a fresh connection (the gateway's own connector, so
    env, secrets and the egress filter apply exactly as when the gateway runs)."""
    from mcpward.upstreams.base import UpstreamUnavailable
    from mcpward.upstreams.connectors import make_connection
    from mcpward.upstreams.direct_client import DirectClient

    spec = next((u for u in config.upstreams if u.id == upstream_id), None)
    if spec is None:
        known = ", ".join(u.id for u in config.upstreams)
        raise SnapshotError(f"no upstream {upstream_id!r} in the config (known: {known})")
    conn = make_connection(spec, config.gateway)
    client = DirectClient(conn, "mcpward-snapshot")
    try:
        await conn.start()
        init = await client.initialize()
        if init is None:
            raise SnapshotError("the upstream refused initialize")
        raw_caps = init.get("capabilities")
        caps: dict[str, Any] = raw_caps if isinstance(raw_caps, dict) else {}
        snap = Snapshot(f"upstream {upstream_id}")
        snap.instructions = (
            init.get("instructions") if isinstance(init.get("instructions"), str) else None
        )
        snap.has_instructions = True
        snap.server = {
            "serverInfo": init.get("serverInfo"),
            "protocolVersion": init.get("protocolVersion"),
        }
        for method, capability, key in _LISTS:
            if capability in caps:
                snap.lists[key] = await client.list_all(method, key, _MAX_PAGES)
        if "tools" not in snap.lists:
            snap.lists["tools"] = []
        return snap
    except UpstreamUnavailable as exc:
        raise SnapshotError(f"upstream unavailable: {exc}") from None
    finally:
        await conn.close()
