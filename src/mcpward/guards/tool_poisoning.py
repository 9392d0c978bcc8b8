"""tool_poisoning: scans every string an agent reads in listed tools, prompts and resources
for hidden instructions and drops (or warns about) the items that score over the threshold.
With `drop`, a call to a dropped tool or prompt, or a read of a dropped resource, is denied too:
leaving it out of the list alone would not stop a client that knows the name.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcpward.guards.detection.definition_directive import DEFINITION_RULES, content_digest
from mcpward.guards.detection.families import check_family_ids
from mcpward.guards.detection.regex import compile_pending
from mcpward.guards.detection.scanner import (
    NAME_RULES,
    ContentScanner,
    CustomPattern,
    Finding,
    definition_score,
)
from mcpward.guards.hidden_items import lists_unreadable
from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.decisions import AddWarning, Allow, Decision, Deny, Modify, ReplaceTools
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.spec import GuardSpec
from mcpward.pipeline.subject import Subject

if TYPE_CHECKING:
    from mcpward.guards.detection.directive_model import DirectiveModel, ModelScore
    from mcpward.guards.poisoning_consult import FirstSightConsult
    from mcpward.pipeline.services import GatewayServices

MAX_REPORTED_FINDINGS = 20  # per item, in evidence; the score uses all of them


class ToolPoisoningOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["drop", "warn"] = Field(
        default="drop",
        description="drop: remove the item from the list; warn: keep it, add a warning.",
    )
    threshold: float = Field(
        default=1.0, gt=0, le=100, description="Score at which an item counts as poisoned."
    )
    custom_patterns: list[CustomPattern] = Field(
        default_factory=list, description="Extra RE2 patterns (family `custom`)."
    )
    disabled_families: list[str] = Field(
        default_factory=list, description="Built-in families to switch off, by id."
    )

    consult_floor: float = Field(
        default=0.5,
        ge=0,
        le=100,
        description="With a `consult:` section: an item first seen scoring at least this (and "
        "under the threshold) is asked of the tier-2 model once; HOLD drops it, anything else "
        "leaves the verdict. 0: never ask.",
    )

    _known = field_validator("disabled_families")(check_family_ids)


CONSULT_FINDING = Finding("consult", "tier2-hold", "$", 0, 0, 0.0)
LEARNED = "learned-directive"
VERDICT_CACHE = 2048  # definitions whose verdict a guard keeps, by content (then it starts over)


@dataclass(frozen=True, slots=True)
class ItemVerdict:
    """One listed item's scan: its findings and whether they reach the threshold."""

    name: str
    score: float
    flagged: bool
    findings: list[Finding]
    learned: dict[str, Any] | None = None  # the learned scorer's probability and top features
    borderline_model: bool = False  # the learned scorer is over its consult floor

    def describe(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "score": self.score,
            "families": sorted({f.family for f in self.findings}),
            "findings": [f.describe() for f in self.findings[:MAX_REPORTED_FINDINGS]],
        }
        if self.learned is not None:
            out["learned"] = self.learned
        return out


def item_name(item: Any) -> str:
    if isinstance(item, dict):
        for key in ("name", "uri", "uriTemplate"):
            value = item.get(key)
            if isinstance(value, str):
                return value
    return "<unnamed>"


def _named(items: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    return next((item for item in items if item.get("name") == name), None)


class ToolPoisoningGuard(Guard):
    """Pure policy: the same definition always gets the same verdict."""

    kind = "tool_poisoning"
    hides_listed_items = True
    awaits_io = False
    reads_contracts = True  # a call is judged against what its connection lists right now
    Options = ToolPoisoningOptions

    def __init__(self, spec: GuardSpec, options: ToolPoisoningOptions) -> None:
        super().__init__(spec, options)
        self.scanner = ContentScanner(
            DEFINITION_RULES,
            custom=options.custom_patterns,
            disabled_families=options.disabled_families,
            name_rules=NAME_RULES,
        )
        self.threshold = options.threshold
        self.action = options.action
        self.first_sight: FirstSightConsult | None = None
        self.learned = LEARNED not in options.disabled_families
        self._model: DirectiveModel | None = None
        self._verdicts: dict[bytes, ItemVerdict] = {}

    async def attach(self, services: GatewayServices) -> None:
        settings = services.consult
        if settings is not None and settings.enabled and self.options.consult_floor > 0:
            from mcpward.guards.poisoning_consult import build_first_sight

            self.first_sight = build_first_sight(settings, services)

    async def close(self) -> None:
        if self.first_sight is not None:
            await self.first_sight.close()

    def borderline(self, verdict: ItemVerdict) -> bool:
        """Not flagged, but the rules score at least the consult floor or the learned scorer is
        over its own floor: worth asking tier 2."""
        floor = self.options.consult_floor
        near = verdict.score >= floor or verdict.borderline_model
        return not verdict.flagged and floor > 0 and near

    @property
    def model(self) -> DirectiveModel | None:
        if self.learned and self._model is None:
            from mcpward.guards.detection.directive_model import load_model

            self._model = load_model("definition")
        return self._model

    def warm(self) -> None:
        compile_pending()  # this kind's rule sets, off the event loop
        _ = self.model

    def _learned(
        self, item: Any, findings: list[Finding]
    ) -> tuple[ModelScore, DirectiveModel] | None:
        model = self.model
        if model is None or any(f.family == "unscannable" for f in findings):
            return None  # the rules fail closed on it already; the scorer would walk it again
        return model.score_definition(item, findings), model

    def judge(self, item: Any) -> ItemVerdict:
        """The item's verdict: the rules and the learned scorer, kept per content (a server
        lists the same definitions again and again; the guard is pure), then the tier-2
        answer for a borderline item, which may come later."""
        verdict = self._cached(item)
        if self.first_sight is not None and self.borderline(verdict):
            answer = self.first_sight.verdict(item)  # escalate-only: HOLD drops, else as is
            if answer is not None and answer.escalates:
                return replace(verdict, flagged=True, findings=[*verdict.findings, CONSULT_FINDING])
        return verdict

    def _cached(self, item: Any) -> ItemVerdict:
        key = content_digest(item)
        if key is None:
            return self._scan(item)  # not JSON, or nested past the encoder: judged every time
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._scan(item)
            if len(self._verdicts) >= VERDICT_CACHE:
                self._verdicts.clear()
            self._verdicts[key] = verdict
        return verdict

    def _scan(self, item: Any) -> ItemVerdict:
        findings = self.scanner.scan_definition(item)
        value = definition_score(findings)
        verdict = ItemVerdict(item_name(item), value, value >= self.threshold, findings)
        learned = self._learned(item, findings)
        if learned is not None:
            scored, model = learned
            described = model.describe(scored)
            if scored.probability >= model.threshold:  # escalate-only: never clears a verdict
                # one more family of evidence, as strong as the default threshold
                found = [*findings, Finding(LEARNED, "directive-model", "$", 0, 0, 1.0)]
                value = definition_score(found)
                verdict = ItemVerdict(
                    verdict.name, value, value >= self.threshold, found, described
                )
            else:
                borderline = scored.probability >= model.floor
                verdict = replace(verdict, learned=described, borderline_model=borderline)
        return verdict

    def _consult(self, what: str, items: list[Any], verdicts: list[ItemVerdict]) -> None:
        """Ask tier 2, in the background, about the borderline items of a list not asked about
        yet; its HOLD applies from its answer on (every failure leaves the verdict)."""
        if self.first_sight is not None:
            asked = [
                (v.name, item)
                for item, v in zip(items, verdicts, strict=True)
                if self.borderline(v) and self.first_sight.verdict(item) is None
            ]
            self.first_sight.ask_later(what.rstrip("s"), asked)

    def judge_all(self, items: list[Any]) -> list[ItemVerdict]:
        return [self.judge(item) for item in items]

    def _decide(self, subject: Subject, ctx: GuardContext, what: str) -> Decision:
        items = subject.payload if isinstance(subject.payload, list) else []
        verdicts = self.judge_all(items)
        self._consult(what, items, verdicts)
        flagged = [v for v in verdicts if v.flagged]
        if not flagged:
            return Allow()
        families = Counter(f.family for v in flagged for f in v.findings)
        evidence = {
            "upstream": ctx.server_name,
            "action": self.action,
            "flagged": len(flagged),
            "families": dict(sorted(families.items())),
            "items": [v.describe() for v in flagged],
        }
        names = ", ".join(
            f"{v.name} ({', '.join(sorted({f.family for f in v.findings}))})" for v in flagged
        )
        if self.action == "warn":
            return Modify(
                AddWarning(f"{what} of upstream {ctx.server_name!r} look poisoned: {names}"),
                evidence=evidence,
            )
        kept = [item for item, v in zip(items, verdicts, strict=True) if not v.flagged]
        return Modify(ReplaceTools(kept), evidence=evidence)

    def _check_call(self, what: str, name: str, ctx: GuardContext) -> Decision:
        """Deny a call to an item this guard drops from its connection's current list; the
        verdict is kept with that read of the list (`UpstreamSnapshot.derived`)."""
        if self.action != "drop" or ctx.contracts is None:
            return Allow()
        snap = ctx.contracts.snapshot
        if snap is None:
            return lists_unreadable(what, ctx.server_name)
        verdicts: dict[tuple[str, str], ItemVerdict | None] = snap.derived.setdefault(
            f"tool_poisoning:{self.id}", {}
        )
        key = (what, name)
        if key not in verdicts:
            if what == "tool":
                item = snap.tool(name)
            elif what == "prompt":
                item = _named(snap.prompts, name)
            else:  # a resource by its URI (a URI only a template matches is not judged here)
                item = next((r for r in snap.resources if r.get("uri") == name), None)
            judged = None if item is None else self.judge(item)
            if judged is not None and self.first_sight is not None and self.borderline(judged):
                return self._denied(what, name, ctx, judged) if judged.flagged else Allow()
            verdicts[key] = judged  # (a borderline one may still be escalated: not kept)
        verdict = verdicts[key]
        if verdict is None or not verdict.flagged:
            return Allow()  # an unlisted name is rug_pull's (`unlisted_item`)
        return self._denied(what, name, ctx, verdict)

    def _denied(self, what: str, name: str, ctx: GuardContext, verdict: ItemVerdict) -> Decision:
        families = sorted({f.family for f in verdict.findings})
        return Deny(
            code="poisoned_item",
            message=f"{what} {name!r} of upstream {ctx.server_name!r} looks poisoned "
            f"({', '.join(families)}); it is not listed and cannot be used",
            details={"families": families},
            evidence={"upstream": ctx.server_name, "action": "drop", "items": [verdict.describe()]},
        )

    async def on_tool_invoke(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._check_call("tool", subject.name or "", ctx)

    async def on_prompt_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._check_call("prompt", subject.name or "", ctx)

    async def on_resource_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._check_call("resource", subject.name or "", ctx)

    async def on_tools_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._decide(subject, ctx, "tools")

    async def on_prompts_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._decide(subject, ctx, "prompts")

    async def on_resources_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._decide(subject, ctx, "resources")
