"""What the gateway offers guards at startup (`Guard.attach`): the live catalog and the state dir.

Guards stay free of sockets and files of their own: they ask the gateway through these views.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mcpward.contracts.consult.settings import ConsultSettings
from mcpward.store.factory import StoreContext


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
    # Views derived from this snapshot by its readers (e.g. the pin gate's contract hashes),
    # computed once per snapshot; a snapshot is never mutated after it is published.
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
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


class LiveContracts(Protocol):
    """What the upstream connection a request is routed to serves right now.

    The relay hands one to every judged request (`GuardContext.contracts`) after it has made sure
    `snapshot` was read on that very connection, after its last (re)connect and its last
    `list_changed`. `None` means the connection's lists could not be read.
    """

    @property
    def snapshot(self) -> UpstreamSnapshot | None: ...

    async def reread(self) -> UpstreamSnapshot | None:
        """A read of the connection's lists that began after this call (shared with others)."""
        ...


SnapshotListener = Callable[[UpstreamSnapshot], Awaitable[None]]
# (upstream id, sentence) -> queued for the person at every client session using that upstream
# (a `notifications/message` warning, once per session); returns at once, never fails.
ClientNotice = Callable[[str, str], None]
# (allowed private addresses/CIDRs, timeout in seconds) -> an httpx.AsyncClient whose every
# connection passes the gateway's egress filter. Guards never open sockets any other way.
HttpClientFactory = Callable[[Sequence[str], float], Any]


def no_clients(upstream: str, text: str) -> None:
    """The notice sink of services assembled without sessions (unit use): nobody to tell."""


def no_http_client(allow_private: Sequence[str], timeout: float) -> Any:
    """The factory of services assembled without a network (unit use): refuses plainly."""
    raise RuntimeError(
        "these guard services have no HTTP client (the gateway wires the egress one)"
    )


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
    # id -> {"digest": identity digest, "executable_sha256": hash of a stdio server's binary}
    upstream_provenance: Mapping[str, Mapping[str, str | None]] = field(default_factory=dict)
    http_client: HttpClientFactory = no_http_client
    # the configured store (None: the state dir's SQLite files); guards open it through
    # mcpward.store.factory so every replica of a fleet shares pins and holds
    store: StoreContext | None = None
    consult: ConsultSettings | None = None  # tier 2 of the drift gate; None = off (the default)
    # upstreams tier 3 (`mcpward validate`) can observe: stdio ones, and HTTP ones marked owned
    sandboxable: frozenset[str] = field(default_factory=frozenset)
    console_url: str | None = None  # the review console's address, named in HOLD messages
    # tells the clients of an upstream something outside any request of theirs (a HOLD made by
    # the gateway's own re-read, say)
    tell_clients: ClientNotice = no_clients
