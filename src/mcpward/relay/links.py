"""An upstream link: one connection plus its pending requests, deadlines, and restart with backoff.

The link replays the client's handshake after a restart so the upstream comes back transparently.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import time
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeGuard

from mcpward.config.upstreams import RestartPolicy
from mcpward.protocol import errors, jsonrpc, methods
from mcpward.protocol.errors import UpstreamFailure
from mcpward.protocol.jsonrpc import FrameKind
from mcpward.relay import upstream_frames
from mcpward.relay.foreign_codes import without_gateway_codes
from mcpward.relay.outbox import Outbox
from mcpward.telemetry import log_limits
from mcpward.telemetry.propagation import TRACEPARENT
from mcpward.upstreams.base import CommandMissing, UpstreamConnection, UpstreamUnavailable

if TYPE_CHECKING:
    from mcpward.telemetry.metrics import GatewayMetrics

log = logging.getLogger("mcpward.relay")

# (link, message, our request id whose stream carried it or None)
MessageHandler = Callable[["UpstreamLink", dict[str, Any], Any], Awaitable[None]]
StateHandler = Callable[["UpstreamLink"], Awaitable[None]]

# An upstream that takes no bytes for this long is stuck (restarted); and what may wait for it.
DEFAULT_SEND_TIMEOUT_S = 30.0
DEFAULT_SEND_QUEUE_BYTES = 8 * 1024 * 1024
CLOSE_FLUSH_S = 0.5  # at close, how long what is queued (a cancellation, say) may take to leave


class CancelReason(str):
    """The client's `reason` for cancelling a request: the message a request task is cancelled
    with, so the cancellation sent upstream carries it (any other cancellation has none)."""


def _cancel_params(request_id: int, exc: asyncio.CancelledError) -> dict[str, Any]:
    params: dict[str, Any] = {"requestId": request_id}
    if exc.args and isinstance(exc.args[0], CancelReason):
        params["reason"] = str(exc.args[0])
    return params


class LinkState(Enum):
    DOWN = "down"
    STARTING = "starting"
    UP = "up"
    CLOSED = "closed"


class UpstreamError(Exception):
    """A request to the upstream failed without an answer; carries the closed-vocabulary reason."""

    def __init__(
        self, upstream: str, reason: UpstreamFailure, detail: str = "", problem: str = ""
    ) -> None:
        super().__init__(f"upstream {upstream!r}: {reason.value}{': ' + detail if detail else ''}")
        self.upstream = upstream
        self.reason = reason
        self.detail = detail
        self.problem = problem  # our own sentence for the client (a missing command), or ""


# An upstream that sends this many invalid answers within the window is restarted: one bad answer
# fails its call; a stream of them says the process is broken (or hostile) as a whole.
INVALID_ANSWERS_BEFORE_RESTART = 5
INVALID_ANSWER_WINDOW_S = 60.0
_ANSWERS = (FrameKind.RESPONSE, FrameKind.ERROR)


def _is_our_id(value: object) -> TypeGuard[int]:
    """Our request ids are integers (never booleans)."""
    return isinstance(value, int) and not isinstance(value, bool)


class UpstreamLink:
    """Owns one UpstreamConnection for one session; routes its answers to waiting requests."""

    def __init__(
        self,
        connection: UpstreamConnection,
        restart: RestartPolicy,
        request_timeout_s: float,
        connect_timeout_s: float,
        on_message: MessageHandler,
        on_state: StateHandler,
        metrics: GatewayMetrics | None = None,
        send_timeout_s: float = DEFAULT_SEND_TIMEOUT_S,
        send_queue_bytes: int = DEFAULT_SEND_QUEUE_BYTES,
    ) -> None:
        self.connection = connection
        self._metrics = metrics  # None: metrics are not served
        self.id = connection.upstream_id
        self.restart = restart
        self.request_timeout_s = request_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._on_message = on_message
        self._on_state = on_state
        self.state = LinkState.DOWN
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._restarter: asyncio.Task[None] | None = None
        self._down_task: asyncio.Future[None] | None = None  # set by _reader_ended
        self._limited = log_limits.LimitedLog(log)  # what an upstream can make us log, bounded
        self._invalid_answers: list[float] = []  # when this connection's invalid answers came
        # Set while the connection is usable: started and, after a restart, its handshake
        # replayed (a request must never reach a fresh process that was not initialized).
        self._ready = asyncio.Event()
        # The client's handshake, replayed after a restart (handshake era only).
        self.init_params: dict[str, Any] | None = None
        self.init_result: dict[str, Any] | None = None
        self.initialized_sent = False
        self.modern_committed = False  # a dual-era server refuses initialize after server/discover
        self.prepare_lock = asyncio.Lock()
        # Set once any connection of this link answered a request: before that (a server that
        # dies at start) its coming and going changes nothing the client could have been shown.
        self.ever_answered = False
        # Restart backoff: it grows across restarts while no connection answers anything (a
        # server that dies at start), and starts over once one has answered.
        self._answered = False
        self._next_delay_s: float | None = None
        self.last_failure = UpstreamFailure.NOT_CONNECTED
        self.last_problem = ""  # why the last start failed, for the client (CommandMissing)
        # Bumped by every new connection (first start, restart, reconnect): what was read on an
        # earlier connection says nothing about what this one serves.
        self.generation = 0
        # Sends never wait on the upstream: they queue here (bounded in bytes) for one writer
        # task per connection, which writes under `send_timeout_s` (see `_write_loop`).
        self.send_timeout_s = send_timeout_s
        self.send_queue_bytes = send_queue_bytes
        self._outbox: Outbox | None = None
        self._writer: asyncio.Task[None] | None = None

    @property
    def up(self) -> bool:
        return self.state is LinkState.UP

    @property
    def ready(self) -> bool:
        """Up and usable (after a restart: its handshake replayed)."""
        return self._ready.is_set() and self.state is LinkState.UP

    async def ensure_started(self) -> None:
        """Start the connection if it has never been started, or wait (up to the connect
        timeout) until a start or restart under way is usable; raise UpstreamError if not."""
        if self._ready.is_set():
            return
        if self.state is LinkState.CLOSED:
            raise UpstreamError(self.id, UpstreamFailure.SHUTTING_DOWN)
        if self.state is not LinkState.DOWN or self._restarter is not None:
            try:
                await asyncio.wait_for(self._ready.wait(), self.connect_timeout_s)
            except TimeoutError:
                raise UpstreamError(self.id, UpstreamFailure.RESTARTING) from None
            return
        await self._start_once()
        self._ready.set()

    async def reconnect(self) -> None:
        """A fresh connection (e.g. to re-open a dual-era server in the handshake era)."""
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
            self._reader = None
        self._fail_pending(UpstreamFailure.RESTARTING)
        await self.connection.close()
        self._no_longer_up(None)
        self.state = LinkState.DOWN
        self.modern_committed = False
        self.init_result = None
        self._ready.clear()
        await self._start_once()
        self._ready.set()

    async def _start_once(self) -> None:
        self.state = LinkState.STARTING
        try:
            await asyncio.wait_for(self.connection.start(), self.connect_timeout_s)
        except (UpstreamUnavailable, TimeoutError, OSError) as exc:
            self.state = LinkState.DOWN
            reason = UpstreamFailure.NOT_CONNECTED
            if isinstance(exc, UpstreamUnavailable) and exc.reason is UpstreamFailure.CAPACITY:
                reason = UpstreamFailure.CAPACITY  # a cap, not a broken server: say so
            self.last_failure = reason
            self.last_problem = exc.problem if isinstance(exc, CommandMissing) else ""
            raise UpstreamError(self.id, reason, str(exc), self.last_problem) from None
        self.last_problem = ""
        self.generation += 1
        self._answered = False
        self.state = LinkState.UP
        if self._metrics is not None:
            self._metrics.link_up(self.id)
        self._invalid_answers.clear()
        self._reader = asyncio.create_task(self._read_loop(), name=f"upstream-{self.id}")
        self._reader.add_done_callback(self._reader_ended)

    async def _read_loop(self) -> None:
        conn = self.connection
        while True:
            try:
                message, related = await conn.receive_related()
            except UpstreamUnavailable as exc:
                await self._went_down(exc.reason, exc.detail)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.error("upstream %s reader failed: %s", self.id, type(exc).__name__)
                log.debug("upstream %s reader failure", self.id, exc_info=True)
                await self._went_down(UpstreamFailure.UNPARSEABLE, "reader failed")
                return
            try:
                too_many = await self._take(message, related)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one message never stops the reader
                if self._limited.log(
                    logging.ERROR,
                    self.id,
                    "handler failure",
                    "handling a message from upstream %s failed: %s",
                    self.id,
                    type(exc).__name__,
                ):
                    log.debug("upstream %s handler failure", self.id, exc_info=True)
                continue
            if too_many:
                await self._went_down(
                    UpstreamFailure.INVALID_ANSWER,
                    f"{INVALID_ANSWERS_BEFORE_RESTART} invalid answers within "
                    f"{INVALID_ANSWER_WINDOW_S:.0f} s",
                )
                if self._restarter is None:  # no restart coming: stop the process now
                    await self.connection.close()
                return

    async def _take(self, message: dict[str, Any], related: Any) -> bool:
        """Route one frame: an answer to its waiting request, the rest to the session.

        Every frame is checked before any field of it is read (relay/upstream_frames.py).
        Returns True when the upstream has sent too many invalid answers and must restart."""
        if message.get("__oversized__"):  # the connector's own marker
            self._fail_one(message.get("id"), UpstreamFailure.FRAME_TOO_LARGE)
            return False
        frame, problem = upstream_frames.check(message)
        is_answer = frame.kind in _ANSWERS if frame is not None else "method" not in message
        if is_answer:
            if problem is not None:
                return self._invalid_answer(message, related, problem)
            future = self._pending.pop(message["id"], None) if "id" in message else None
            if future is None:
                log.debug("upstream %s answered a request not in flight; dropped", self.id)
            elif not future.done():
                self._answered = self.ever_answered = True
                future.set_result(without_gateway_codes(message))
            return False
        if frame is None or problem is not None:
            await self._invalid_inbound(message, problem or "invalid frame")
            return False
        await self._on_message(self, message, related)
        return False

    def _invalid_answer(self, message: dict[str, Any], related: Any, problem: str) -> bool:
        """Fail the one call this answer was for (if it can be told), log, count."""
        target = message.get("id")
        if not _is_our_id(target) or target not in self._pending:
            # over HTTP the stream that carried it says which request it answers
            target = related if _is_our_id(related) and related in self._pending else None
        if target is not None:
            self._fail_one(target, UpstreamFailure.INVALID_ANSWER, problem)
        self._limited.log(
            logging.WARNING,
            self.id,
            "invalid answer",
            "upstream %s sent an invalid answer (%s); %s",
            self.id,
            problem,
            "failed its call" if target is not None else "dropped",
        )
        if self.state is not LinkState.UP:
            return False
        now = time.monotonic()
        recent = [t for t in self._invalid_answers if now - t <= INVALID_ANSWER_WINDOW_S]
        recent.append(now)
        self._invalid_answers = recent  # at most INVALID_ANSWERS_BEFORE_RESTART entries
        return len(recent) >= INVALID_ANSWERS_BEFORE_RESTART

    async def _invalid_inbound(self, message: dict[str, Any], problem: str) -> None:
        """A malformed request or notification: dropped; a request gets -32600 back."""
        request_id = message.get("id")
        kind = "request" if "id" in message else "notification"
        self._limited.log(
            logging.WARNING,
            self.id,
            f"invalid {kind}",
            "upstream %s sent an invalid %s (%s); dropped",
            self.id,
            kind,
            problem,
        )
        if isinstance(request_id, str) or _is_our_id(request_id):  # it waits for an answer
            await self.send_raw(
                jsonrpc.error(request_id, errors.INVALID_REQUEST, f"invalid request: {problem}")
            )

    def _reader_ended(self, task: asyncio.Task[None]) -> None:
        """The reader stopped. After a clean close or a cancellation nothing is to be done; if it
        failed, or returned with the link still up, the link is marked down (and restarted)."""
        if task.cancelled():
            return
        exc = task.exception()  # retrieved, even for a reader already replaced
        if self.state is LinkState.CLOSED or task is not self._reader:
            return
        if exc is None and self.state is not LinkState.UP:
            return  # it saw the connection go and said so (_went_down)
        what = type(exc).__name__ if exc is not None else "returned"
        log.error("upstream %s: its reader stopped (%s); marking the link down", self.id, what)
        self._down_task = asyncio.ensure_future(
            self._went_down(UpstreamFailure.UNPARSEABLE, f"reader stopped: {what}")
        )

    def _fail_one(self, request_id: object, reason: UpstreamFailure, detail: str = "") -> None:
        if _is_our_id(request_id):
            future = self._pending.pop(request_id, None)
            if future is not None and not future.done():
                future.set_exception(UpstreamError(self.id, reason, detail))

    async def _went_down(self, reason: UpstreamFailure, detail: str) -> None:
        if self.state is LinkState.CLOSED:
            return
        log.warning("upstream %s is down: %s %s", self.id, reason.value, detail)
        self._no_longer_up(reason)
        self.state = LinkState.DOWN
        self.last_failure = reason
        self._ready.clear()
        self._fail_pending(reason, detail)
        with contextlib.suppress(Exception):
            await self._on_state(self)
        if self._answered or self._next_delay_s is None:
            self._next_delay_s = self.restart.initial_backoff_s
        else:  # it died again without answering anything: wait longer before the next try
            self._next_delay_s = min(self._next_delay_s * 2, self.restart.max_backoff_s)
        if self.restart.enabled and self._restarter is None:
            self._restarter = asyncio.create_task(self._restart_loop())

    def _fail_pending(self, reason: UpstreamFailure, detail: str = "") -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(UpstreamError(self.id, reason, detail))

    async def _restart_loop(self) -> None:
        delay = self._next_delay_s or self.restart.initial_backoff_s
        try:
            while self.state is not LinkState.CLOSED:
                log.info("upstream %s: restart in %.2f s", self.id, delay)
                await asyncio.sleep(delay)
                if self.state is LinkState.CLOSED:
                    return
                try:
                    await self._start_once()
                    await self._replay_handshake()
                    self._ready.set()
                except UpstreamError as exc:
                    log.warning("upstream %s restart failed: %s", self.id, exc)
                    if self.state is LinkState.UP:
                        await self.connection.close()
                        self._no_longer_up(None)
                        self.state = LinkState.DOWN
                    delay = self._next_delay_s = min(delay * 2, self.restart.max_backoff_s)
                    continue
                log.info("upstream %s is back", self.id)
                if self._metrics is not None:
                    self._metrics.link_restarted(self.id)
                self._restarter = None
                with contextlib.suppress(Exception):
                    await self._on_state(self)
                return
        finally:
            self._restarter = None

    async def _replay_handshake(self) -> None:
        if self.init_params is None:
            return
        reply = await self.request_raw(methods.INITIALIZE, self.init_params)
        if "error" in reply:
            raise UpstreamError(self.id, UpstreamFailure.NOT_CONNECTED, "initialize refused")
        self.init_result = reply.get("result")
        if self.initialized_sent:
            await self.notify(methods.INITIALIZED, None)

    def new_request_id(self) -> int:
        """An id of ours for a request to this upstream, for callers that must know it first."""
        return next(self._ids)

    async def request_raw(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None = None,
        request_id: int | None = None,
    ) -> dict[str, Any]:
        """Send a request with our own id; return the upstream's response or error message."""
        if self.state is not LinkState.UP:
            raise UpstreamError(self.id, self._down_reason(), problem=self.last_problem)
        if request_id is None:
            request_id = next(self._ids)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._pending[request_id] = future
        try:
            queued = self._enqueue(jsonrpc.request(request_id, method, params))
        except BaseException:  # e.g. params that cannot be serialised
            self._pending.pop(request_id, None)
            raise
        if not queued:
            self._pending.pop(request_id, None)
            raise UpstreamError(self.id, UpstreamFailure.NOT_READING, "send queue full")
        limit = None if timeout == math.inf else (timeout or self.request_timeout_s)
        # The deadline (armed once the request is queued, so it covers the send) fails our own
        # future (one timer handle): cheaper than asyncio.timeout, which this path would
        # otherwise set up and tear down for every request.
        deadline = loop.call_later(limit, _expire, future) if limit is not None else None
        try:
            return await future
        except TimeoutError:
            self._pending.pop(request_id, None)
            self._enqueue(
                jsonrpc.notification(
                    methods.CANCELLED,
                    {"requestId": request_id, "reason": "mcpward: deadline exceeded"},
                )
            )
            raise UpstreamError(self.id, UpstreamFailure.TIMEOUT) from None
        except asyncio.CancelledError as exc:
            if future.done() and not future.cancelled():
                future.exception()  # retrieved: a deadline that fired as we were cancelled
            if self._pending.pop(request_id, None) is not None and self.state is LinkState.UP:
                self._enqueue(
                    jsonrpc.notification(methods.CANCELLED, _cancel_params(request_id, exc))
                )
            raise
        finally:
            if deadline is not None:
                deadline.cancel()

    def _down_reason(self) -> UpstreamFailure:
        if self.state is LinkState.CLOSED:
            return UpstreamFailure.SHUTTING_DOWN
        if self._restarter is not None:
            return UpstreamFailure.RESTARTING
        return self.last_failure

    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        """Send a notification; dropped (with a debug log) if the upstream is down."""
        await self.send_raw(jsonrpc.notification(method, params))

    async def send_raw(self, message: dict[str, Any]) -> None:
        """Queue a notification or a response; never waits on the upstream. Dropped (with a
        rate-limited log line) if the upstream is down or its send queue is full."""
        if self.state is not LinkState.UP:
            log.debug("upstream %s down; dropped a %s", self.id, message.get("method", "response"))
            return
        if not self._enqueue(message):
            self._log_drop()

    # ---- the outbound queue ----------------------------------------------------------------

    def _enqueue(self, message: dict[str, Any]) -> bool:
        """Queue `message` for this connection's writer; False if the queue is full."""
        if self.state is not LinkState.UP:
            return False
        outbox = self._outbox
        if outbox is None or outbox.generation != self.generation:
            outbox = self._new_outbox()
        return outbox.offer(message, jsonrpc.dumps(message), TRACEPARENT.get())

    def _new_outbox(self) -> Outbox:
        """A fresh queue and writer for the current connection (what an earlier one had
        queued was for a process that is gone)."""
        old_writer = self._writer
        if old_writer is not None and old_writer is not asyncio.current_task():
            old_writer.cancel()
        if self._outbox is not None:
            self._outbox.drop_all()
        outbox = self._outbox = Outbox(self.send_queue_bytes, self.generation)
        self._writer = asyncio.create_task(self._write_loop(outbox), name=f"upstream-{self.id}-w")
        return outbox

    async def _write_loop(self, outbox: Outbox) -> None:
        """Write queued frames in order; a frame the upstream does not take within the send
        deadline means it stopped reading: it is marked unavailable and restarted."""
        while True:
            message, data, trace = await outbox.take()
            try:
                if outbox.generation != self.generation or self.state is not LinkState.UP:
                    continue  # queued for a connection that is gone
                TRACEPARENT.set(trace)  # this task's own context: what an HTTP post copies
                async with asyncio.timeout(self.send_timeout_s):
                    await self.connection.send_encoded(message, data)
            except TimeoutError:
                outbox.drop_all()
                await self._stuck(outbox)
                return
            except UpstreamUnavailable as exc:
                if "method" in message and "id" in message:
                    self._fail_one(message["id"], exc.reason)
                else:
                    log.warning("upstream %s: send failed: %s", self.id, exc)
            finally:
                outbox.written(data)

    async def _stuck(self, outbox: Outbox) -> None:
        """The upstream took nothing for `send_timeout_s`: answer its calls -32011
        not_reading, stop its reader and (if enabled) restart it."""
        if outbox.generation != self.generation or self.state is not LinkState.UP:
            return
        log.warning(
            "upstream %s took no input for %.1fs; marking it unavailable",
            self.id,
            self.send_timeout_s,
        )
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()  # it reads a process we are about to replace
        await self._went_down(UpstreamFailure.NOT_READING, "send deadline passed")
        if self._restarter is None and self.state is not LinkState.CLOSED:
            await self.connection.close()  # no restart: release the stuck process now

    def _log_drop(self) -> None:
        self._limited.log(
            logging.WARNING,
            self.id,
            "not reading",
            "upstream %s is not reading its input; a notification to it was dropped",
            self.id,
        )

    async def _flush_outbox(self) -> None:
        """At close: let what is queued (a cancellation, say) leave, briefly."""
        outbox = self._outbox
        if outbox is None or self._writer is None or self._writer.done():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(outbox.empty(), CLOSE_FLUSH_S)

    def _no_longer_up(self, reason: UpstreamFailure | None) -> None:
        """For /metrics: an up connection went away (reason: it failed; None: we closed it)."""
        if self._metrics is not None and self.state is LinkState.UP:
            self._metrics.link_down(self.id, reason.value if reason is not None else None)

    async def close(self) -> None:
        if self.state is LinkState.UP:
            await self._flush_outbox()
        self._no_longer_up(None)
        self.state = LinkState.CLOSED
        self._ready.clear()
        for task in (self._restarter, self._reader, self._writer):
            if task is not None:
                task.cancel()
        self._fail_pending(UpstreamFailure.SHUTTING_DOWN)
        await self.connection.close()
        for task in (self._restarter, self._reader, self._writer):
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


def _expire(future: asyncio.Future[dict[str, Any]]) -> None:
    """A request's deadline passed: its waiter gets TimeoutError (unless it was answered)."""
    if not future.done():
        future.set_exception(TimeoutError())
