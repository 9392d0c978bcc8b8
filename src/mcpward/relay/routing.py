"""Which upstream a client's name or URI belongs to: namespaced names, listed resource URIs and
resource templates (learned from the lists this session has seen).
"""

from __future__ import annotations

import re
from typing import Any

from mcpward.pipeline.services import UpstreamSnapshot
from mcpward.protocol.uri_template import template_regex
from mcpward.relay.state import SessionState


class Routes:
    """Name and URI -> upstream for one session."""

    def __init__(self, state: SessionState) -> None:
        self.state = state
        self._resources: dict[str, str] = {}
        # keyed by template: re-listing replaces, so the table does not grow with every list
        self._templates: dict[str, tuple[re.Pattern[str], str]] = {}

    def learn(self, upstream: str, key: str, item: dict[str, Any]) -> None:
        """Remember where a listed resource or template lives (`key`: the list's result key)."""
        if key == "resources" and isinstance(item.get("uri"), str):
            self._resources[item["uri"]] = upstream
        elif key == "resourceTemplates" and isinstance(item.get("uriTemplate"), str):
            template = item["uriTemplate"]
            known = self._templates.get(template)
            if known is None or known[1] != upstream:
                self._templates[template] = (template_regex(template), upstream)

    def learn_snapshot(self, snap: UpstreamSnapshot) -> None:
        """Everything a read of one upstream connection lists (so a resource can be read before
        the client listed resources)."""
        for item in snap.resources:
            self.learn(snap.upstream, "resources", item)
        for item in snap.resource_templates:
            self.learn(snap.upstream, "resourceTemplates", item)

    def name(self, name: str) -> tuple[str, str] | None:
        """(upstream, its local name) for a client-facing tool or prompt name."""
        return self.state.ns.inward(name)

    def uri(self, uri: str) -> str | None:
        """The upstream serving a resource URI, or None if no list has told us yet."""
        state = self.state
        if not state.ns.enabled:
            return state.services.upstream_ids[0]
        if uri in self._resources:
            return self._resources[uri]
        for pattern, upstream in self._templates.values():
            if pattern.match(uri):
                return upstream
        offering = [
            u
            for u, link in state.links.items()
            if state.offers(link, "resources") and link.init_result
        ]
        return offering[0] if len(offering) == 1 else None
