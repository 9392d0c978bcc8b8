"""The handshake era's replayable events: each session's recent events by id (for resumption with
`Last-Event-ID`), capped in count and bytes per session, and in bytes across the process.
"""

from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict
from typing import NamedTuple

MAX_EVENTS = 1000
DEFAULT_SESSION_BYTES = 4 * 1024 * 1024
DEFAULT_TOTAL_BYTES = 64 * 1024 * 1024
# What an entry costs beyond its data (its id, the tuple, the dict slot): priming events have none.
ENTRY_OVERHEAD_BYTES = 128

Event = tuple[str, bytes | None, bool]  # (event id, data or None for priming, final)


class _Entry(NamedTuple):
    stream: str
    data: bytes | None
    final: bool
    seq: int  # order across every session's log (the process-wide budget evicts the oldest)
    size: int


class EventBudget:
    """The bytes all sessions' event logs hold together; past `cap_bytes` the oldest event of
    the process goes first, whichever session it belongs to."""

    def __init__(self, cap_bytes: int = DEFAULT_TOTAL_BYTES) -> None:
        self.cap_bytes = cap_bytes
        self.used_bytes = 0
        self._seq = itertools.count(1)
        self._logs: weakref.WeakSet[EventLog] = weakref.WeakSet()

    def next_seq(self) -> int:
        return next(self._seq)

    def enter(self, log: EventLog) -> None:
        self._logs.add(log)

    def leave(self, log: EventLog) -> None:
        self._logs.discard(log)

    def trim(self) -> None:
        """Evict the oldest events of the process until the total is under the cap."""
        while self.used_bytes > self.cap_bytes:
            oldest = min(
                (log for log in self._logs if log.oldest_seq is not None),
                key=lambda log: log.oldest_seq or 0,
                default=None,
            )
            if oldest is None:
                return
            oldest.evict_oldest()


class EventLog:
    """One session's recent events by id, for replay after a dropped stream."""

    def __init__(
        self,
        max_events: int = MAX_EVENTS,
        max_bytes: int = DEFAULT_SESSION_BYTES,
        budget: EventBudget | None = None,
    ) -> None:
        self._max = max_events
        self._max_bytes = max_bytes
        self._budget = budget if budget is not None else EventBudget()
        self._budget.enter(self)
        self._events: OrderedDict[str, _Entry] = OrderedDict()
        self._ids = itertools.count(1)
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._events)

    @property
    def oldest_seq(self) -> int | None:
        for entry in self._events.values():
            return entry.seq
        return None

    def append(self, stream: str, data: bytes | None, final: bool) -> str:
        """Log an event; the oldest go while the session is over its caps (the newest always
        stays here, however large), then while the process is over its own."""
        event_id = str(next(self._ids))
        size = (len(data) if data is not None else 0) + ENTRY_OVERHEAD_BYTES
        self._events[event_id] = _Entry(stream, data, final, self._budget.next_seq(), size)
        self.bytes += size
        self._budget.used_bytes += size
        while len(self._events) > 1 and (
            len(self._events) > self._max or self.bytes > self._max_bytes
        ):
            self.evict_oldest()
        self._budget.trim()
        return event_id

    def evict_oldest(self) -> None:
        _, entry = self._events.popitem(last=False)
        self.bytes -= entry.size
        self._budget.used_bytes -= entry.size

    def after(self, event_id: str) -> tuple[str, list[Event]] | None:
        """The stream `event_id` belongs to, and that stream's later events."""
        entry = self._events.get(event_id)
        if entry is None:
            return None
        stream = entry.stream
        later: list[Event] = []
        seen = False
        for eid, later_entry in self._events.items():
            if eid == event_id:
                seen = True
            elif seen and later_entry.stream == stream and later_entry.data is not None:
                later.append((eid, later_entry.data, later_entry.final))
        return stream, later

    def close(self) -> None:
        """The session is gone: give its bytes back to the process."""
        while self._events:
            self.evict_oldest()
        self._budget.leave(self)
