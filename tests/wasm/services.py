"""Gateway services for guards attached outside a gateway (tests, benchmarks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcpward.egress.client import egress_http_client
from mcpward.pipeline.services import GatewayServices


class NoCatalog:
    """attach() of a wasm guard uses only the state dir."""

    def upstream_ids(self) -> list[str]:
        return []

    def snapshot(self, upstream: str) -> None:
        return None

    async def refresh(self, upstream: str) -> None:
        return None

    def subscribe(self, listener: Any) -> None:
        return None


def services(state_dir: Path) -> GatewayServices:
    return GatewayServices(state_dir=state_dir, catalog=NoCatalog(), http_client=egress_http_client)
