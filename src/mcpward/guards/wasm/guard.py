"""Guard kind `wasm`: a sandboxed WebAssembly component that keeps mcp:security-guard@0.1.0.

Maps phases onto the contract's exports, runs each call on the guard's own worker threads under its
limits (the epoch deadline is the guard's timeout_ms), and maps the answer onto Allow/Deny/Modify.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcpward.guards.wasm.decode import (
    DecisionFormatError,
    decode_deny,
    decode_details_json,
    decode_modify_action,
    parse_modify_json,
)
from mcpward.guards.wasm.errors import CallFailure, WasmCallError, WasmGuardLoadError
from mcpward.guards.wasm.metrics import GUARD_METRICS, MetricsSink
from mcpward.guards.wasm.values import Arg, ContextArg, GuestAnswer, IdentityArg, ToolArg
from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.decisions import Allow, Decision, Modify
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.services import GatewayServices
from mcpward.pipeline.spec import GuardSpec
from mcpward.pipeline.subject import Subject
from mcpward.protocol.jsonrpc import dumps
from mcpward.store.paths import resolve_state_dir

if TYPE_CHECKING:
    from mcpward.guards.wasm.sandbox import GuardSandbox

log = logging.getLogger("mcpward.guards.wasm")

MIB = 1024 * 1024


class WasmGuardOptions(BaseModel):
    """The `config` block of a `kind: wasm` guard."""

    model_config = ConfigDict(extra="forbid")

    module_path: Path = Field(
        description="The guard component (.wasm), relative to the working directory."
    )
    sha256: str = Field(
        pattern=r"^[0-9a-fA-F]{64}$",
        description="The module's SHA-256 (`mcpward guard check FILE` prints it); "
        "any other module is refused.",
    )
    wasm_config: dict[str, Any] = Field(
        default_factory=dict,
        description="Served to the guest by host.get-config: strings as they are, others as JSON.",
    )
    needs_wasi: bool = Field(
        default=False,
        description="Link WASI 0.2 (no files, sockets, environment or clock); "
        "componentize-py guards need it.",
    )
    fuel: int = Field(
        default=10_000_000_000, ge=10_000, le=10**13, description="Instruction budget per call."
    )
    memory_limit_mb: int = Field(
        default=64, ge=1, le=4096, description="Cap on each linear memory."
    )
    max_instances: int = Field(default=32, ge=1, le=1000)
    max_tables: int = Field(default=16, ge=1, le=1000)
    max_table_elements: int = Field(default=100_000, ge=1, le=10_000_000)
    max_memories: int = Field(default=4, ge=1, le=100)
    pool_size: int = Field(
        default=2, ge=1, le=16, description="Instances (and threads) serving calls at once."
    )
    recycle_after: int = Field(
        default=10_000,
        ge=1,
        description="Calls one instance serves before it is rebuilt (guest state reset).",
    )

    @model_validator(mode="after")
    def _pinned_module(self) -> WasmGuardOptions:
        # Refuse at config load; the bytes are hashed again when they are compiled.
        try:
            data = self.module_path.read_bytes()
        except OSError as exc:
            raise ValueError(
                f"module_path {self.module_path}: cannot be read ({exc.strerror})"
            ) from None
        actual = hashlib.sha256(data).hexdigest()
        if actual != self.sha256.lower():
            raise ValueError(
                f"module_path {self.module_path} has SHA-256 {actual}, "
                f"but sha256 pins {self.sha256.lower()}; "
                "if you trust this build, check it with `mcpward guard check` and update sha256"
            )
        return self

    def config_strings(self) -> dict[str, str]:
        return {
            key: value if isinstance(value, str) else dumps(value).decode()
            for key, value in self.wasm_config.items()
        }


_EXPORTS = {
    Phase.TOOLS_LIST: "evaluate-tools-list",
    Phase.TOOL_INVOKE: "evaluate-tool-call",
    Phase.TOOL_RESULT: "evaluate-tool-response",
    Phase.PROMPT_REQUEST: "evaluate-prompt-request",
    Phase.RESOURCE_REQUEST: "evaluate-resource-request",
}


def _json(value: Any) -> str:
    return dumps(value).decode()


class WasmGuard(Guard):
    """One component, loaded and checked at attach; calls run on the guard's own threads."""

    kind = "wasm"
    Options = WasmGuardOptions

    def __init__(
        self, spec: GuardSpec, options: WasmGuardOptions, metrics: MetricsSink | None = None
    ) -> None:
        super().__init__(spec, options)
        self.options: WasmGuardOptions = options
        self.metrics = metrics or GUARD_METRICS
        self.sandbox: GuardSandbox | None = None
        self._load_lock = threading.Lock()
        self._executor = ThreadPoolExecutor(
            max_workers=options.pool_size, thread_name_prefix=f"wasm-{self.id}"
        )
        self._evidence: dict[str, Any] = {"module_sha256": options.sha256.lower()}

    async def attach(self, services: GatewayServices) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._load, services.state_dir)

    def _load(self, state_dir: Path | None) -> GuardSandbox:
        # Imported here: wasmtime costs ~90 ms to import, and only configs with wasm guards need it.
        from mcpward.guards.wasm.cache import CompiledCache
        from mcpward.guards.wasm.engine import shared_runtime
        from mcpward.guards.wasm.host import HostFunctions
        from mcpward.guards.wasm.loader import load_module
        from mcpward.guards.wasm.sandbox import GuardSandbox, SandboxLimits

        with self._load_lock:
            if self.sandbox is not None:
                return self.sandbox
            opts = self.options
            runtime = shared_runtime()
            cache = CompiledCache(resolve_state_dir(state_dir), runtime.cache_tag)
            try:
                module = load_module(runtime, opts.module_path, opts.sha256, opts.needs_wasi, cache)
            except WasmGuardLoadError as exc:
                raise WasmGuardLoadError(f"{self.id} ({exc.module})", exc.reason, exc.fix) from None
            host = HostFunctions(self.id, opts.config_strings(), self.metrics)
            limits = SandboxLimits(
                fuel=opts.fuel,
                memory_bytes=opts.memory_limit_mb * MIB,
                instances=opts.max_instances,
                tables=opts.max_tables,
                table_elements=opts.max_table_elements,
                memories=opts.max_memories,
                recycle_after=opts.recycle_after,
            )
            sandbox = GuardSandbox(self.id, runtime, module, host, limits)
            try:
                sandbox.prewarm(self.spec.timeout_ms / 1000.0)
            except WasmCallError as exc:
                raise WasmGuardLoadError(
                    f"{self.id} ({opts.module_path})",
                    f"cannot be instantiated under its limits ({exc.failure.value}: {exc.detail})",
                    "raise memory_limit_mb, max_instances, max_tables, max_table_elements or fuel",
                ) from None
            log.info(
                "wasm guard %s: loaded %s (sha256 %s…, %s in %.0f ms, WASI %s)",
                self.id,
                opts.module_path,
                module.sha256[:12],
                "compiled code from cache" if module.from_cache else "compiled",
                module.load_ms,
                "linked without capabilities" if module.contract.needs_wasi else "not linked",
            )
            self.sandbox = sandbox
            return sandbox

    async def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self.sandbox is not None:
            self.sandbox.close()

    def _run(self, phase: Phase, args: list[Arg]) -> GuestAnswer:
        """On a worker thread. Logs and counts here: after a deadline nobody awaits the result."""
        started = time.perf_counter()
        outcome = "error"
        try:
            sandbox = self.sandbox or self._load(None)  # attach normally loaded it already
            answer = sandbox.call(_EXPORTS[phase], args, self.spec.timeout_ms / 1000.0)
            outcome = answer.kind
            return answer
        except WasmCallError as exc:
            outcome = exc.failure.value
            log.warning("wasm guard %s at %s: %s", self.id, phase.value, outcome)
            log.debug("wasm guard %s: %s", self.id, exc.detail)
            raise
        finally:
            labels = (("outcome", outcome), ("phase", phase.value))
            self.metrics.record(self.id, "mcpward_wasm_calls", 1.0, labels)
            self.metrics.record(
                self.id, "mcpward_wasm_call_ms", (time.perf_counter() - started) * 1e3
            )

    async def _evaluate(self, phase: Phase, args: list[Arg], payload: Any) -> Decision:
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(self._executor, self._run, phase, args)
        try:
            return self._decide(answer, phase, payload)
        except WasmCallError as exc:
            log.warning("wasm guard %s at %s: %s", self.id, phase.value, exc.failure.value)
            log.debug("wasm guard %s: %s", self.id, exc.detail)
            raise

    def _decide(self, answer: GuestAnswer, phase: Phase, payload: Any) -> Decision:
        try:
            if answer.kind == "allow":
                return Allow(evidence=self._evidence)
            if answer.kind == "deny":
                details = decode_details_json(answer.details)
                return decode_deny(answer.code, answer.message, details, self._evidence)
            if answer.kind == "modify":
                action = decode_modify_action(parse_modify_json(answer.payload), phase, payload)
                return Modify(action, evidence=self._evidence)
        except DecisionFormatError as exc:
            raise WasmCallError(self.id, CallFailure.BAD_ANSWER, str(exc)) from None
        raise WasmCallError(self.id, CallFailure.GUEST_ERROR, answer.payload[:200])

    def _context(self, ctx: GuardContext) -> ContextArg:
        identity = None
        if ctx.identity is not None:
            who = ctx.identity
            identity = IdentityArg(who.sub, who.email, tuple(who.groups), _json(dict(who.claims)))
        metadata = dict(ctx.metadata)
        metadata.setdefault("method", ctx.method)
        metadata.setdefault("era", ctx.era.value)
        return ContextArg(ctx.server_name, identity, _json(metadata))

    async def on_tools_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        tools = []
        for item in subject.payload:
            description = item.get("description")
            tools.append(
                ToolArg(
                    str(item.get("name", "")),
                    description if isinstance(description, str) else None,
                    _json(item.get("inputSchema", {})),
                )
            )
        return await self._evaluate(Phase.TOOLS_LIST, [tools, self._context(ctx)], subject.payload)

    async def on_tool_invoke(self, subject: Subject, ctx: GuardContext) -> Decision:
        args: list[Arg] = [subject.name or "", _json(subject.payload or {}), self._context(ctx)]
        return await self._evaluate(Phase.TOOL_INVOKE, args, subject.payload)

    async def on_tool_result(self, subject: Subject, ctx: GuardContext) -> Decision:
        args: list[Arg] = [subject.name or "", _json(subject.payload or {}), self._context(ctx)]
        return await self._evaluate(Phase.TOOL_RESULT, args, subject.payload)

    async def on_prompt_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        args: list[Arg] = [subject.name or "", _json(subject.payload or {}), self._context(ctx)]
        return await self._evaluate(Phase.PROMPT_REQUEST, args, subject.payload)

    async def on_resource_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        args: list[Arg] = [subject.name or "", self._context(ctx)]
        return await self._evaluate(Phase.RESOURCE_REQUEST, args, subject.payload)
