"""tool_poisoning's tier 2 for first sight: a definition the detector scores just under its
threshold is asked of the operator's model once (cached by the definition's hash), in the
background (tool_poisoning is a pure guard: its hooks never await). Escalate-only: once HOLD is
the answer, every list drops the item and every call to it is denied; PROCEED and every failure
(timeout, refusal, bad answer, unreachable) leave the deterministic verdict, and an item the
detector drops is never asked.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcpward.contracts.consult.cache import ConsultVerdict, VerdictCache
from mcpward.contracts.consult.prompt import ConsultAnswer, first_sight_data, messages
from mcpward.contracts.consult.settings import ConsultSettings
from mcpward.evidence.vocabulary import ConsultOutcome

if TYPE_CHECKING:
    from mcpward.contracts.consult.consult import Asker
    from mcpward.pipeline.services import GatewayServices

log = logging.getLogger("mcpward.guards.tool_poisoning")
TRIGGER = "poisoning_below_threshold_first_sight"


def definition_hash(item: Any) -> str:
    """The hash a verdict is cached by: the definition as canonical JSON."""
    text = json.dumps(item, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


class FirstSightConsult:
    """Asks at most `max_concurrent` at once, each within the deadline; remembers every answer."""

    def __init__(self, settings: ConsultSettings, asker: Asker) -> None:
        self.settings = settings
        self.asker = asker
        self.cache = VerdictCache(settings.cache_size)
        self._slots = asyncio.Semaphore(settings.max_concurrent)
        self._pending: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def _key(self, digest: str) -> tuple[str, str, str]:
        return (self.settings.model, "first-sight", digest)

    def verdict(self, item: Any) -> ConsultVerdict | None:
        return self.cache.get(self._key(definition_hash(item)))

    def ask_later(self, kind: str, items: Sequence[tuple[str, Any]]) -> None:
        """Ask, in the background, about every (name, definition) neither answered nor being
        asked (at most `max_pending` at once); an unanswered one is cached as its failure."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # offline use: nothing can be asked
            return
        for name, item in items:
            digest = definition_hash(item)
            if digest in self._pending or self.cache.get(self._key(digest)) is not None:
                continue
            if len(self._pending) >= self.settings.max_pending:
                break
            self._pending.add(digest)
            task = loop.create_task(self._ask(kind, digest, name, item))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def wait(self) -> None:
        """Until every consult in flight has its verdict (each bounds itself by the deadline)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=self.settings.deadline_s + 1.0)

    async def _ask(self, kind: str, digest: str, name: str, item: Any) -> None:
        answer = ConsultAnswer(ConsultOutcome.ERROR)
        try:
            async with asyncio.timeout(self.settings.deadline_s):  # queueing included
                async with self._slots:
                    data = first_sight_data(kind, name, item, self.settings.max_prompt_chars)
                    answer = await self.asker.ask(messages(data))
        except TimeoutError:
            answer = ConsultAnswer(ConsultOutcome.TIMEOUT)
        except Exception as exc:  # the deterministic verdict stands whatever went wrong
            log.warning("first-sight consult failed: %s", type(exc).__name__)
        verdict = ConsultVerdict(
            answer.outcome, self.settings.model, (TRIGGER,), answer.reason, time.time()
        )
        self.cache.put(self._key(digest), verdict)
        self._pending.discard(digest)
        log.info("first-sight consult: %s", verdict.outcome.value)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks))
        await self.asker.aclose()


def build_first_sight(settings: ConsultSettings, services: GatewayServices) -> FirstSightConsult:
    """Through the gateway's egress-filtered client, to the configured endpoint only."""
    from mcpward.contracts.consult.client import ModelClient  # httpx: only with `consult:`

    http = services.http_client(list(settings.allow_private), settings.deadline_s)
    return FirstSightConsult(settings, ModelClient(settings, http))
