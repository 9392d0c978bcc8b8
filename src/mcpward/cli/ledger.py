"""`mcpward ledger verify|export|tail|checkpoint|rotate-key|public-key`, `stats`, `schema`.

Thin wiring over `mcpward.evidence`; verification never writes to the ledger or creates keys.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from mcpward.cli.options import ConfigOpt, JsonOpt, OutputOpt, SinceOpt, StateDirOpt, example
from mcpward.cli.store_context import StoreChoiceError, cli_store_context
from mcpward.config.loader import ConfigError, load_config
from mcpward.evidence.checkpoint import (
    CheckpointError,
    SignedCheckpoint,
    checkpoint_document,
    load_checkpoint_file,
    read_published_note,
    read_unverified,
)
from mcpward.evidence.export import (
    ExportError,
    export_jsonl,
    export_receipt_files,
    parse_since,
    read_jsonl,
)
from mcpward.evidence.ledger import Ledger, trusted_keys, verify_ledger
from mcpward.evidence.ledger_keys import local_verifier_key
from mcpward.evidence.schemas import SCHEMAS
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.source import LedgerSource as EvidenceLedgerSource
from mcpward.evidence.stats import Stats, compute_stats
from mcpward.evidence.verify import LedgerVerifier, VerifyReport
from mcpward.evidence.vocabulary import LedgerState
from mcpward.store.keys import KeyFileError
from mcpward.store.ledger_sqlite import LedgerStoreError
from mcpward.store.paths import resolve_state_dir

EXIT_OK = 0
EXIT_BAD = 1  # tampered, truncated, or receipt files not intact
EXIT_UNSIGNED = 2  # unsigned or empty: nothing wrong found, nothing proven either
EXIT_ERROR = 3  # could not read what was given

err = Console(stderr=True)


class ExportFormat(StrEnum):
    jsonl = "jsonl"
    receipts = "receipts"


class SchemaName(StrEnum):
    receipt = "receipt"
    checkpoint = "checkpoint"
    config = "config"


def _fail(message: str, code: int = EXIT_ERROR) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(code)


class LedgerSource(EvidenceLedgerSource):
    """`evidence.source.LedgerSource` for commands: a missing SQLite ledger is a CLI error."""

    __slots__ = ()

    def open(self) -> Ledger:
        if not self.exists():
            raise _fail(f"no ledger at {self.paths.ledger}")
        return self.open_ledger()


def ledger_source(config: Path | None, state_dir: Path | None) -> LedgerSource:
    """The ledger of a config file (its state dir, `evidence.path`, `store:` and `keys:`), else
    of the state directory."""
    if config is None:
        return LedgerSource(EvidencePaths.resolve(resolve_state_dir(state_dir)))
    try:
        loaded = load_config(config)
        context = cli_store_context(state_dir, config)
    except (ConfigError, StoreChoiceError) as exc:
        raise _fail(str(exc)) from None
    paths = EvidencePaths.resolve(context.state_dir, loaded.config.evidence.path, store=context)
    return LedgerSource(paths, context)


def evidence_paths(config: Path | None, state_dir: Path | None) -> EvidencePaths:
    """Where the ledger's files and keys are: from a config file, else the state directory."""
    return ledger_source(config, state_dir).paths


def _since(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_since(value, time.time())
    except ExportError as exc:
        raise _fail(str(exc)) from None


def _print_report(report: VerifyReport, console: Console) -> None:
    colour = {"ok": "green", "unsigned": "yellow", "empty": "yellow"}.get(report.state.value, "red")
    console.print(
        f"[bold {colour}]{report.state.value}[/bold {colour}]: {report.message}", highlight=False
    )
    if report.first_bad_seq is not None:
        console.print(f"  first bad sequence number: {report.first_bad_seq}", highlight=False)
    hmacs = "checked" if report.hmac_checked else "not checked"
    console.print(f"  durability: {_durability_text(report.durability)}", highlight=False)
    console.print(
        f"  entries {report.entries}; valid checkpoints {report.checkpoints_valid}"
        f" (largest {report.checkpoint_size}); HMACs {hmacs}",
        highlight=False,
    )
    files = report.receipt_files
    if files is not None:
        colour = "green" if files.state.value == "ok" else "red"
        console.print(
            f"  receipt files: [{colour}]{files.state.value}[/{colour}] ({files.checked} checked, "
            f"{len(files.missing)} missing, {len(files.tampered)} tampered, "
            f"{len(files.not_linked)} not linked)",
            highlight=False,
        )


def _name_published(report: VerifyReport, note: str, path: Path) -> None:
    """Say so when the state directory's checkpoint.latest is what shows a cut (the checkpoints
    stored in the ledger went with the entries)."""
    if report.state is not LedgerState.TRUNCATED:
        return
    try:
        size = read_unverified(note).size
    except CheckpointError:
        return
    if size == report.checkpoint_size:
        report.message += (
            f" (the checkpoint in {path}; the ledger's own stored checkpoints do not reach it)"
        )


def _exit_code(report: VerifyReport) -> int:
    if report.state in (LedgerState.TAMPERED, LedgerState.TRUNCATED):
        return EXIT_BAD
    if report.receipt_files is not None and not report.ok and report.state is LedgerState.OK:
        return EXIT_BAD
    if report.state in (LedgerState.UNSIGNED, LedgerState.EMPTY):
        return EXIT_UNSIGNED
    return EXIT_OK


def _verify_jsonl(
    path: Path,
    paths: EvidencePaths,
    public_keys: list[Path],
    notes: list[str],
    use_hmac: bool,
    receipts: Path | None,
    since: float | None,
) -> VerifyReport:
    exported = read_jsonl(path)
    if not notes and paths.latest_checkpoint.exists():
        notes = [paths.latest_checkpoint.read_text(encoding="utf-8")]
    verifiers, keyring = trusted_keys(paths, public_keys, use_hmac)
    verifier = LedgerVerifier(verifiers=verifiers, keyring=keyring)
    return verifier.verify(
        exported.entries,
        notes,
        start_seq=None,
        start_prev=exported.start_prev,
        receipts_dir=receipts,
        receipts_since=since,
    )


def register(app: typer.Typer) -> None:
    ledger_app = typer.Typer(
        help="Verify, export and follow the decision ledger.", no_args_is_help=True
    )
    app.add_typer(ledger_app, name="ledger")

    @ledger_app.command(
        "verify", epilog=example("mcpward ledger verify --checkpoint published.note")
    )
    def verify(
        as_json: JsonOpt = False,
        checkpoint: Annotated[
            list[Path] | None,
            typer.Option(help="A checkpoint published earlier (note or JSON); repeatable."),
        ] = None,
        public_key: Annotated[
            list[Path] | None,
            typer.Option(help="Trusted verifier key file (default: the state dir's); repeatable."),
        ] = None,
        ledger: Annotated[
            Path | None,
            typer.Option(help="A ledger database or a JSONL export (default: the gateway's)."),
        ] = None,
        receipts: Annotated[
            Path | None,
            typer.Option(help="A directory of exported receipt files to check against the ledger."),
        ] = None,
        since: SinceOpt = None,
        no_hmac: Annotated[
            bool, typer.Option("--no-hmac", help="Do not check HMACs (verify as an outsider).")
        ] = False,
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
    ) -> None:
        """Check the ledger: ok | tampered | truncated | unsigned | empty (exit 0|1|1|2|2).

        With --receipts, --since checks only the receipts newer than that."""
        source = ledger_source(config, state_dir)
        paths = source.paths
        keys = public_key or []
        try:
            notes = [load_checkpoint_file(p) for p in checkpoint or []]
            after = _since(since)
            if ledger is not None and ledger.suffix in (".jsonl", ".ndjson"):
                report = _verify_jsonl(ledger, paths, keys, notes, not no_hmac, receipts, after)
            else:
                published = None
                if ledger is not None and ledger.resolve() != paths.ledger.resolve():
                    source = LedgerSource(replace(paths, ledger=ledger))
                else:  # the gateway's own ledger: its state dir's checkpoint.latest too
                    published = read_published_note(paths.latest_checkpoint)
                report = verify_ledger(
                    source.paths,
                    view_of=source.snapshot() if source.postgres else None,
                    public_keys=keys,
                    checkpoint_notes=[*notes, *([published] if published else [])],
                    use_hmac=not no_hmac,
                    receipts_dir=receipts,
                    receipts_since=after,
                )
                if published is not None:
                    _name_published(report, published, paths.latest_checkpoint)
        except (
            OSError,
            ValueError,
            KeyFileError,
            LedgerStoreError,
            CheckpointError,
            ExportError,
        ) as exc:
            raise _fail(str(exc)) from None
        if as_json:
            typer.echo(json.dumps(report.to_dict(), indent=2))
        else:
            _print_report(report, Console())
        raise typer.Exit(_exit_code(report))

    @ledger_app.command(
        "export", epilog=example("mcpward ledger export --since 7d -o decisions.jsonl")
    )
    def export(
        fmt: Annotated[
            ExportFormat, typer.Option("--format", help="jsonl, or receipts (one file each).")
        ] = ExportFormat.jsonl,
        since: SinceOpt = None,
        output: OutputOpt = None,
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
    ) -> None:
        """Export entries as JSON Lines (SIEM) or receipts as files (for `verify --receipts`).

        --format receipts writes one file per receipt into the --output directory."""
        source = ledger_source(config, state_dir)
        after = _since(since)
        if fmt is ExportFormat.receipts and output is None:
            raise _fail("--format receipts needs --output DIR")
        try:
            with source.snapshot() as view:
                if fmt is ExportFormat.receipts:
                    assert output is not None
                    count = export_receipt_files(view, output, after)
                elif output is None:
                    count = export_jsonl(view, sys.stdout.buffer, after)
                    sys.stdout.buffer.flush()
                else:
                    with output.open("wb") as handle:
                        count = export_jsonl(view, handle, after)
        except (OSError, LedgerStoreError, ExportError) as exc:
            raise _fail(str(exc)) from None
        what = "receipt(s)" if fmt is ExportFormat.receipts else "entries"
        err.print(f"exported {count} {what}")

    @ledger_app.command("tail", epilog=example("mcpward ledger tail -n 20"))
    def tail(
        lines: Annotated[
            int, typer.Option("--lines", "-n", min=0, help="Show this many recent entries first.")
        ] = 10,
        follow: Annotated[
            bool, typer.Option("--follow/--no-follow", help="Keep printing new entries.")
        ] = True,
        as_json: JsonOpt = False,
        interval: Annotated[
            float, typer.Option(min=0.05, help="Seconds between polls while following.")
        ] = 0.5,
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
    ) -> None:
        """Show the latest entries and follow new ones (Ctrl-C to stop)."""
        source = ledger_source(config, state_dir)
        console = Console(highlight=False, soft_wrap=True)
        try:
            with source.snapshot() as view:
                recent = view.last_entries(lines) if lines else []
                next_seq = view.size()
            for stored in recent:
                _print_entry(orjson.loads(stored.body), as_json, console)
            while follow:
                time.sleep(interval)
                with source.snapshot() as view:
                    fresh = list(view.entries(start_seq=next_seq))
                for stored in fresh:
                    _print_entry(orjson.loads(stored.body), as_json, console)
                    next_seq = stored.seq + 1
        except KeyboardInterrupt:
            return
        except (OSError, LedgerStoreError) as exc:
            raise _fail(str(exc)) from None

    @ledger_app.command("checkpoint", epilog=example("mcpward ledger checkpoint -o published.note"))
    def checkpoint_cmd(
        output: OutputOpt = None,
        as_json: JsonOpt = False,
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
    ) -> None:
        """Sign a checkpoint now (or show the latest if nothing changed) and export it.

        The signed note is printed; --output also writes it to a file."""
        source = ledger_source(config, state_dir)
        try:
            ledger = source.open()
            try:
                ledger.checkpoint()
                latest = ledger.latest_checkpoint()
                signer = ledger.signer.verifier()
            finally:
                ledger.close()
        except (OSError, KeyFileError, LedgerStoreError) as exc:
            raise _fail(str(exc)) from None
        if latest is None:
            raise _fail("the ledger is empty; there is nothing to sign", EXIT_UNSIGNED)
        if output is not None:
            output.write_text(latest.note, encoding="utf-8")
        if as_json:
            signed = SignedCheckpoint(read_unverified(latest.note), latest.note)
            typer.echo(json.dumps(checkpoint_document(signed, signer), indent=2))
        else:
            typer.echo(latest.note, nl=False)

    @ledger_app.command(
        "rotate-key", epilog=example("mcpward ledger rotate-key --config mcpward.yaml")
    )
    def rotate_key(config: ConfigOpt = None, state_dir: StateDirOpt = None) -> None:
        """Start a new HMAC key; the rotation is recorded in the ledger, old keys are kept."""
        source = ledger_source(config, state_dir)
        try:
            ledger = source.open()
            try:
                rotation = ledger.rotate_key()
                ledger.checkpoint()
            finally:
                ledger.close()
        except (OSError, KeyFileError, LedgerStoreError) as exc:
            raise _fail(str(exc)) from None
        typer.echo(
            f"rotated HMAC key {rotation.old_key_id} -> {rotation.new_key_id} "
            f"(entry {rotation.seq})"
        )

    @ledger_app.command("public-key", epilog=example("mcpward ledger public-key"))
    def public_key_cmd(config: ConfigOpt = None, state_dir: StateDirOpt = None) -> None:
        """Print the checkpoint verifier key to publish (outsiders verify with it)."""
        paths = evidence_paths(config, state_dir)
        try:
            key = local_verifier_key(paths)
        except (OSError, KeyFileError) as exc:
            raise _fail(str(exc)) from None
        if key is None:
            raise _fail(f"no key yet at {paths.public_key}; it is created with the ledger")
        typer.echo(key)

    @app.command("stats", epilog=example("mcpward stats --since 7d"))
    def stats_cmd(
        since: SinceOpt = "30d",
        as_json: JsonOpt = False,
        config: ConfigOpt = None,
        state_dir: StateDirOpt = None,
    ) -> None:
        """A local card of the gateway's decisions over the last 30 days."""
        source = ledger_source(config, state_dir)
        now = time.time()
        start = _since(since)
        assert start is not None
        try:
            with source.snapshot() as view:
                stats = compute_stats(view.entries(since=start), start, now)
                stats.durability = [(span.since_seq, span.level) for span in view.durability()]
        except (OSError, LedgerStoreError) as exc:
            raise _fail(str(exc)) from None
        if as_json:
            typer.echo(json.dumps(stats.to_dict(), indent=2))
        else:
            _print_stats(stats, Console(highlight=False))

    @app.command("schema", epilog=example("mcpward schema receipt"))
    def schema_cmd(
        name: Annotated[SchemaName, typer.Argument(help="receipt, checkpoint or config")],
    ) -> None:
        """Print a JSON Schema (Draft 2020-12, versioned $id)."""
        typer.echo(json.dumps(SCHEMAS[name.value](), indent=2))


def _print_entry(entry: dict[str, Any], as_json: bool, console: Console) -> None:
    if as_json:
        typer.echo(orjson.dumps(entry).decode())
        return
    if entry.get("kind") != "receipt":
        console.print(
            f"{entry.get('seq'):>7} {entry.get('time')} "
            f"[cyan]{entry.get('kind')}[/cyan] {entry.get('event')}"
        )
        return
    receipt = entry["receipt"]
    decision = str(receipt.get("decision"))
    colour = {"allow": "green", "deny": "red", "hold": "yellow", "error": "red"}.get(
        decision, "magenta"
    )
    target = "/".join(str(x) for x in (receipt.get("upstream"), receipt.get("name")) if x)
    stopper = f" by {receipt['stopped_by']}" if receipt.get("stopped_by") else ""
    latency = receipt.get("gateway_ms")
    console.print(
        f"{entry.get('seq'):>7} {receipt.get('time')} [{colour}]{decision:<18}[/{colour}] "
        f"{receipt.get('method')} {target}{stopper}"
        + (f" ({latency} ms)" if latency is not None else "")
    )


def _print_stats(stats: Stats, console: Console) -> None:
    console.print(
        f"[bold]mcpward, last {round((stats.until - stats.since) / 86400, 1)} days[/bold]: "
        f"{stats.decisions} decisions, {stats.calls} calls"
    )
    console.print(f"  receipts written with durability: {_durability_text(stats.durability)}")
    table = Table("decision", "count")
    for decision, count in stats.by_decision.most_common():
        table.add_row(decision, str(count))
    console.print(table)
    for title, counter in (
        ("denials by guard", stats.denials_by_guard),
        ("denials by upstream", stats.denials_by_upstream),
        ("holds by guard", stats.holds_by_guard),
        ("holds by upstream", stats.holds_by_upstream),
        ("would stop (shadow) by guard", stats.shadow_by_guard),
        ("upstream errors", stats.errors_by_upstream),
        ("redactions by reason", stats.redactions_by_reason),
        ("redactions by pattern", stats.redactions_by_pattern),
    ):
        if counter:
            console.print(f"{title}: " + ", ".join(f"{k} {v}" for k, v in counter.most_common()))
    for name, values in stats.latency().items():
        shown = ", ".join(f"{k} {v if v is None else round(v, 3)}" for k, v in values.items())
        console.print(f"{name}: {shown}")


def _durability_text(spans: list[tuple[int, str]]) -> str:
    """ "crash_safe from seq 0, sync from seq 120", or that the ledger predates the record."""
    if not spans:
        return "not recorded (written before durability levels were recorded)"
    text = ", ".join(f"{level} from seq {seq}" for seq, level in spans)
    return text if spans[0][0] == 0 else f"not recorded before seq {spans[0][0]}, {text}"
