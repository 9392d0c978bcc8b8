"""secrets: redacts credentials in what an upstream sends the client - tool, prompt and resource
results, errors, notifications and its own requests (egress) - and denies or redacts them in
tool and prompt arguments where configured (ingress). Evidence holds per-kind counts, never the
secret.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcpward.guards.detection.extract import StructureLimit
from mcpward.guards.detection.scanner import CustomPattern
from mcpward.guards.detection.secret_scanner import SecretScanner
from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.decisions import AddWarning, Allow, Decision, Deny, Modify, ReplacePayload
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.spec import GuardSpec
from mcpward.pipeline.subject import Subject


class SecretsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    egress: Literal["redact", "deny", "warn"] = Field(
        default="redact", description="What to do with secrets in results going to the client."
    )
    ingress: Literal["deny", "redact", "warn"] = Field(
        default="deny", description="What to do with secrets in arguments going to an upstream."
    )
    custom_patterns: list[CustomPattern] = Field(
        default_factory=list, description="Extra RE2 patterns; the id is the reported kind."
    )
    disabled_kinds: list[str] = Field(default_factory=list, description="Built-in kinds to skip.")
    generic: bool = Field(
        default=True, description="Also catch `key = <high-entropy value>` assignments."
    )
    gitleaks: bool = Field(
        default=True,
        description="Also run gitleaks' default rules (vendored, MIT), keyword-prefiltered.",
    )
    gitleaks_max_chars: int = Field(
        default=256 * 1024,
        ge=0,
        description="Longer strings get only the built-in rules (the hot path); 0: no limit.",
    )
    min_entropy: float | None = Field(
        default=None, ge=0, le=8, description="Entropy (bits/char) a generic value needs."
    )
    marker: str = Field(
        default="[REDACTED:{kind}]",
        pattern=r"^[^\"\\]*\{kind\}[^\"\\]*$",
        description="Replacement text; `{kind}` is replaced by the secret's kind.",
    )


class SecretsGuard(Guard):
    kind = "secrets"
    awaits_io = False
    Options = SecretsOptions

    def __init__(self, spec: GuardSpec, options: SecretsOptions) -> None:
        super().__init__(spec, options)
        self.scanner = SecretScanner(
            custom=options.custom_patterns,
            disabled_kinds=options.disabled_kinds,
            generic=options.generic,
            min_entropy=options.min_entropy,
            marker=options.marker,
            gitleaks=options.gitleaks,
            gitleaks_max_chars=options.gitleaks_max_chars,
        )

    def _judge(self, subject: Subject, ctx: GuardContext, action: str, direction: str) -> Decision:
        payload = subject.payload
        try:
            redacted, counts = self.scanner.redact_payload(payload, subject.texts())
        except StructureLimit as exc:
            return Deny(
                code="secrets_unscannable",
                message=f"payload too deeply nested to scan for secrets ({exc}); failing closed",
                evidence={"direction": direction},
            )
        if not counts:
            return Allow()
        by_kind = dict(sorted(counts.items()))
        evidence: dict[str, Any] = {"direction": direction, "action": action, "kinds": by_kind}
        if action == "redact":
            # The receipts' contract: {closed-vocabulary reason: {pattern id: count}}.
            evidence["redactions"] = {"secret": by_kind}
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(counts.items()))
        where = f"{subject.phase.value} {subject.name or ''}".strip()
        if action == "deny":
            return Deny(
                code="secret_detected",
                message=f"{where} carries secrets ({kinds}); refused",
                details={"kinds": dict(sorted(counts.items()))},
                evidence=evidence,
            )
        if action == "warn":
            return Modify(AddWarning(f"{where} carries secrets ({kinds})"), evidence=evidence)
        return Modify(ReplacePayload(redacted), evidence=evidence)

    def redact_counts(self, text: str) -> tuple[str, Counter[str]]:
        """The egress redaction of one text (used by `mcpward redact`)."""
        return self.scanner.redact_text(text)

    async def on_tool_result(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._judge(subject, ctx, self.options.egress, "egress")

    async def on_prompt_result(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._judge(subject, ctx, self.options.egress, "egress")

    async def on_resource_result(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._judge(subject, ctx, self.options.egress, "egress")

    async def on_upstream_error(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._judge(subject, ctx, self.options.egress, "egress")

    async def on_upstream_message(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._judge(subject, ctx, self.options.egress, "egress")

    async def on_tool_invoke(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._judge(subject, ctx, self.options.ingress, "ingress")

    async def on_prompt_request(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._judge(subject, ctx, self.options.ingress, "ingress")
