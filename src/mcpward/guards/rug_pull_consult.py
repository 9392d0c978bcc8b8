"""The rug_pull guard's tier-2 wiring: the ambiguity probes (the tool_poisoning scanner and the
screen's data-request cues) and the consult on the gateway's egress-filtered HTTP client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import re2

from mcpward.contracts.consult.settings import ConsultSettings
from mcpward.contracts.consult.triggers import TriggerProbes
from mcpward.guards.detection.definition_directive import definition_scanner
from mcpward.guards.detection.scanner import ContentScanner, score
from mcpward.guards.screen import red_flags
from mcpward.pipeline.services import GatewayServices

if TYPE_CHECKING:
    from mcpward.contracts.consult.consult import SemanticConsult

# Wider than the screen's credential/private-file flags: text asking for what the agent knows.
_DATA_REQUEST = re2.compile(
    r"(?i)((conversation|chat|message|session)s?\W+(history|log|transcript|so far)"
    r"|(previous|prior|earlier|all|full|entire)\W+(messages?|conversation|context|prompts?|chat)"
    r"|system\W+prompt|environment\W+variables?|contents?\W+of\b"
    r"|(user'?s?|your|their)\W+(e-?mail|address|phone|location|files?|documents?|contacts?|"
    r"history|password|account))"
)


def trigger_probes(scanner: ContentScanner | None = None) -> TriggerProbes:
    scanner = scanner or definition_scanner()

    def poisoning_score(definition: Any) -> float:
        if isinstance(definition, str):  # the server's instructions
            definition = {"description": definition}
        return score(scanner.scan_definition(definition))

    def asks_for_data(name: str, spec: Any) -> bool:
        spec = spec if isinstance(spec, dict) else {}
        if red_flags([{"name": "", "inputSchema": {"properties": {name: spec}}}]):
            return True
        text = spec.get("description")
        if not isinstance(text, str):
            return False
        return bool(_DATA_REQUEST.search(text)) or bool(
            scanner.scan_definition({"description": text})
        )

    return TriggerProbes(poisoning_score=poisoning_score, asks_for_data=asks_for_data)


def build_consult(
    settings: ConsultSettings, services: GatewayServices, scanner: ContentScanner | None = None
) -> SemanticConsult:
    """THE place tier 2's connections are made: only to the configured endpoint, through the
    egress filter, admitting only the private addresses the operator listed."""
    from mcpward.contracts.consult.client import ModelClient  # httpx: only with `consult:`
    from mcpward.contracts.consult.consult import SemanticConsult

    http = services.http_client(list(settings.allow_private), settings.deadline_s)
    return SemanticConsult(settings, ModelClient(settings, http), trigger_probes(scanner))
