"""What the gateway offers guards at startup (`Guard.attach`): the live catalog and the state dir.

Guards stay free of sockets and files of their own: they ask the gateway through these views.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass(slots=True)
class UpstreamSnapshot:
    """An upstream's lists as last read by the gateway (upstream-local names, complete pages)."""

    upstream: str
    tools: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    resource_templates: list[dict[str, Any]] = field(default_factory=list)
    instructions: str | None = None
    server_info: dict[str, Any] | None = None
    fetched_at: float = 0.0  # time.monotonic() of the read
    # (the tools list it was built from, name -> definition); rebuilt when `tools` is replaced
    _tool_index: tuple[list[dict[str, Any]], dict[str, dict[str, Any]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def tool(self, name: str) -> dict[str, Any] | None:
        """The tool definition called `name` (upstream-local), in O(1) on the hot path."""
        index = self._tool_index
        if index is None or index[0] is not self.tools:
            index = (self.tools, {str(t.get("name")): t for t in self.tools})
            self._tool_index = index
        return index[1].get(name)


SnapshotListener = Callable[[UpstreamSnapshot], Awaitable[None]]
# (allowed private addresses/CIDRs, timeout in seconds) -> an httpx.AsyncClient whose every
# connection passes the gateway's egress filter. Guards never open sockets any other way.
HttpClientFactory = Callable[[Sequence[str], float], Any]


def egress_http_client(allow_private: Sequence[str], timeout: float) -> Any:
    """The default factory: the egress-filtered client of `mcpward.transport.egress`."""
    from mcpward.transport.egress import EgressPolicy, egress_client

    return egress_client(EgressPolicy.from_allow_list(allow_private), timeout=timeout)


class CatalogView(Protocol):
    """Read access to the live catalog, plus an on-demand re-read of one upstream."""

    def upstream_ids(self) -> Sequence[str]: ...

    def snapshot(self, upstream: str) -> UpstreamSnapshot | None: ...

    async def refresh(self, upstream: str) -> UpstreamSnapshot | None: ...

    def subscribe(self, listener: SnapshotListener) -> None: ...


@dataclass(slots=True)
class GatewayServices:
    """Handed to every guard's `attach` once the gateway is assembled."""

    state_dir: Path
    catalog: CatalogView
    upstream_identities: Mapping[str, str] = field(default_factory=dict)  # id -> identity digest
    http_client: HttpClientFactory = egress_http_client
