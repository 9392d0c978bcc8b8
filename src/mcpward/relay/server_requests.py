"""The server→client requests of one session that wait for the client's answer, and the progress
tokens they carry: what an upstream can make a session remember, so it is capped and forgotten.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpward.relay.links import UpstreamLink

# Requests an upstream may have waiting on the client at once, per session; past it the
# upstream is answered with an error at once (a client answers sampling in seconds, not hours).
MAX_WAITING = 256
# A progress token or request id longer than this is not remembered: real ones are short.
MAX_KEY_CHARS = 256


def rememberable(value: object) -> bool:
    """A short string or an integer (a bool, a float, a list or a long string is not kept)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -(2**63) <= value < 2**64
    return isinstance(value, str) and len(value) <= MAX_KEY_CHARS


@dataclass(slots=True)
class Waiting:
    link: UpstreamLink
    upstream_id: Any  # the id the upstream gave its request
    progress_token: Any  # None: none remembered


class ServerRequests:
    """Our id for each waiting server request -> where its answer goes; progress token -> link."""

    def __init__(self, max_waiting: int = MAX_WAITING) -> None:
        self.max_waiting = max_waiting
        self._waiting: dict[int, Waiting] = {}
        self._progress: dict[Any, UpstreamLink] = {}
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._waiting)

    @property
    def progress_tokens(self) -> int:
        return len(self._progress)

    def add(self, link: UpstreamLink, upstream_id: Any, meta: object) -> int | None:
        """Our id for a new server request, or None if it may not wait (too many waiting, or
        an id too long to keep). Its progress token is remembered only if short."""
        if len(self._waiting) >= self.max_waiting or not rememberable(upstream_id):
            return None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if token is not None and (not rememberable(token) or token in self._progress):
            token = None  # not ours to route (or another request's): progress for it is dropped
        gw_id = next(self._ids)
        self._waiting[gw_id] = Waiting(link, upstream_id, token)
        if token is not None:
            self._progress[token] = link
        return gw_id

    def answered(self, gw_id: object) -> Waiting | None:
        """The client answered our id `gw_id`: forget it (and its token)."""
        if not isinstance(gw_id, int) or isinstance(gw_id, bool):
            return None
        waiting = self._waiting.pop(gw_id, None)
        if waiting is not None:
            self._forget_token(waiting)
        return waiting

    def cancelled(self, link: UpstreamLink, upstream_id: object) -> int | None:
        """The upstream cancelled its request: forget it; our id for it, or None if unknown."""
        for gw_id, waiting in self._waiting.items():
            if waiting.link is link and waiting.upstream_id == upstream_id:
                del self._waiting[gw_id]
                self._forget_token(waiting)
                return gw_id
        return None

    def forget_link(self, link: UpstreamLink) -> None:
        """The link's connection is gone: nothing it asked can be answered any more."""
        for gw_id, waiting in list(self._waiting.items()):
            if waiting.link is link:
                del self._waiting[gw_id]
                self._forget_token(waiting)

    def progress_link(self, token: object) -> UpstreamLink | None:
        """The upstream whose waiting request carries progress token `token`."""
        return self._progress.get(token) if rememberable(token) else None

    def _forget_token(self, waiting: Waiting) -> None:
        token = waiting.progress_token
        if token is not None and self._progress.get(token) is waiting.link:
            del self._progress[token]
