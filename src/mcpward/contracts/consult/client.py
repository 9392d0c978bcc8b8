"""The one HTTP exchange of a consult: POST the chat request within the deadline through the
gateway's egress-filtered client (injected), read a bounded answer, judge it. Never raises.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx

from mcpward.contracts.consult.prompt import ConsultAnswer, parse_answer, request_body
from mcpward.contracts.consult.settings import ConsultSettings
from mcpward.evidence.vocabulary import ConsultOutcome
from mcpward.secret_refs import SecretUnavailable, resolve_secret

log = logging.getLogger("mcpward.contracts.consult")


def _egress_refused(exc: BaseException) -> bool:
    """The egress filter's refusal, however deep httpx wrapped it (the transport layer's
    `EgressBlocked`, recognised by name: contracts never import the transport)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if type(seen).__name__ == "EgressBlocked":
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class ModelClient:
    """Asks the configured endpoint; every failure becomes an outcome, never an exception."""

    def __init__(self, settings: ConsultSettings, http: httpx.AsyncClient) -> None:
        self.settings = settings
        self._http = http

    async def ask(self, chat: list[dict[str, str]]) -> ConsultAnswer:
        try:
            async with asyncio.timeout(self.settings.deadline_s):
                return await self._exchange(chat)
        except TimeoutError:
            return ConsultAnswer(ConsultOutcome.TIMEOUT)
        except SecretUnavailable as exc:
            log.warning("consult: api_key unavailable: %s", exc)
            return ConsultAnswer(ConsultOutcome.ERROR)
        except httpx.TimeoutException:
            return ConsultAnswer(ConsultOutcome.TIMEOUT)
        except Exception as exc:  # the deterministic verdict stands whatever went wrong
            if _egress_refused(exc):
                return ConsultAnswer(ConsultOutcome.EGRESS_BLOCKED)
            if isinstance(exc, httpx.TransportError):
                return ConsultAnswer(ConsultOutcome.UNREACHABLE)
            log.warning("consult: request failed: %s", type(exc).__name__)
            return ConsultAnswer(ConsultOutcome.ERROR)

    async def _exchange(self, chat: list[dict[str, str]]) -> ConsultAnswer:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.settings.api_key is not None:
            key = resolve_secret(self.settings.api_key)  # a configured prefix replaces Bearer
            headers["Authorization"] = key if self.settings.api_key.prefix else f"Bearer {key}"
        limit = self.settings.max_response_bytes
        body: Any = request_body(self.settings, chat)
        async with self._http.stream(
            "POST", self.settings.url, json=body, headers=headers
        ) as response:
            if response.status_code != 200:
                return ConsultAnswer(ConsultOutcome.HTTP_ERROR)
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    return ConsultAnswer(ConsultOutcome.OVERSIZE)
                chunks.append(chunk)
        return parse_answer(b"".join(chunks))

    async def aclose(self) -> None:
        await self._http.aclose()
