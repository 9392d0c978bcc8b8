"""Database work a gateway's event loop waits for only so long: run on a worker thread, given up
after a bound (the pool is then taken for gone and calls fail at once until it answers again).

A dead server usually fails a call at once; a vanished host or a network that swallows packets
does not, and without a bound one call would hold the event loop, and every session with it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from mcpward.store.postgres.pool import PgPool, PostgresUnavailable

T = TypeVar("T")


class BoundedCalls:
    """Runs one function at a time on a worker thread and waits at most `bound` seconds.

    A worker that did not answer in time is abandoned (it may be stuck on a dead socket) and the
    next call gets a fresh one; meanwhile the pool is marked down so calls fail at once."""

    def __init__(self, pool: PgPool, bound: float) -> None:
        self._pool = pool
        self._bound = bound
        self._lock = threading.Lock()
        self._worker: _Worker | None = None

    def call(self, fn: Callable[[], T]) -> T:
        down = self._pool.down
        if down is not None:
            raise PostgresUnavailable(down)
        with self._lock:
            if self._worker is None:
                self._worker = _Worker()
            worker = self._worker
        future = worker.submit(fn)
        try:
            return future.result(self._bound)
        except FutureTimeout:
            with self._lock:
                if self._worker is worker:
                    self._worker = None
            worker.abandon()
            raise self._pool.mark_down(
                f"{self._pool.where}: no answer within {self._bound:g} s"
            ) from None

    def close(self) -> None:
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.abandon()


class _Worker:
    """One daemon thread taking one job at a time."""

    def __init__(self) -> None:
        self._jobs: list[tuple[Callable[[], object], Future[object]]] = []
        self._cond = threading.Condition()
        self._stop = False
        threading.Thread(target=self._run, name="mcpward-pg-call", daemon=True).start()

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._cond:
            self._jobs.append((fn, future))  # type: ignore[arg-type]
            self._cond.notify()
        return future

    def abandon(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stop:
                    self._cond.wait()
                if self._stop and not self._jobs:
                    return
                fn, future = self._jobs.pop(0)
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)
