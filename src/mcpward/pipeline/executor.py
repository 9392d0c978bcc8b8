"""Runs the guards of a phase in priority order with deadlines and failure modes.

The first enforced Deny or Hold stops the chain; a Modify is seen by the guards after it.
A wall-clock deadline bounds only hooks that await (what can hang: I/O). Pure guards have none:
their input is capped and their matching linear, and a guard that waited for a CPU on a busy
machine has not failed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.decisions import AddWarning, Allow, Deny, Hold, Modify
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.modify import ModifyError, apply_modify
from mcpward.pipeline.phases import CALL_PHASES, Phase
from mcpward.pipeline.spec import FailureMode, Mode
from mcpward.pipeline.subject import Subject

log = logging.getLogger("mcpward.pipeline")


@dataclass(slots=True)
class GuardRun:
    """One guard's run at one phase, as receipts record it."""

    guard_id: str
    kind: str
    phase: str
    outcome: str  # allow | deny | hold | modify | error | timeout
    duration_ms: float
    code: str | None = None
    failure_mode_applied: str | None = None
    shadow: bool = False  # a deny/hold recorded but not enforced
    evidence: dict[str, Any] = field(default_factory=dict)
    started: float = 0.0  # time.perf_counter() when the run began (places its trace span)


@dataclass(slots=True)
class Outcome:
    """The pipeline's verdict on one payload across one or more phases."""

    payload: Any
    stop: Deny | Hold | None = None
    stopped_by: str | None = None
    warnings: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # for the person (Modify.notices)
    runs: list[GuardRun] = field(default_factory=list)
    modified: bool = False
    shadow_stops: list[tuple[str, Deny | Hold]] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return self.stop is None


@dataclass(frozen=True, slots=True)
class _Step:
    """One guard at one phase, resolved once when the pipeline is built."""

    guard: Guard
    phase: Phase
    hook: Callable[[Subject, GuardContext], Awaitable[Any]]
    decide_now: Callable[[Subject, GuardContext], Any] | None  # None: the guard has none
    deadline_s: float
    timed: bool  # run the hook under a deadline timer (it may await I/O)


class Pipeline:
    """The ordered guards per phase. Build once from config; `run` is on the hot path."""

    def __init__(self, guards: Sequence[Guard], mode: Mode = Mode.ENFORCE) -> None:
        self.guards = list(guards)
        self.mode = mode
        self._by_phase: dict[Phase, tuple[Guard, ...]] = {}
        self._steps: dict[Phase, tuple[_Step, ...]] = {}
        self.reads_contracts = False
        self.reindex()

    def reindex(self) -> None:
        """Build the guards per phase from each guard's `phases` (again after `attach`, where a
        guard may drop a phase it has nothing to do at, e.g. a cross-upstream check with one
        upstream)."""
        order = {id(g): i for i, g in enumerate(self.guards)}
        for phase in Phase:
            chosen = [g for g in self.guards if g.spec.enabled and phase in g.phases]
            chosen.sort(key=lambda g: (g.spec.priority, order[id(g)]))
            self._by_phase[phase] = tuple(chosen)
            self._steps[phase] = tuple(_step(g, phase) for g in chosen)
        # Does a guard that judges calls by their connection's live contract run on a call phase?
        self.reads_contracts = any(
            g.reads_contracts for phase in CALL_PHASES for g in self._by_phase[phase]
        )

    def guards_for(self, phase: Phase) -> tuple[Guard, ...]:
        return self._by_phase[phase]

    def has(self, phase: Phase) -> bool:
        return bool(self._by_phase[phase])

    async def run(
        self,
        phases: Sequence[Phase],
        name: str | None,
        payload: Any,
        ctx: GuardContext,
        outcome: Outcome | None = None,
    ) -> Outcome:
        """Run the phases in order over one payload; stops at the first enforced Deny/Hold."""
        out = outcome if outcome is not None else Outcome(payload=payload)
        out.payload = payload
        for phase in phases:
            steps = self._steps[phase]
            if not steps:
                continue
            # One subject per phase and payload: the strings a content guard extracts from it
            # (`Subject.texts`) are shared with the guards after it until a guard changes it.
            subject = Subject(phase, name, out.payload)
            for step in steps:
                if await self._run_one(step, subject, out, ctx):
                    subject = Subject(phase, name, out.payload)
                if out.stop is not None:
                    return out
        return out

    def warm(self) -> None:
        """Every guard's `warm` (in a worker thread; a failure only leaves the work for first
        use, which raises it where a guard's error is handled)."""
        for guard in self.guards:
            try:
                guard.warm()
            except Exception:
                log.warning("guard %s: warming up failed; it builds on first use", guard.id)

    async def close(self) -> None:
        for guard in self.guards:
            try:
                await guard.close()
            except Exception:
                log.exception("guard %s failed to close", guard.id)

    async def _run_one(
        self, step: _Step, subject: Subject, out: Outcome, ctx: GuardContext
    ) -> bool:
        """Run one guard; True when it changed the payload (a new subject is due)."""
        guard, phase = step.guard, step.phase
        spec = guard.spec
        deadline = step.deadline_s
        started = time.perf_counter()
        cpu_started: float | None = None  # read only for a hook under the wall-clock deadline
        failure: str | None = None
        decision: Any = None
        try:
            if step.decide_now is not None:
                decision = step.decide_now(subject, ctx)
            if decision is not None:
                pass  # decided without waiting: no deadline (pure code, bounded by its input)
            elif step.timed:
                cpu_started = time.thread_time()
                async with asyncio.timeout(deadline):
                    decision = await step.hook(subject, ctx)
            else:
                decision = await step.hook(subject, ctx)  # a pure guard: no deadline, as above
        except TimeoutError:
            failure = "timeout"
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure = "error"
            log.warning("guard %s raised %s at %s", guard.id, type(exc).__name__, phase.value)
        elapsed = time.perf_counter() - started
        # An awaiting hook that ran on without awaiting escaped its timer (asyncio cannot cancel
        # running code): its late answer is void when it used more CPU time of this thread than
        # its deadline, never for the wall-clock time it spent waiting for a CPU on a busy machine.
        # (CPU time never exceeds wall time, so the cheap clock decides whether to read it.)
        if (
            failure is None
            and cpu_started is not None
            and elapsed > deadline
            and time.thread_time() - cpu_started > deadline
        ):
            failure = "timeout"
        run = GuardRun(
            guard.id, guard.kind, phase.value, "allow", elapsed * 1000.0, started=started
        )
        out.runs.append(run)
        if failure is None and not isinstance(decision, (Allow, Deny, Hold, Modify)):
            failure = "error"
            log.warning("guard %s returned %r, not a decision", guard.id, type(decision).__name__)
        if failure is None and isinstance(decision, Modify):
            try:
                out.payload = apply_modify(phase, out.payload, decision.action, out.warnings)
                out.modified = True
                run.outcome = "modify"
                run.evidence = dict(decision.evidence)
                out.notices.extend(decision.notices)
                return not isinstance(decision.action, AddWarning)
            except ModifyError as exc:
                failure = "error"
                log.warning("guard %s: unusable modify at %s: %s", guard.id, phase.value, exc)
        if failure is not None:
            run.outcome = failure
            run.failure_mode_applied = spec.failure_mode.value
            if spec.failure_mode is FailureMode.FAIL_OPEN:
                log.warning("guard %s %s at %s; failing open", guard.id, failure, phase.value)
                return isinstance(decision, Modify)  # an unusable modify may have begun
            decision = Deny(
                code=f"guard_{failure}",
                message=f"guard {guard.id} {'timed out' if failure == 'timeout' else 'failed'}; "
                "failing closed",
            )
            run.code = decision.code
        elif isinstance(decision, Allow):
            run.evidence = dict(decision.evidence)
            return False
        assert isinstance(decision, (Deny, Hold))
        if failure is None:
            run.outcome = "hold" if isinstance(decision, Hold) else "deny"
            run.code = decision.code
            run.evidence = dict(decision.evidence)
        mode = spec.mode or self.mode
        if mode is Mode.SHADOW:
            run.shadow = True
            out.shadow_stops.append((guard.id, decision))
            return False
        out.stop = decision
        out.stopped_by = guard.id
        return False


def _step(guard: Guard, phase: Phase) -> _Step:
    overrides_now = type(guard).decide_now is not Guard.decide_now
    return _Step(
        guard=guard,
        phase=phase,
        hook=getattr(guard, f"on_{phase.value}"),
        decide_now=guard.decide_now if overrides_now else None,
        deadline_s=guard.spec.timeout_ms / 1000.0,
        timed=guard.awaits_io,
    )
