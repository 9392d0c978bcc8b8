"""The consult as the gate uses it: decide whether a PROCEED needs asking, ask once per contract
change in the background (bounded in time, concurrency and queue), and remember the verdict.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from mcpward.contracts.consult.cache import CacheKey, ConsultVerdict, VerdictCache
from mcpward.contracts.consult.prompt import ConsultAnswer, consulted_data, messages
from mcpward.contracts.consult.settings import ConsultSettings
from mcpward.contracts.consult.triggers import TriggerProbes, ambiguity_triggers
from mcpward.contracts.model import ItemKind
from mcpward.contracts.taxonomy import Change
from mcpward.evidence.vocabulary import ConsultOutcome

log = logging.getLogger("mcpward.contracts.consult")

ItemKey = tuple[str, ItemKind, str]  # (upstream, kind, name)


class Asker(Protocol):
    """One exchange with the model (`client.ModelClient`); never raises."""

    async def ask(self, chat: list[dict[str, str]]) -> ConsultAnswer: ...

    async def aclose(self) -> None: ...


class _Pending:
    def __repr__(self) -> str:
        return "PENDING"


PENDING = _Pending()  # asked, not answered yet
Review = ConsultVerdict | _Pending | None  # None: no trigger fired, the PROCEED needs no consult


class SemanticConsult:
    """Tier 2. Only ever asked about a change the posture judged PROCEED; only a HOLD answer
    changes anything. All methods run on the event loop's thread."""

    def __init__(
        self,
        settings: ConsultSettings,
        asker: Asker,
        probes: TriggerProbes,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.asker = asker
        self.probes = probes
        self.clock = clock
        self.cache = VerdictCache(settings.cache_size)
        self._tasks: dict[CacheKey, asyncio.Task[None]] = {}
        self._items: dict[ItemKey, CacheKey] = {}
        self._slots = asyncio.Semaphore(settings.max_concurrent)

    def review(
        self,
        item: ItemKey,
        old: Any,
        new: Any,
        old_hash: str,
        new_hash: str,
        changes: Sequence[Change],
    ) -> Review:
        """The consult's say on one structurally benign change: None (not ambiguous), PENDING
        (being asked now), or the verdict (cached)."""
        triggers = ambiguity_triggers(old, new, changes, self.settings.triggers, self.probes)
        if not triggers:
            return None
        key: CacheKey = (self.settings.model, old_hash, new_hash)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        self._items[item] = key
        if key in self._tasks:
            return PENDING
        names = tuple(t.value for t in triggers)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (offline use): nothing can be asked
            return ConsultVerdict(ConsultOutcome.ERROR, self.settings.model, names, at=self.clock())
        if len(self._tasks) >= self.settings.max_pending:
            verdict = ConsultVerdict(
                ConsultOutcome.OVERLOADED, self.settings.model, names, at=self.clock()
            )
            self.cache.put(key, verdict)
            return verdict
        data = consulted_data(
            item[1].value, item[2], old, new, changes, triggers, self.settings.max_prompt_chars
        )
        self._tasks[key] = loop.create_task(self._ask(key, data, names))
        return PENDING

    async def _ask(self, key: CacheKey, data: str, triggers: tuple[str, ...]) -> None:
        answer = ConsultAnswer(ConsultOutcome.ERROR)
        try:
            async with asyncio.timeout(self.settings.deadline_s):  # queueing included
                async with self._slots:
                    answer = await self.asker.ask(messages(data))
        except TimeoutError:
            answer = ConsultAnswer(ConsultOutcome.TIMEOUT)
        except Exception as exc:
            log.warning("consult failed: %s", type(exc).__name__)
        finally:
            verdict = ConsultVerdict(
                answer.outcome, self.settings.model, triggers, answer.reason, self.clock()
            )
            self.cache.put(key, verdict)
            self._tasks.pop(key, None)
            for item in [i for i, k in self._items.items() if k == key]:
                del self._items[item]  # answered: only the cache remembers it (bounded)
            log.info("consult about a contract change: %s", verdict.outcome.value)

    def pending(self, item: ItemKey) -> bool:
        key = self._items.get(item)
        return key is not None and key in self._tasks

    async def wait(self, item: ItemKey | None = None) -> None:
        """Until the consult about `item` (or every consult in flight) has its verdict; at most
        the deadline (each consult enforces it on itself)."""
        if item is None:
            tasks = set(self._tasks.values())
        else:
            key = self._items.get(item)
            task = self._tasks.get(key) if key is not None else None
            tasks = {task} if task is not None else set()
        if tasks:
            await asyncio.wait(tasks, timeout=self.settings.deadline_s + 1.0)

    def latest_for(self, new_hash: str) -> ConsultVerdict | None:
        return self.cache.latest_for(new_hash)

    async def close(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.asker.aclose()
