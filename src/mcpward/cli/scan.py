"""`mcpward scan FILE`, `mcpward redact` and `mcpward eval detectors`: the content guards offline
(CI checks before adding a server, redaction of a text, the measured detection quality).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console

from mcpward.cli.options import JsonOpt, VerboseOpt, example
from mcpward.contracts.snapshot_file import LIST_KEYS, Snapshot, SnapshotError, parse_snapshot
from mcpward.guards.secrets import SecretsGuard, SecretsOptions
from mcpward.guards.tool_poisoning import ToolPoisoningGuard, ToolPoisoningOptions
from mcpward.guards.tool_shadowing import ToolShadowingOptions, find_shadowing
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.spec import GuardSpec

MAX_INPUT = 64 * 1024 * 1024
SINGLE = "default"


def load_upstreams(path: Path) -> dict[str, Snapshot]:
    """One saved list result, or several keyed by upstream id (for the shadowing check)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read: {exc.strerror}") from None
    if len(raw) > MAX_INPUT:
        raise SnapshotError(f"{path}: {len(raw)} bytes is over the {MAX_INPUT}-byte limit")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise SnapshotError(f"{path}: not valid JSON: {exc}") from None
    if isinstance(data, list):
        data = {"tools": data}
    if isinstance(data, Mapping) and ("jsonrpc" in data or any(k in data for k in LIST_KEYS)):
        return {SINGLE: parse_snapshot(data, str(path))}
    if isinstance(data, Mapping) and data and all(isinstance(v, Mapping) for v in data.values()):
        return {str(k): parse_snapshot(v, f"{path}[{k}]") for k, v in data.items()}
    raise SnapshotError(
        f'{path}: expected a tools/list result, {{"tools": [...]}}, '
        "or such results keyed by upstream id"
    )


def scan_upstreams(upstreams: dict[str, Snapshot]) -> dict[str, Any]:
    """What the list-phase guards would do: per upstream and item, findings and the verdict."""
    poisoning = ToolPoisoningGuard(
        GuardSpec(kind="tool_poisoning", runs_on=[Phase.TOOLS_LIST]), ToolPoisoningOptions()
    )
    shadow_options = ToolShadowingOptions()
    catalog = {uid: snap.lists.get("tools", []) for uid, snap in upstreams.items()}
    order = list(upstreams)
    report: dict[str, Any] = {"upstreams": {}, "would_drop": 0}
    for uid, snap in upstreams.items():
        entry: dict[str, Any] = {}
        for list_key, items in snap.lists.items():
            verdicts = poisoning.judge_all(items)
            shadowed = {}
            if list_key == "tools" and len(upstreams) > 1:
                shadowed = {
                    s.tool: s for s in find_shadowing(uid, items, catalog, order, shadow_options)
                }
            rows = []
            for verdict in verdicts:
                shadow = shadowed.get(verdict.name)
                drop = verdict.flagged or shadow is not None
                report["would_drop"] += int(drop)
                rows.append(
                    {
                        **verdict.describe(),
                        "poisoned": verdict.flagged,
                        "shadowing": shadow.describe() if shadow else None,
                        "would_drop": drop,
                    }
                )
            entry[list_key] = rows
        report["upstreams"][uid] = entry
    return report


def _print_scan(report: dict[str, Any], console: Console) -> None:
    for uid, lists in report["upstreams"].items():
        for list_key, rows in lists.items():
            console.print(f"[bold]{uid}[/bold] {list_key}: {len(rows)} item(s)", highlight=False)
            for row in rows:
                if not row["would_drop"] and not row["findings"]:
                    console.print(f"  [green]ok[/green]   {row['name']}", highlight=False)
                    continue
                mark = "[red]DROP[/red]" if row["would_drop"] else "[yellow]note[/yellow]"
                console.print(f"  {mark} {row['name']} (score {row['score']})", highlight=False)
                for f in row["findings"]:
                    console.print(
                        f"         {f['family']}/{f['rule']} at {f['field']} "
                        f"[{f['span'][0]}:{f['span'][1]}]",
                        highlight=False,
                        markup=False,
                    )
                if row["shadowing"]:
                    s = row["shadowing"]
                    console.print(
                        f"         shadowing: {s['reason']} with {s['other']} ({s['field']})",
                        highlight=False,
                        markup=False,
                    )
    total = report["would_drop"]
    console.print(f"{total} item(s) would be dropped" if total else "nothing would be dropped")


def register(app: typer.Typer) -> None:
    @app.command("scan", epilog=example("mcpward scan after.json --json"))
    def scan(
        file: Annotated[
            Path,
            typer.Argument(help="A saved tools/list result, or several keyed by upstream id."),
        ],
        as_json: JsonOpt = False,
    ) -> None:
        """Run tool_poisoning and tool_shadowing over a saved list.

        Exit 0 if nothing would be dropped, 1 if something would, 2 on error."""
        try:
            upstreams = load_upstreams(file)
        except SnapshotError as exc:
            Console(stderr=True).print(f"[red]{exc}[/red]", highlight=False)
            raise typer.Exit(2) from None
        report = scan_upstreams(upstreams)
        if as_json:
            typer.echo(json.dumps(report, indent=2, ensure_ascii=False))
        else:
            _print_scan(report, Console())
        raise typer.Exit(1 if report["would_drop"] else 0)

    @app.command("redact", epilog=example("mcpward redact --json < server-output.txt"))
    def redact(
        as_json: JsonOpt = False,
    ) -> None:
        """Read text on stdin and write it with the secrets guard's egress redaction applied.

        --json prints how many secrets of each kind were redacted instead of the text."""
        guard = SecretsGuard(
            GuardSpec(kind="secrets", runs_on=[Phase.TOOL_RESULT]), SecretsOptions()
        )
        data = sys.stdin.buffer.read(MAX_INPUT + 1)
        if len(data) > MAX_INPUT:
            Console(stderr=True).print(f"[red]input over {MAX_INPUT} bytes[/red]")
            raise typer.Exit(2)
        text = data.decode("utf-8", errors="replace")
        redacted, counts = guard.redact_counts(text)
        if as_json:
            typer.echo(
                json.dumps(
                    {"redactions": sum(counts.values()), "by_kind": dict(sorted(counts.items()))}
                )
            )
        else:
            sys.stdout.write(redacted)
            sys.stdout.flush()

    eval_app = typer.Typer(help="Measure the detectors on labelled corpora.", no_args_is_help=True)
    app.add_typer(eval_app, name="eval")

    @eval_app.command("detectors", epilog=example("mcpward eval detectors --split dev --markdown"))
    def detectors(
        as_json: JsonOpt = False,
        markdown: Annotated[
            bool, typer.Option("--markdown", help="Print a Markdown table.")
        ] = False,
        corpora: Annotated[
            Path | None, typer.Option("--corpora", help="Default: ../shared/corpora.")
        ] = None,
        real_servers: Annotated[
            Path | None, typer.Option("--real-servers", help="Default: tests/data/real_servers.")
        ] = None,
        verbose: VerboseOpt = False,
        split: Annotated[
            str,
            typer.Option(
                "--split",
                help="dev: compute only the development side (for tuning; held-out rows and "
                "their misses are never computed); all: every row.",
            ),
        ] = "all",
    ) -> None:
        """Run the guards over the corpora: TP/FP/FN/TN, precision, recall, FPR with 95% CIs."""
        from mcpward.evaluation.corpora import CorpusMissing
        from mcpward.evaluation.detectors import SPLITS, evaluate_all
        from mcpward.evaluation.report import markdown_table, rich_table

        if split not in ("dev", "all"):
            Console(stderr=True).print(f"[red]--split must be dev or all, not {split!r}[/red]")
            raise typer.Exit(2)
        try:
            rows = evaluate_all(corpora, real_servers, ("dev",) if split == "dev" else SPLITS)
        except CorpusMissing as exc:
            Console(stderr=True).print(f"[red]{exc}[/red]", highlight=False)
            raise typer.Exit(2) from None
        if as_json:
            typer.echo(json.dumps([r.as_dict() for r in rows], indent=2))
        elif markdown:
            typer.echo(markdown_table(rows), nl=False)
        else:
            Console(width=220).print(rich_table(rows))
        if verbose:
            err = Console(stderr=True)
            for row in rows:
                for item in row.missed:
                    err.print(
                        f"{row.guard} {row.split} {row.dataset}: {item}",
                        highlight=False,
                        markup=False,
                        soft_wrap=True,
                    )

    @eval_app.command("round5", epilog=example("mcpward eval round5 --verbose"))
    def round5_dev(
        rows_file: Annotated[
            Path | None,
            typer.Option("--rows", help="JSONL rows; default: our round-5 development set."),
        ] = None,
        verbose: VerboseOpt = False,
    ) -> None:
        """Round-5 rows (definitions, results, cross-server) through the default guards."""
        from mcpward.evaluation import round5

        cells = round5.tabulate(round5.load_rows(rows_file))
        typer.echo(round5.markdown(cells))
        if verbose:
            for key, cell in sorted(cells.items()):
                for miss in cell.misses:
                    typer.echo(f"{key}: {miss}", err=True)

    @eval_app.command("sealed", epilog=example("mcpward eval sealed --dir tests/evaluation/sealed"))
    def sealed(
        directory: Annotated[Path, typer.Option("--dir", help="The sealed set's folder.")] = Path(
            "tests/evaluation/sealed"
        ),
        stem: Annotated[str, typer.Option("--stem", help="The set's file stem.")] = "round5",
        verbose: VerboseOpt = False,
    ) -> None:
        """Open a sealed set in memory (checking its SHA-256) and run the default guards on it.
        Run it once, after the rules are final: the set is development data from then on."""
        from mcpward.evaluation import round5

        try:
            text = round5.open_sealed(directory, stem)
        except ValueError as exc:
            Console(stderr=True).print(f"[red]{exc}[/red]", highlight=False)
            raise typer.Exit(1) from None
        cells = round5.tabulate(round5.load_rows(text=text))
        typer.echo(round5.markdown(cells))
        if verbose:
            for key, cell in sorted(cells.items()):
                for miss in cell.misses:
                    typer.echo(f"{key}: {miss}", err=True)


__all__ = ["load_upstreams", "register", "scan_upstreams"]
