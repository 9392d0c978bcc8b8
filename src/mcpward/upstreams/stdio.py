"""The stdio upstream connector: spawns the server under a lifeline supervisor in its own group.

Only named environment variables reach the child; its stderr goes to our log, line by line.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from mcpward.config.upstreams import StdioUpstream
from mcpward.protocol import jsonrpc
from mcpward.protocol.canonical import canonical_sha256
from mcpward.protocol.errors import UpstreamFailure
from mcpward.streams.framing import FrameReader, OversizedFrame, stream_limit
from mcpward.streams.write_batch import WriteBatch
from mcpward.telemetry.log_limits import LimitedLog
from mcpward.upstreams.base import CommandMissing, UpstreamConnection, UpstreamUnavailable
from mcpward.upstreams.command_check import command_problem

log = logging.getLogger("mcpward.upstream")

LIFELINE = Path(__file__).with_name("lifeline.py")
BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
STDIN_GRACE_S = 0.3
TERM_GRACE_S = 1.0
# The supervisor's own grace period and descendant sweep (lifeline.GRACE_S + SWEEP_S), and slack.
LIFELINE_GRACE_S = 4.0


def child_environment(spec: StdioUpstream) -> dict[str, str]:
    """A minimal base, the named pass-through variables, then the config's literal values."""
    env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
    for name in spec.pass_env:
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(spec.env)
    return env


class StdioUpstreamConnection(UpstreamConnection):
    """One subprocess speaking newline-delimited JSON-RPC on stdin/stdout."""

    def __init__(self, spec: StdioUpstream, max_frame_bytes: int) -> None:
        super().__init__(spec.id)
        self.spec = spec
        self.max_frame_bytes = max_frame_bytes
        self._proc: asyncio.subprocess.Process | None = None
        self._frames: FrameReader | None = None
        self._lifeline_w: int | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self._write_lock = asyncio.Lock()
        self._batch: WriteBatch | None = None  # writes to the running process's stdin
        self._limited = LimitedLog(log)
        self._digest = canonical_sha256(
            {"kind": "stdio", "command": spec.command, "args": list(spec.args)}
        )

    @property
    def identity_digest(self) -> str:
        return self._digest

    @property
    def executable_sha256(self) -> str | None:
        """SHA-256 of the file the command resolves to on PATH, where it can be read."""
        return executable_digest(self.spec.command)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc else None

    async def start(self) -> None:
        await self.close()
        env = child_environment(self.spec)
        problem = command_problem(self.spec.command, env, self.spec.cwd)
        if problem is not None:
            log.error("upstream %s cannot start: %s", self.upstream_id, problem)
            raise CommandMissing(problem)
        read_fd, write_fd = os.pipe()
        os.set_inheritable(read_fd, True)
        try:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-S",
                str(LIFELINE),
                str(read_fd),
                "--",
                self.spec.command,
                *self.spec.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=self.spec.cwd,
                start_new_session=True,
                pass_fds=(read_fd,),
                limit=stream_limit(self.max_frame_bytes),
            )
        except OSError as exc:
            os.close(write_fd)
            raise UpstreamUnavailable(
                UpstreamFailure.NOT_CONNECTED, exc.strerror or str(exc)
            ) from None
        finally:
            os.close(read_fd)
        self._lifeline_w = write_fd
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._frames = FrameReader(self._proc.stdout, self.max_frame_bytes)
        assert self._proc.stdin is not None
        self._batch = WriteBatch(self._proc.stdin.write)
        self._stderr_task = asyncio.create_task(self._pump_stderr(self._proc.stderr))
        log.info("upstream %s started (pid %s)", self.upstream_id, self._proc.pid)

    async def _pump_stderr(self, stream: asyncio.StreamReader) -> None:
        while True:
            try:
                line = await stream.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue
            except Exception:
                return
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                log.info("[%s] %s", self.upstream_id, text[:2000])

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_encoded(message, jsonrpc.dumps(message))

    async def send_encoded(self, message: dict[str, Any], data: bytes) -> None:
        """Write one frame; waits (for the caller's deadline) while the pipe is full."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED, "process is not running")
        if len(data) > self.max_frame_bytes:
            raise UpstreamUnavailable(UpstreamFailure.FRAME_TOO_LARGE, f"{len(data)} bytes")
        batch = self._batch
        assert batch is not None  # made with the process
        try:
            batch.write(data + b"\n")
            if proc.stdin.transport.get_write_buffer_size() + batch.pending_bytes > 65536:
                batch.flush()
                async with self._write_lock:
                    await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
            raise UpstreamUnavailable(UpstreamFailure.CRASHED, type(exc).__name__) from None

    async def receive(self) -> dict[str, Any]:
        frames = self._frames
        if frames is None:
            raise UpstreamUnavailable(UpstreamFailure.NOT_CONNECTED)
        while True:
            frame = await frames.next()
            if frame is None:
                code = await self._exit_code()
                raise UpstreamUnavailable(UpstreamFailure.CRASHED, f"exited with code {code}")
            # what the upstream sends at will is logged within a budget (telemetry/log_limits.py)
            if isinstance(frame, OversizedFrame):
                self._limited.log(
                    logging.WARNING,
                    self.upstream_id,
                    "oversized frame",
                    "upstream %s sent a frame over %d bytes; dropped",
                    self.upstream_id,
                    self.max_frame_bytes,
                )
                return {"__oversized__": True, "id": frame.peeked_id}
            try:
                parsed = jsonrpc.loads(frame)
            except (ValueError, RecursionError):
                self._limited.log(
                    logging.WARNING,
                    self.upstream_id,
                    "unparseable frame",
                    "upstream %s sent an unparseable frame; dropped",
                    self.upstream_id,
                )
                continue
            if isinstance(parsed, dict):
                return parsed
            self._limited.log(
                logging.WARNING,
                self.upstream_id,
                "non-object frame",
                "upstream %s sent a non-object frame; dropped",
                self.upstream_id,
            )

    async def _exit_code(self) -> int | None:
        proc = self._proc
        if proc is None:
            return None
        try:
            return await asyncio.wait_for(proc.wait(), timeout=1.0)
        except TimeoutError:
            return None

    async def close(self) -> None:
        proc, self._proc = self._proc, None
        lifeline, self._lifeline_w = self._lifeline_w, None
        if proc is not None and proc.returncode is None:
            if proc.stdin is not None:
                with contextlib.suppress(Exception):
                    if self._batch is not None:
                        self._batch.flush()  # a cancellation sent just before, say
                    proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), timeout=STDIN_GRACE_S)
            except TimeoutError:
                # Cut the lifeline: the supervisor terminates the group, then kills it and every
                # descendant that left it (setsid), which only it (the subreaper) can find.
                _close_fd(lifeline)
                lifeline = None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), timeout=LIFELINE_GRACE_S)
        if proc is not None:
            _signal_group(proc.pid, signal.SIGKILL)  # whatever is left, if the supervisor is stuck
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), timeout=TERM_GRACE_S)
        _close_fd(lifeline)
        if self._stderr_task is not None:
            self._stderr_task.cancel()
            self._stderr_task = None


def _close_fd(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


_EXECUTABLES: dict[tuple[str, int, int], str | None] = {}
MAX_EXECUTABLE_BYTES = 512 * 1024 * 1024


def executable_digest(command: str) -> str | None:
    """SHA-256 of the resolved executable (cached by path, size and mtime); None if unreadable."""
    found = shutil.which(command)
    if found is None:
        return None
    try:
        info = os.stat(found)
    except OSError:
        return None
    key = (os.path.realpath(found), info.st_size, info.st_mtime_ns)
    if key not in _EXECUTABLES:
        digest: str | None = None
        if info.st_size <= MAX_EXECUTABLE_BYTES:
            try:
                with open(key[0], "rb") as handle:
                    digest = hashlib.file_digest(handle, "sha256").hexdigest()
            except OSError:
                digest = None
        _EXECUTABLES[key] = digest
    return _EXECUTABLES[key]
