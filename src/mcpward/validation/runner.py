"""Runs one validation: finds the held tool, picks the leg (a sandboxed fresh copy of a stdio
server, or input probes to an HTTP server the operator owns), runs the battery through the
gateway's own connector, and returns the report. Never raises for the server's behaviour.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpward.config.models import GatewayConfig
from mcpward.config.upstreams import HttpUpstream, StdioUpstream
from mcpward.contracts.clearance import validatable
from mcpward.contracts.extract import contract_hash, contracts_of
from mcpward.contracts.model import HoldRecord, ItemKind
from mcpward.contracts.sanitize import sanitize_text
from mcpward.contracts.store import PinStore
from mcpward.upstreams.base import UpstreamConnection, UpstreamUnavailable
from mcpward.upstreams.connectors import make_connection
from mcpward.upstreams.direct_client import DirectClient
from mcpward.validation.battery import Case, generate
from mcpward.validation.isolator import Isolator, Limits, find_isolator, pids_cgroup
from mcpward.validation.observe import (
    FileState,
    descendants,
    output_problems,
    workdir_changes,
    workdir_state,
)
from mcpward.validation.trace import Event, TraceLog
from mcpward.validation.verdict import Finding, Observation, Outcome, Report, Unavailable

MAX_OBSERVATIONS = 200
SETTLE_S = 0.05  # lets the monitor's log catch up with a call that has just answered
SANDBOX_BLIND_SPOTS = [
    "the real environment: the server ran with no network, an empty home and without the "
    "gateway's pass_env variables; with its secrets, network or data it may behave otherwise",
    "inputs outside the generated battery, and behaviour that depends on time or call history",
]
OWNER_BLIND_SPOTS = [
    "writes, connections and processes: the owner-authorized leg only probes the live server's "
    "input checks (and calls a read-only tool with valid inputs)",
]
IsolatorLookup = Callable[[], tuple[Isolator | None, str]]


@dataclass(slots=True)
class _Tool:
    """The held tool as the fresh copy serves it, and what it declares about itself."""

    contract: dict[str, Any]
    read_only: bool = False
    closed_world: bool = False

    @classmethod
    def of(cls, contract: dict[str, Any]) -> _Tool:
        notes = contract.get("annotations")
        notes = notes if isinstance(notes, dict) else {}
        return cls(
            contract,
            read_only=notes.get("readOnlyHint") is True,
            closed_world=notes.get("openWorldHint") is False,
        )


@dataclass(slots=True)
class _Watch:
    """The sandbox's observers (absent on the owner-authorized leg)."""

    trace: TraceLog | None = None
    workdir: Path | None = None
    files: FileState = field(default_factory=dict)
    processes: int = 0


def find_hold(store: PinStore, upstream: str, item: str) -> HoldRecord | None:
    return next((h for h in store.holds(upstream) if h.key == (ItemKind.TOOL, item)), None)


async def validate(
    config: GatewayConfig,
    hold: HoldRecord | None,
    upstream: str,
    item: str,
    *,
    seed: int,
    samples: int = 12,
    limits: Limits | None = None,
    lookup: IsolatorLookup = find_isolator,
) -> Report:
    """The verdict on one held tool (UNAVAILABLE for every absence or failure)."""
    limits = limits or Limits()
    report = Report(upstream, item, hold.new_hash if hold else None, "none", seed)
    if hold is None:
        return report.unavailable(Unavailable.NO_HOLD, "no open hold on this tool")
    if not validatable(hold):
        return report.unavailable(
            Unavailable.NOT_BEHAVIOURAL,
            "the hold has changes only a person can settle (review and re-pin)",
        )
    spec = next((u for u in config.upstreams if u.id == upstream), None)
    if spec is None:
        return report.unavailable(Unavailable.UNKNOWN_UPSTREAM, "not in the config")
    if isinstance(spec, HttpUpstream):
        if not spec.owned:
            return report.unavailable(
                Unavailable.REMOTE_UNOWNED,
                "a remote server the config does not mark as owned: declined (nothing is sent)",
            )
        report.leg, report.cannot_see = "owner_authorized", list(OWNER_BLIND_SPOTS)
        conn = make_connection(spec, config.gateway)
        return await _bounded(
            _run(report, conn, hold, None, seed, samples, limits, None), report, limits
        )
    isolator, how = lookup()
    report.isolation = {"isolator": how, "limits": limits.to_json()}
    if isolator is None:
        return report.unavailable(Unavailable.NO_ISOLATOR, how)
    report.leg, report.cannot_see = "sandbox", list(SANDBOX_BLIND_SPOTS)
    workdir = Path(tempfile.mkdtemp(prefix="mcpward-validate-"))
    tracedir = Path(tempfile.mkdtemp(prefix="mcpward-trace-"))
    try:
        with pids_cgroup(limits.processes) as cgroup:
            report.isolation["process_cap"] = "pids cgroup" if cgroup else "RLIMIT_NPROC"
            report.isolation["withheld_env"] = list(spec.pass_env)
            trace = tracedir / "trace.log"
            argv = isolator.command([spec.command, *spec.args], workdir, trace, limits, cgroup)
            sandboxed = StdioUpstream(
                id=spec.id,
                command=argv[0],
                args=argv[1:],
                env={**spec.env, "HOME": str(workdir), "TMPDIR": str(workdir)},
                cwd=workdir,
            )
            watch = _Watch(TraceLog(trace, isolator.bwrap), workdir)
            conn = make_connection(sandboxed, config.gateway)
            run = _run(report, conn, hold, watch, seed, samples, limits, conn)
            return await _bounded(run, report, limits)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(tracedir, ignore_errors=True)


async def _bounded(run: Coroutine[Any, Any, Report], report: Report, limits: Limits) -> Report:
    """The whole battery within `total_timeout_s` (the connection is closed on the way out)."""
    try:
        return await asyncio.wait_for(run, limits.total_timeout_s)
    except TimeoutError:
        return report.unavailable(Unavailable.TIMEOUT, "the battery did not finish in time")


async def _run(
    report: Report,
    conn: UpstreamConnection,
    hold: HoldRecord,
    watch: _Watch | None,
    seed: int,
    samples: int,
    limits: Limits,
    process: Any,
) -> Report:
    client = DirectClient(conn, "mcpward-validate")
    try:
        try:
            await asyncio.wait_for(conn.start(), limits.start_timeout_s)
            init = await asyncio.wait_for(client.initialize(), limits.start_timeout_s)
            listed = await asyncio.wait_for(
                client.list_all("tools/list", "tools"), limits.start_timeout_s
            )
        except TimeoutError:
            return report.unavailable(Unavailable.TIMEOUT, "the server did not start in time")
        except UpstreamUnavailable as exc:
            return report.unavailable(Unavailable.SPAWN_FAILED, sanitize_text(str(exc), 200))
        if init is None:
            return report.unavailable(Unavailable.SPAWN_FAILED, "the server refused initialize")
        contract = contracts_of(ItemKind.TOOL, listed).get(report.item)
        if contract is None or contract_hash(contract) != hold.new_hash:
            return report.unavailable(
                Unavailable.CONTRACT_MISMATCH,
                "the fresh copy does not list the held contract (it moved again, or differs "
                "per process)",
            )
        tool = _Tool.of(contract)
        cases = generate(contract.get("inputSchema"), seed, samples)
        if watch is None and not tool.read_only:
            cases = [c for c in cases if not c.valid]  # never a valid call outside a sandbox
        report.battery_size = len(cases)
        if not cases:
            return report.unavailable(Unavailable.NO_BATTERY, "no usable input case")
        if watch is not None:
            _startup(report, watch, getattr(process, "pid", None))
        succeeded = 0
        for case in cases:
            try:
                answer = await asyncio.wait_for(
                    client.request(
                        "tools/call", {"name": report.item, "arguments": case.arguments}
                    ),
                    limits.call_timeout_s,
                )
            except TimeoutError:
                return report.unavailable(Unavailable.TIMEOUT, f"no answer to: {case.label}")
            except UpstreamUnavailable as exc:
                detail = f"{case.label}: {sanitize_text(str(exc), 120)}"
                return report.unavailable(Unavailable.TRANSPORT_ERROR, detail)
            report.calls_made += 1
            succeeded += _judge(report, tool, case, answer)
            if watch is not None:
                await asyncio.sleep(SETTLE_S)
                _watched(report, tool, case, watch, getattr(process, "pid", None))
        # the owner-authorized leg sends a tool that is not read-only invalid inputs only: there
        # is no valid call to observe, and it can never see writes or connections
        report.decide(valid_succeeded=succeeded if watch is not None or tool.read_only else 1)
        observable = tool.read_only and _owner_can_clear(hold)
        if watch is None and report.outcome is Outcome.CLEARED and not observable:
            report.unavailable(Unavailable.PARTIAL, _PARTIAL)
        return report
    except Exception as exc:  # never raise into the caller: a bug is an absence, not a pass
        return report.unavailable(Unavailable.TRANSPORT_ERROR, type(exc).__name__)
    finally:
        with contextlib.suppress(Exception):
            await conn.close()


_PARTIAL = (
    "the owner-authorized leg cannot observe what this hold is about (writes, connections, or "
    "the valid calls of a tool that is not read-only)"
)


def _owner_can_clear(hold: HoldRecord) -> bool:
    """Without a sandbox only output and default changes of a read-only tool are observable."""
    holding = hold.extra.get("holding_kinds") or hold.change_kinds
    return all(str(k) in ("output-schema-changed", "default-changed") for k in holding)


def _note(report: Report, finding: Finding, case: str, detail: str) -> None:
    """Record an observation once (the first case that showed it), up to MAX_OBSERVATIONS."""
    text = sanitize_text(detail, 300)
    if len(report.observations) >= MAX_OBSERVATIONS:
        return
    if any(o.finding is finding and o.detail == text for o in report.observations):
        return
    report.observations.append(Observation(finding, case, text))


def _judge(report: Report, tool: _Tool, case: Case, answer: dict[str, Any]) -> int:
    """Refused or executed, and the output against its schema; 1 for a valid call that ran."""
    result = answer.get("result")
    refused = "error" in answer or not isinstance(result, dict) or result.get("isError") is True
    if not case.valid:
        if not refused:
            _note(report, Finding.INVALID_INPUT_EXECUTED, case.label, "answered as a success")
        return 0
    if refused:
        code = answer.get("error", {}).get("code") if "error" in answer else "isError"
        _note(report, Finding.CALL_ERROR, case.label, f"refused ({code})")
        return 0
    assert isinstance(result, dict)
    for problem in output_problems(result, tool.contract.get("outputSchema")):
        _note(report, Finding.OUTPUT_OFF_SCHEMA, case.label, problem)
    return 1


def _startup(report: Report, watch: _Watch, pid: int | None) -> None:
    assert watch.trace is not None and watch.workdir is not None
    for event in watch.trace.take():
        _note(report, Finding.STARTUP, "", f"{event.what}: {event.describe()}")
    watch.files = workdir_state(watch.workdir)
    watch.processes = len(descendants(pid)) if pid else 0


def _watched(report: Report, tool: _Tool, case: Case, watch: _Watch, pid: int | None) -> None:
    """What the call did around its answer: connections, writes, processes left behind."""
    assert watch.trace is not None and watch.workdir is not None
    events: list[Event] = watch.trace.take()
    for event in events:
        if event.what == "connect":
            finding = (
                Finding.CONNECT_BY_CLOSED_WORLD if tool.closed_world else Finding.CONNECT_ATTEMPT
            )
        else:
            finding = Finding.WRITE_BY_READ_ONLY if tool.read_only else Finding.WRITE
        _note(report, finding, case.label, event.describe())
    files = workdir_state(watch.workdir)
    for change in workdir_changes(watch.files, files):
        finding = Finding.WRITE_BY_READ_ONLY if tool.read_only else Finding.WRITE
        _note(report, finding, case.label, f"in the writable area: {change}")
    watch.files = files
    count = len(descendants(pid)) if pid else 0
    if count > watch.processes:
        _note(report, Finding.LEFTOVER_PROCESSES, case.label, f"{count - watch.processes} more")
    watch.processes = max(count, watch.processes)
