"""`mcpward guard check|wit`: validate a WebAssembly guard against the contract, print the contract.

`check` compiles the component, checks its exports and imports, instantiates it under the default
limits, and prints the SHA-256 to pin in the config; it exits 1 with the reason otherwise.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from mcpward.cli.options import StateDirOpt, example
from mcpward.guards.wasm.contract import CONTRACT_VERSION, wit_text


def register(app: typer.Typer) -> None:
    guard_app = typer.Typer(help="Write and check WebAssembly guards.", no_args_is_help=True)
    app.add_typer(guard_app, name="guard")

    @guard_app.command("check", epilog=example("mcpward guard check my-guard.wasm"))
    def check(
        file: Annotated[Path, typer.Argument(help="The guard component (.wasm).")],
        state_dir: StateDirOpt = None,
    ) -> None:
        """Check FILE against mcp:security-guard and print the sha256 for the config.

        The compiled code is cached in the state directory."""
        out = Console(soft_wrap=True)
        err = Console(stderr=True, soft_wrap=True)
        # Imported here: loading wasmtime costs ~90 ms that other commands need not pay.
        from mcpward.guards.wasm.cache import CompiledCache
        from mcpward.guards.wasm.engine import shared_runtime
        from mcpward.guards.wasm.errors import WasmCallError, WasmGuardLoadError
        from mcpward.guards.wasm.guard import MIB, WasmGuardOptions
        from mcpward.guards.wasm.host import HostFunctions
        from mcpward.guards.wasm.loader import load_module, read_module
        from mcpward.guards.wasm.metrics import GuardMetrics
        from mcpward.guards.wasm.sandbox import GuardSandbox, SandboxLimits
        from mcpward.store.paths import resolve_state_dir

        try:
            sha256 = hashlib.sha256(read_module(file)).hexdigest()
            runtime = shared_runtime()
            cache = CompiledCache(resolve_state_dir(state_dir), runtime.cache_tag)
            if file.stat().st_size > 1024 * 1024:
                err.print(
                    f"compiling {escape(str(file))} (large guards take a while the first time)…"
                )
            module = load_module(runtime, file, sha256, allow_wasi=True, cache=cache)
            defaults = WasmGuardOptions.model_fields
            limits = SandboxLimits(
                fuel=defaults["fuel"].default,
                memory_bytes=defaults["memory_limit_mb"].default * MIB,
                instances=defaults["max_instances"].default,
                tables=defaults["max_tables"].default,
                table_elements=defaults["max_table_elements"].default,
                memories=defaults["max_memories"].default,
                recycle_after=1,
            )
            sandbox = GuardSandbox(
                "check", runtime, module, HostFunctions("check", {}, GuardMetrics()), limits
            )
            sandbox.prewarm(5.0)
        except WasmGuardLoadError as exc:
            err.print(f"[red]refused[/red] {escape(str(exc))}")
            raise typer.Exit(1) from None
        except WasmCallError as exc:
            err.print(
                f"[red]refused[/red] {file}: cannot be instantiated under the default limits "
                f"({exc.failure.value}: {exc.detail}); "
                "raise memory_limit_mb or the table/instance limits"
            )
            raise typer.Exit(1) from None
        report = module.contract
        out.print(
            f"[green]ok[/green] {escape(str(file))}: keeps mcp:security-guard@{CONTRACT_VERSION}"
        )
        how = "compiled code loaded from cache" if module.from_cache else "compiled"
        out.print(f"  size: {module.size} bytes; {how} in {module.load_ms:.0f} ms")
        out.print(f"  host imports: {', '.join(report.host_imports) or 'none'}")
        if report.needs_wasi:
            out.print(
                f"  WASI imports: {len(report.wasi_imports)} (set needs_wasi: true; "
                "they get no files, sockets, environment or clock)"
            )
        if report.extra_exports:
            out.print(f"  other exports (never called): {', '.join(report.extra_exports)}")
        out.print(f"  sha256: {sha256}")
        out.print(
            "\n  - kind: wasm\n    runs_on: [tools_list, tool_invoke]\n    config:", markup=False
        )
        out.print(f"      module_path: {file}\n      sha256: {sha256}", markup=False)
        if report.needs_wasi:
            out.print("      needs_wasi: true")

    @guard_app.command("wit", epilog=example("mcpward guard wit > wit/guard.wit"))
    def wit() -> None:
        """Print the WIT contract guards are built against (save it as wit/guard.wit)."""
        typer.echo(wit_text(), nl=False)
