"""The gateway processes the fuzzer drives: `mcpward run --config` with the stdio front, or with
the HTTP front (legacy sessions and 2026-07-28 requests), in front of the scripted upstream.

Synchronous (threads, not an event loop) so one process can outlive many hypothesis examples.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

import httpx

from mcpward.guards.defaults import default_guard_specs
from mcpward.identity.tokens import hash_token
from tests.support.gateway import gateway_argv, tool_filter_guard, write_gateway_config
from tests.support.paths import REPO_ROOT

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "scripted_upstream.py"
# Small caps make frames over them cheap to send.
MAX_FRAME_BYTES = 32 * 1024
# A call whose answer the upstream never gives (a wrong id) costs this long.
REQUEST_TIMEOUT_S = 3.0
# Hang guards only (the machine may be loaded): far above any honest answer time.
ANSWER_WAIT_S = REQUEST_TIMEOUT_S + 40.0
START_WAIT_S = 90.0
TOKEN = "fuzz-client-token-0123456789abcdef"
LEGACY_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "mcpward-fuzz", "version": "1"},
}
PLAIN_SCRIPT = "plain"
PLAIN_TEXT = "plain-ok"


class GatewayDied(AssertionError):
    """The gateway process exited (or stopped answering) during a step."""


def guard_specs() -> list[dict[str, Any]]:
    """Whatever the built-in defaults are, plus a tool_filter refusing `*delete*` (so there are
    refused calls whose absence upstream can be checked)."""
    specs = [
        g.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
        for g in default_guard_specs()
    ]
    return [*specs, tool_filter_guard("*delete*")]


def write_config(directory: Path, front: dict[str, Any] | None = None) -> Path:
    scripts = directory / "scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    upstream = {
        "id": "fuzz",
        "command": sys.executable,
        "args": [str(FIXTURE), "--scripts", str(scripts), "--log", str(directory / "calls.jsonl")],
        "restart": {"initial_backoff_s": 0.1},
    }
    extra: dict[str, Any] = {"logging": {"level": "info", "file": str(directory / "gateway.log")}}
    if front is not None:
        extra["front"] = front
    gateway = {"max_frame_bytes": MAX_FRAME_BYTES, "request_timeout_s": REQUEST_TIMEOUT_S}
    return write_gateway_config(
        directory, [upstream], guards=guard_specs(), gateway=gateway, extra=extra
    )


def write_script(directory: Path, name: str, lines: list[bytes]) -> None:
    steps = [{"b64": base64.b64encode(line).decode()} for line in lines]
    tmp = directory / "scripts" / f"{name}.tmp"
    tmp.write_text(json.dumps(steps), encoding="utf-8")
    tmp.replace(directory / "scripts" / f"{name}.json")


def plain_answer() -> bytes:
    answer = {
        "jsonrpc": "2.0",
        "id": "__FUZZ_ID__",
        "result": {"content": [{"type": "text", "text": PLAIN_TEXT}]},
    }
    return json.dumps(answer).encode()


def rss_kib(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def upstream_calls(directory: Path) -> list[dict[str, Any]]:
    path = directory / "calls.jsonl"
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    complete = text[: text.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]


class Inbox:
    """Lines received from the gateway, in order, with a condition to wait on."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.closed = False
        self._cond = threading.Condition()

    def add(self, line: bytes) -> None:
        with self._cond:
            self.lines.append(line)
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def count(self) -> int:
        with self._cond:
            return len(self.lines)

    def since(self, start: int) -> list[bytes]:
        with self._cond:
            return self.lines[start:]

    def wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    return predicate()
                self._cond.wait(min(left, 0.5))
            return True


class GatewayProcess:
    """Common to both fronts: the process, its directory, its memory baseline."""

    front = "?"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.proc: subprocess.Popen[bytes] | None = None
        self.baseline_kib = 0
        self.starts = 0
        self._ids = 0

    def next_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}-{self._ids}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exit_status(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def rss_growth_kib(self) -> int:
        return rss_kib(self.pid) - self.baseline_kib

    def log_tail(self, lines: int = 15) -> str:
        text = ""
        for name in ("gateway.log", "stderr.log"):
            path = self.directory / name
            if path.exists():
                text += path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def ensure(self) -> bool:
        """Start the process if it is not running; True if it had to be (re)started."""
        if self.alive():
            return False
        self.stop()
        self.starts += 1
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "scripts").mkdir(parents=True, exist_ok=True)
        write_script(self.directory, PLAIN_SCRIPT, [plain_answer()])
        self._start()
        self.baseline_kib = rss_kib(self.pid)
        return self.starts > 1

    def _start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def popen(self, config: Path, stdin: int) -> subprocess.Popen[bytes]:
        stderr = (self.directory / "stderr.log").open("ab")
        try:
            return subprocess.Popen(
                gateway_argv(config),
                stdin=stdin,
                stdout=subprocess.PIPE if stdin == subprocess.PIPE else subprocess.DEVNULL,
                stderr=stderr,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                start_new_session=True,
            )
        finally:
            stderr.close()


class StdioGateway(GatewayProcess):
    """`mcpward run --config` with the stdio front; one client session for its whole life."""

    front = "stdio"

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.inbox = Inbox()
        self._writer: ThreadPoolExecutor | None = None

    def _start(self) -> None:
        config = write_config(self.directory)
        self.proc = self.popen(config, subprocess.PIPE)
        self.inbox = Inbox()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fuzz-stdin")
        threading.Thread(target=self._read, args=(self.proc, self.inbox), daemon=True).start()
        init = {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": {"sampling": {}, "roots": {}},
                "clientInfo": {"name": "mcpward-fuzz", "version": "1"},
            },
        }
        self.send(json.dumps(init).encode())
        if self.wait_answer("init", START_WAIT_S) is None:
            raise GatewayDied(f"the stdio gateway never answered initialize:\n{self.log_tail()}")
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        self.request("tools/list", {}, START_WAIT_S)

    def _read(self, proc: subprocess.Popen[bytes], inbox: Inbox) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            inbox.add(line)
            # A request from the gateway (an upstream's, relayed) gets an error back: a client
            # that supports nothing, but answers.
            with contextlib.suppress(Exception):
                message = json.loads(line)
                if isinstance(message, dict) and "method" in message and "id" in message:
                    reply = {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": -32601, "message": "the fuzzer supports nothing"},
                    }
                    self.send(json.dumps(reply).encode(), wait=False)
        inbox.close()

    def send(self, line: bytes, *, wait: bool = True) -> None:
        proc, writer = self.proc, self._writer
        if proc is None or proc.stdin is None or writer is None:
            raise GatewayDied("the stdio gateway is not running")

        def write() -> None:
            assert proc.stdin is not None
            proc.stdin.write(line + b"\n")
            proc.stdin.flush()

        future = writer.submit(write)
        if not wait:
            return
        try:
            future.result(ANSWER_WAIT_S)
        except FutureTimeout:
            raise GatewayDied("the stdio gateway stopped reading its input") from None
        except OSError as exc:
            raise GatewayDied(f"writing to the stdio gateway failed: {exc}") from None

    def answers_to(self, request_id: Any, start: int = 0) -> list[dict[str, Any]]:
        found = []
        for line in self.inbox.since(start):
            with contextlib.suppress(ValueError):
                value = json.loads(line)
                if (
                    isinstance(value, dict)
                    and "method" not in value
                    and value.get("id") == request_id
                    and type(value.get("id")) is type(request_id)
                ):
                    found.append(value)
        return found

    def wait_answer(self, request_id: Any, timeout: float, start: int = 0) -> dict[str, Any] | None:
        self.inbox.wait(lambda: bool(self.answers_to(request_id, start)), timeout)
        found = self.answers_to(request_id, start)
        return found[0] if found else None

    def request(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        request_id = self.next_id(method)
        start = self.inbox.count()
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.send(json.dumps(message).encode())
        answer = self.wait_answer(request_id, timeout, start)
        if answer is None:
            raise GatewayDied(f"no answer to {method} within {timeout:.0f} s")
        return answer

    def stop(self) -> None:
        super().stop()
        if self._writer is not None:
            self._writer.shutdown(wait=False, cancel_futures=True)
            self._writer = None


class HttpAnswer:
    """One HTTP exchange: status, the JSON-RPC lines of its body (JSON or SSE), its raw bytes."""

    def __init__(self, status: int, raw: bytes, lines: list[bytes], complete: bool) -> None:
        self.status = status
        self.raw = raw
        self.lines = lines
        self.complete = complete


def sse_data(raw: bytes) -> list[bytes]:
    """The data of each complete SSE event in `raw` (priming events with empty data skipped)."""
    events = []
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n")[:-1]:
        data = [line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
        joined = b"\n".join(data)
        if joined.strip():
            events.append(joined)
    return events


class HttpGateway(GatewayProcess):
    """`mcpward run --config` with the HTTP front on an ephemeral loopback port; one legacy
    session (with its GET stream read in the background) and stateless 2026-07-28 requests."""

    front = "http"

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.url = ""
        self.session_id: str | None = None
        self.http: httpx.Client | None = None
        self.get_stream = bytearray()
        self._get_lock = threading.Lock()

    def _start(self) -> None:
        front = {
            "kind": "http",
            "host": "127.0.0.1",
            "port": 0,
            "tokens": [
                {
                    "client_id": "fuzz",
                    "token_sha256": hash_token(TOKEN),
                    "consent_ceiling": "full",
                    "roles": [],
                }
            ],
            "max_body_bytes": MAX_FRAME_BYTES,
        }
        log = self.directory / "gateway.log"
        offset = log.stat().st_size if log.exists() else 0
        config = write_config(self.directory, front)
        self.proc = self.popen(config, subprocess.DEVNULL)
        deadline = time.monotonic() + START_WAIT_S
        pattern = re.compile(r"HTTP front listening on (\S+)")
        while True:
            text = log.read_text(errors="replace")[offset:] if log.exists() else ""
            found = pattern.search(text)
            if found:
                self.url = found.group(1)
                break
            if not self.alive() or time.monotonic() > deadline:
                raise GatewayDied(f"the HTTP gateway did not start:\n{self.log_tail()}")
            time.sleep(0.05)
        # A connection per exchange: a kept-alive one the server closes while idle (its
        # keep-alive or idle timeout) would fail the next POST for no fault of the gateway.
        self.http = httpx.Client(
            timeout=httpx.Timeout(ANSWER_WAIT_S),
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        self.open_legacy_session()

    def open_legacy_session(self) -> None:
        init = {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": {"sampling": {}},
                "clientInfo": {"name": "mcpward-fuzz", "version": "1"},
            },
        }
        self.session_id = None
        answer = self.post("legacy", json.dumps(init).encode())
        if answer.status != 200 or self.session_id is None:
            raise GatewayDied(
                f"initialize over HTTP failed ({answer.status}): {answer.raw[:300]!r}"
            )
        self.post("legacy", b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        with self._get_lock:
            self.get_stream = bytearray()
        threading.Thread(target=self._read_get_stream, args=(self.session_id,), daemon=True).start()

    def _read_get_stream(self, session_id: str) -> None:
        headers = {**self.headers("legacy"), "Accept": "text/event-stream"}
        headers["Mcp-Session-Id"] = session_id
        with (
            contextlib.suppress(Exception),
            httpx.Client(timeout=None) as client,
            client.stream("GET", self.url, headers=headers) as response,
        ):
            for chunk in response.iter_raw():
                with self._get_lock:
                    self.get_stream.extend(chunk)

    def get_stream_size(self) -> int:
        with self._get_lock:
            return len(self.get_stream)

    def get_stream_since(self, start: int) -> bytes:
        with self._get_lock:
            return bytes(self.get_stream[start:])

    def headers(
        self, era: str, method: str | None = None, name: str | None = None
    ) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "Authorization": f"Bearer {TOKEN}",
        }
        if era == "modern":
            headers["MCP-Protocol-Version"] = MODERN_VERSION
            for header, value in (("Mcp-Method", method), ("Mcp-Name", name)):
                if value and value.isascii() and value.isprintable():
                    headers[header] = value
        elif self.session_id is not None:
            headers["MCP-Protocol-Version"] = LEGACY_VERSION
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def post(
        self, era: str, body: bytes, method: str | None = None, name: str | None = None
    ) -> HttpAnswer:
        """POST one frame; read the whole answer (JSON or SSE) within the hang guard."""
        if self.http is None:
            raise GatewayDied("the HTTP gateway is not running")
        deadline = time.monotonic() + ANSWER_WAIT_S
        raw = bytearray()
        complete = True
        try:
            with self.http.stream(
                "POST", self.url, content=body, headers=self.headers(era, method, name)
            ) as response:
                session = response.headers.get("mcp-session-id")
                if era == "legacy" and session and self.session_id is None:
                    self.session_id = session
                streaming = "text/event-stream" in response.headers.get("content-type", "")
                for chunk in response.iter_raw():
                    raw.extend(chunk)
                    if streaming and time.monotonic() > deadline:
                        complete = False
                        break
                status = response.status_code
        except httpx.TransportError as exc:
            raise GatewayDied(f"HTTP exchange failed: {type(exc).__name__}: {exc}") from None
        data = bytes(raw)
        if streaming:
            lines = sse_data(data)
        else:
            lines = [data] if data.strip() and status != 202 and data.lstrip()[:1] in b"{[" else []
        return HttpAnswer(status, data, lines, complete)

    def stop(self) -> None:
        if self.http is not None:
            self.http.close()
            self.http = None
        super().stop()


@contextlib.contextmanager
def running(gateway: GatewayProcess) -> Iterator[GatewayProcess]:
    gateway.ensure()
    try:
        yield gateway
    finally:
        gateway.stop()
