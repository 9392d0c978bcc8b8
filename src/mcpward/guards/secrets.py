"""secrets: redacts credentials in what an upstream sends the client - tool, prompt and resource
results, errors, notifications and its own requests (egress) - and denies or redacts them in
tool and prompt arguments where configured (ingress). Evidence holds per-kind counts, never the
secret.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcpward.guards.detection.extract import StructureLimit
from mcpward.guards.detection.regex import compile_pending
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
        self._scanner: SecretScanner | None = None
        self._building = threading.Lock()
        if options.disabled_kinds:
            self.scanner  # noqa: B018 (built now: an unknown kind must refuse the start)

    @property
    def scanner(self) -> SecretScanner:
        """Built on first use or by `warm` (the gitleaks rule file is parsed and compiled)."""
        if self._scanner is None:
            with self._building:
                if self._scanner is None:
                    opts = self.options
                    self._scanner = SecretScanner(
                        custom=opts.custom_patterns,
                        disabled_kinds=opts.disabled_kinds,
                        generic=opts.generic,
                        min_entropy=opts.min_entropy,
                        marker=opts.marker,
                        gitleaks=opts.gitleaks,
                        gitleaks_max_chars=opts.gitleaks_max_chars,
                    )
        return self._scanner

    def warm(self) -> None:
        self.scanner  # noqa: B018 (built now, off the event loop)
        compile_pending()

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
