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


SnapshotListener = Callable[[UpstreamSnapshot], Awaitable[None]]


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
