"""Runs an ASGI app on a real uvicorn socket (127.0.0.1, ephemeral port) in the test's loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import uvicorn


class _NoSignalServer(uvicorn.Server):
    def capture_signals(self) -> contextlib.AbstractContextManager[None]:  # type: ignore[override]
        return contextlib.nullcontext()


@contextlib.asynccontextmanager
async def serve_asgi(app: Any, host: str = "127.0.0.1") -> AsyncIterator[int]:
    """Yield the bound port while the app is served; shut the server down afterwards."""
    config = uvicorn.Config(app, host=host, port=0, log_level="warning", lifespan="off")
    server = _NoSignalServer(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield port
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
