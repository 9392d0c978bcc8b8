"""`mcpward demo`: the demo server behind a real gateway process, driven by the MCP SDK client.

Each step is an async function of one `DemoRun`; later features append steps to `DEFAULT_STEPS`.
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from mcpward.contracts.hold_walkthrough import accept_held_call, show_held_call
from mcpward.demo.server import FAKE_SECRETS, REWORD_TOOL, write_control
from mcpward.evidence.export import iter_receipts
from mcpward.evidence.ledger import Ledger, verify_ledger
from mcpward.evidence.settings import EvidencePaths
from mcpward.guards.defaults import default_guard_specs
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.spec import GuardSpec
from mcpward.protocol.errors import DENIED, HOLD
from mcpward.store.ledger_sqlite import read_snapshot

DemoMode = Literal["auto", "legacy", "2026-07-28"]
UPSTREAM_ID = "demo"
DENIED_TOOL = "delete_file"
# The demo's files, all inside one work directory.
CONFIG_FILE = "mcpward.yaml"
CONTROL_FILE = "control.json"
STATE_DIR = "state"
GATEWAY_LOG = "gateway.log"
GATEWAY_STDERR = "gateway.stderr"
# Generous: the first start imports the SDK twice (gateway and demo server) on a cold machine.
CALL_TIMEOUT_S = 60.0


class StepFailed(Exception):
    """The gateway did something other than what the step demonstrates; the demo exits 1."""


@dataclass
class DemoRun:
    """Everything a step may use: the live client, the files behind the gateway, and output."""

    console: Console
    workdir: Path
    config_path: Path
    control_path: Path
    state_dir: Path
    guards: list[GuardSpec]
    gateway_log: Path
    client: Client

    def runs_at(self, phase: Phase) -> list[GuardSpec]:
        return [g for g in self.guards if g.enabled and phase in g.runs_on]

    def say(self, text: str) -> None:
        self.console.print(text, highlight=False)


Step = Callable[[DemoRun], Awaitable[None]]


def demo_guards() -> list[GuardSpec]:
    """The built-in default guards plus one tool_filter rule that hides and denies delete_file."""
    guards = default_guard_specs()
    taken = {g.id or g.kind for g in guards}
    guards.append(
        GuardSpec(
            kind="tool_filter",
            id="tool_filter" if "tool_filter" not in taken else "demo_tool_filter",
            priority=10,
            runs_on=[Phase.TOOLS_LIST, Phase.TOOL_INVOKE],
            config={"rules": [{"upstream": "*", "deny": [DENIED_TOOL]}]},
        )
    )
    return guards


def write_demo_config(workdir: Path, guards: Sequence[GuardSpec]) -> Path:
    """The gateway config: one stdio upstream (the demo server), state and log in `workdir`."""
    config: dict[str, Any] = {
        "version": 1,
        "front": {"kind": "stdio"},
        "upstreams": [
            {
                "id": UPSTREAM_ID,
                "kind": "stdio",
                "command": sys.executable,
                "args": ["-m", "mcpward.demo.server", "--control", str(workdir / CONTROL_FILE)],
            }
        ],
        "guards": [g.model_dump(mode="json", exclude_none=True) for g in guards],
        "state_dir": str(workdir / STATE_DIR),
        "logging": {"level": "info", "file": str(workdir / GATEWAY_LOG)},
    }
    path = workdir / CONFIG_FILE
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def _hints(annotations: Any) -> str:
    if annotations is None:
        return "[dim]none[/dim]"
    if annotations.read_only_hint:
        return "read-only"
    if annotations.destructive_hint is not False:
        return "[bold red]destructive[/bold red]"
    return "writes"


async def step_list_tools(run: DemoRun) -> None:
    """What the client may see: tools/list through the gateway."""
    tools = (await run.client.list_tools()).tools
    table = Table(title="tools the client sees", title_justify="left")
    table.add_column("tool", style="bold")
    table.add_column("hints")
    table.add_column("description")
    for tool in tools:
        table.add_row(escape(tool.name), _hints(tool.annotations), escape(tool.description or ""))
    run.console.print(table)
    names = {t.name for t in tools}
    if DENIED_TOOL in names:
        raise StepFailed(f"{DENIED_TOOL} is listed although the tool_filter guard hides it")
    run.say(
        f"[dim]The demo server also has [bold]{DENIED_TOOL}[/bold] (annotated destructive); "
        "the tool_filter guard hid it from the list.[/dim]"
    )


async def step_call_passes(run: DemoRun) -> None:
    """A harmless call passes through."""
    result = await run.client.call_tool("add", {"a": 2, "b": 3})
    if result.is_error:
        raise StepFailed(f"add failed: {_text_of(result)}")
    run.say(f"call [bold]add[/bold](a=2, b=3) -> [green]{escape(_text_of(result))}[/green]")
    result = await run.client.call_tool("echo", {"message": "hello through mcpward"})
    run.say(f"call [bold]echo[/bold](message=...) -> [green]{escape(_text_of(result))}[/green]")


async def step_call_denied(run: DemoRun) -> None:
    """A destructive call is denied by a guard, never forwarded."""
    run.say(f"call [bold]{DENIED_TOOL}[/bold](path='/etc/passwd') - a client that knows the name")
    try:
        result = await run.client.call_tool(DENIED_TOOL, {"path": "/etc/passwd"})
    except MCPError as exc:
        if exc.code != DENIED:
            raise StepFailed(
                f"expected error {DENIED} (denied), got {exc.code}: {exc.message}"
            ) from None
        data = exc.data if isinstance(exc.data, dict) else {}
        table = Table.grid(padding=(0, 2))
        table.add_row("JSON-RPC error", f"[bold red]{exc.code}[/bold red] {escape(exc.message)}")
        for key in ("guard", "code", "message"):
            if key in data:
                table.add_row(f"data.{key}", escape(str(data[key])))
        run.console.print(Panel(table, title="denied by the gateway", border_style="red"))
        return
    raise StepFailed(f"{DENIED_TOOL} was not denied; the upstream answered: {_text_of(result)}")


async def step_secret_redacted(run: DemoRun) -> None:
    """A result carrying (fake) credentials is redacted."""
    result = await run.client.call_tool("read_config", {})
    text = _text_of(result)
    leaked = [s for s in FAKE_SECRETS if s in text]
    run.console.print(
        Panel(escape(text.rstrip()), title="read_config result as the client sees it")
    )
    if not leaked:
        run.say("[green]The fake API keys were redacted before they reached the client.[/green]")
        return
    if not (run.runs_at(Phase.TOOL_RESULT) or run.runs_at(Phase.RESPONSE)):
        run.say(
            "[yellow]Note:[/yellow] no guard inspects tool results in this build, "
            "so the fake keys passed through."
        )
        return
    raise StepFailed(f"{len(leaked)} fake credential(s) reached the client unredacted")


async def step_rug_pull_held(run: DemoRun) -> None:
    """The server silently adds a required parameter: the next call is held until reviewed."""
    write_control(run.control_path, drift=True, notify=True)
    run.say("The demo server now requires a new parameter [bold]token[/bold] on [bold]echo[/bold].")
    await run.client.list_tools()  # what a host does when it hears list_changed
    try:
        result = await run.client.call_tool("echo", {"message": "hi", "token": "t"})
    except MCPError as exc:
        if exc.code != HOLD:
            raise StepFailed(
                f"expected error {HOLD} (hold), got {exc.code}: {exc.message}"
            ) from None
        data = exc.data if isinstance(exc.data, dict) else {}
        show_held_call(run.console, run.state_dir, data)
        command = accept_held_call(run.state_dir, data)
        run.say(f"reviewed and accepted, as with: [bold]{escape(command)}[/bold]")
        result = await run.client.call_tool("echo", {"message": "hi", "token": "t"})
        if result.is_error:
            raise StepFailed(f"echo still fails after accept: {_text_of(result)}") from None
        run.say(f"call [bold]echo[/bold] again -> [green]{escape(_text_of(result))}[/green]")
        return
    raise StepFailed(f"the drifted call was not held; the upstream answered: {_text_of(result)}")


async def step_hold_left_open(run: DemoRun) -> None:
    """A second rug pull is held and left open for you to review (demo --keep)."""
    write_control(run.control_path, drift=True, notify=True, reword=True)
    run.say(
        f"The demo server now rewrites [bold]{REWORD_TOOL}[/bold]'s description: it asks the "
        "model to send ~/.aws/credentials along."
    )
    listed = {t.name for t in (await run.client.list_tools()).tools}
    if REWORD_TOOL not in listed:
        run.say(
            f"[dim]{REWORD_TOOL} is no longer listed: its new description looks poisoned, so "
            "it stays out of the list until a person reviews it.[/dim]"
        )
    try:
        result = await run.client.call_tool(REWORD_TOOL, {})
    except MCPError as exc:
        if exc.code != HOLD:
            raise StepFailed(
                f"expected error {HOLD} (hold), got {exc.code}: {exc.message}"
            ) from None
        show_held_call(run.console, run.state_dir, exc.data if isinstance(exc.data, dict) else {})
        state = escape(shlex.quote(str(run.state_dir)))
        run.console.print(  # soft_wrap: each command stays on one line, to copy as printed
            "[bold]Not accepted:[/bold] this hold stays open for you. Review it with\n"
            f"  mcpward holds --state-dir {state}\n"
            f"  mcpward console --state-dir {state}",
            soft_wrap=True,
            highlight=False,
        )
        return
    raise StepFailed(
        f"the reworded {REWORD_TOOL} was not held; the upstream answered: {_text_of(result)}"
    )


def _checkpoint_and_verify(state_dir: Path) -> str:
    """Sign a checkpoint now and verify the whole ledger as `mcpward ledger verify` would."""
    paths = EvidencePaths.resolve(state_dir)
    ledger = Ledger.open(paths)
    try:
        ledger.checkpoint()
    finally:
        ledger.close()
    return verify_ledger(paths).state.value


async def step_receipts_verified(run: DemoRun) -> None:
    """Every decision left a receipt in the tamper-evident ledger, and it verifies."""
    paths = EvidencePaths.resolve(run.state_dir)
    with read_snapshot(paths.ledger) as view:
        receipts = list(iter_receipts(view))
    if not receipts:
        raise StepFailed("the ledger holds no receipts")
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
    for column in ("decision", "method", "name", "stopped by", "input hash"):
        table.add_column(column)
    for receipt in receipts[-12:]:
        decision = str(receipt.get("decision"))
        style = "green" if decision == "allow" else "yellow" if decision == "modify" else "red"
        table.add_row(
            f"[{style}]{escape(decision)}[/{style}]",
            escape(str(receipt.get("method"))),
            escape(str(receipt.get("name") or "")),
            escape(str(receipt.get("stopped_by") or "")),
            escape(str(receipt.get("input_hash") or "")[:16]),
        )
    run.console.print(table)
    state = await asyncio.to_thread(_checkpoint_and_verify, run.state_dir)
    if state != "ok":
        raise StepFailed(f"mcpward ledger verify says {state}, not ok")
    run.say(
        f"{len(receipts)} receipts; [bold]mcpward ledger verify[/bold] -> [green]{state}[/green]"
    )


DEFAULT_STEPS: list[Step] = [
    step_list_tools,
    step_call_passes,
    step_call_denied,
    step_secret_redacted,
    step_rug_pull_held,
    step_receipts_verified,
]


def steps_for(*, keep: bool) -> list[Step]:
    """The demo's steps; a kept run also leaves one hold open for the console (before the
    receipts, so its held call is among them)."""
    if not keep:
        return list(DEFAULT_STEPS)
    steps = [s for s in DEFAULT_STEPS if s is not step_receipts_verified]
    return [*steps, step_hold_left_open, step_receipts_verified]


def _title(step: Step) -> str:
    doc = (step.__doc__ or step.__name__).strip().splitlines()[0]
    return doc.rstrip(".")


def _gateway_params(config_path: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "mcpward.cli.main", "run", "--config", str(config_path)]
    )


def _tail(path: Path, lines: int = 15) -> str:
    try:
        content = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return ""
    return "\n".join(content[-lines:])


async def run_walkthrough(
    console: Console,
    *,
    mode: DemoMode = "auto",
    steps: Sequence[Step] | None = None,
    keep: bool = False,
    workdir: Path | None = None,
) -> int:
    """Run the steps against a fresh gateway + demo server; 0 if every step showed what it
    should, 1 otherwise. Files go to `workdir` (kept) or a temporary directory (removed unless
    `keep` or a step failed)."""
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
        keep = True
    else:
        workdir = Path(tempfile.mkdtemp(prefix="mcpward-demo-"))
    guards = demo_guards()
    config_path = write_demo_config(workdir, guards)
    stderr_path = workdir / GATEWAY_STDERR
    console.print(
        Panel(
            "The bundled demo MCP server runs behind [bold]mcpward run[/bold]; a real MCP client "
            "(the SDK) talks to the gateway over stdio.\n"
            f"guards: {', '.join(f'{g.id or g.kind} ({g.kind})' for g in guards)}",
            title="mcpward demo",
            border_style="cyan",
        )
    )
    status = 0
    try:
        with stderr_path.open("w", encoding="utf-8") as errlog:
            chosen = steps if steps is not None else steps_for(keep=keep)
            status = await _drive(console, workdir, config_path, guards, mode, chosen, errlog)
    finally:
        if status != 0:
            tail = _tail(workdir / GATEWAY_LOG) or _tail(stderr_path)
            if tail:
                console.print(Panel(escape(tail), title="gateway log (last lines)", style="dim"))
        if keep or status != 0:
            console.print(f"[dim]demo files kept in {workdir}[/dim]", highlight=False)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if status == 0:
        console.rule("[bold]next: the console", align="left")
        # soft_wrap: the commands stay on one line each, so they can be copied as printed
        console.print(console_pointer(config_path, kept=keep), soft_wrap=True)
    return status


def console_pointer(config_path: Path, *, kept: bool) -> Text:
    """How to open the review console on what the demo recorded (its pins, receipts, ledger)."""
    text = Text("See the holds, pins, receipts and ledger of this run in the browser:\n")
    config = shlex.quote(str(config_path))
    if not kept:  # this run's files are gone: a kept run prints its own directory
        text.append(
            "  mcpward demo --keep   (keeps the demo's state, with one hold left open for you)\n"
        )
        config = f"DEMO_DIR/{config_path.name}"
    else:
        text.append(f"  mcpward holds --config {config}   (the hold left open)\n")
    text.append(
        f"  mcpward console --config {config}\n"
        "then open http://127.0.0.1:8932/ and sign in with the token whose file it names."
    )
    return text


async def _drive(
    console: Console,
    workdir: Path,
    config_path: Path,
    guards: list[GuardSpec],
    mode: DemoMode,
    steps: Sequence[Step],
    errlog: TextIO,
) -> int:
    failures = 0
    async with AsyncExitStack() as stack:
        try:
            client = await stack.enter_async_context(
                Client(
                    stdio_client(_gateway_params(config_path), errlog=errlog),
                    mode=mode,
                    cache=None,
                    read_timeout_seconds=CALL_TIMEOUT_S,
                )
            )
        except Exception as exc:
            console.print(
                f"[red]could not start the gateway: {escape(str(exc) or type(exc).__name__)}"
            )
            return 1
        run = DemoRun(
            console=console,
            workdir=workdir,
            config_path=config_path,
            control_path=workdir / CONTROL_FILE,
            state_dir=workdir / STATE_DIR,
            guards=guards,
            gateway_log=workdir / GATEWAY_LOG,
            client=client,
        )
        console.print(f"[dim]connected: protocol {client.protocol_version}[/dim]", highlight=False)
        for number, step in enumerate(steps, start=1):
            console.rule(f"[bold]{number}. {escape(_title(step))}", align="left")
            try:
                await step(run)
            except StepFailed as exc:
                failures += 1
                console.print(f"[bold red]step failed:[/bold red] {escape(str(exc))}")
            except MCPError as exc:
                failures += 1
                console.print(
                    f"[bold red]step failed with a protocol error:[/bold red] "
                    f"{exc.code} {escape(exc.message)}"
                )
    console.rule()
    if failures:
        console.print(f"[bold red]{failures} step(s) did not show what they should.[/bold red]")
        return 1
    console.print("[bold green]Demo complete.[/bold green]")
    return 0
