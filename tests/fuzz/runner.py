"""One fuzz step and the checks after it, on each front: a client frame, or an upstream script
played for one call. A broken promise raises FuzzFailure naming the frame.

After every step: the process lives and answers `ping`; each request got exactly one answer (by
id; an unreadable frame's answer has id null); everything the gateway sent is valid JSON-RPC;
no planted credential reached the client; a refused call never reached the upstream; memory
stayed bounded; and, after an upstream step, the upstream still serves a plain call.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz import oracle
from tests.fuzz.gateways import (
    ANSWER_WAIT_S,
    MAX_FRAME_BYTES,
    MODERN_META,
    PLAIN_SCRIPT,
    PLAIN_TEXT,
    GatewayDied,
    GatewayProcess,
    HttpGateway,
    StdioGateway,
    upstream_calls,
    write_script,
)

RSS_BOUND_KIB = 150 * 1024
REFUSED = (-32013, -32010)
HEALTH_WAIT_S = 45.0
# How a front is named in counts and reports: stdio, http-legacy, http-modern.
FRONTS = ("stdio", "http-legacy", "http-modern")
COUNTS: Counter[tuple[str, str]] = Counter()


class KnownFailure(Exception):
    """A failure the run was told to ignore: the step ends quietly (and counts it)."""


class FuzzFailure(AssertionError):
    """A promise the gateway broke; `frame` is what was sent (or the upstream's script)."""

    def __init__(self, front: str, direction: str, what: str, frame: bytes | list[bytes]) -> None:
        self.front = front
        self.direction = direction
        self.what = what
        self.frame = frame
        super().__init__(f"[{front}, {direction}] {what}\n  frame: {show(frame)}")


def save_frame(directory: Path, frame: bytes | list[bytes]) -> Path:
    """Write a failing frame (a script: one line each) where a human can replay it."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [frame] if isinstance(frame, bytes) else list(frame)
    data = b"\n".join(lines) + b"\n"
    path = directory / f"{hashlib.sha256(data).hexdigest()[:16]}.jsonl"
    path.write_bytes(data)
    return path


def show(frame: bytes | list[bytes], limit: int = 1500) -> str:
    text = repr(frame) if isinstance(frame, bytes) else repr([bytes(line) for line in frame])
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


@dataclass
class Received:
    """What one step brought back, parsed."""

    values: list[Any] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    leaked: list[str] = field(default_factory=list)

    def add(self, line: bytes) -> None:
        value, problems = oracle.read_sent(line)
        self.values.append(value)
        self.problems.extend(f"{p}: {show(line, 300)}" for p in problems)
        self.leaked.extend(oracle.leaked_credentials(line, value))

    def answers(self) -> list[dict[str, Any]]:
        return [v for v in self.values if oracle.is_answer(v)]


def match_slot(slot: oracle.Slot | None, answers: list[dict[str, Any]]) -> str | None:
    """What is wrong with `answers` as the answers to one frame owed `slot` (None: fine)."""
    keys = [oracle.id_key(a.get("id")) for a in answers]
    if slot is None:
        return f"answered a frame that must not be answered: ids {keys}" if keys else None
    if len(keys) > 1:
        return f"{len(keys)} answers {keys}; expected {slot.describe()}"
    if not keys:
        return f"no answer; expected {slot.describe()}" if slot.required else None
    if keys[0] not in slot.accept:
        return f"answered with id {keys[0][1]!r}; expected {slot.describe()}"
    return None


class Fuzzer:
    """Runs steps on the gateways it is given (one per front kind) and counts them."""

    def __init__(
        self,
        stdio: StdioGateway | None = None,
        http: HttpGateway | None = None,
        ignore: Sequence[re.Pattern[str]] = (),
    ) -> None:
        self.stdio = stdio
        self.http = http
        # Known failures (scripts/fuzz.py --ignore) are counted, not raised, so a long run
        # explores past them.
        self.ignore = list(ignore)
        self.known: Counter[str] = Counter()

    # ---- shared checks ------------------------------------------------------------------------

    def _gateway(self, front: str) -> GatewayProcess:
        gateway = self.stdio if front == "stdio" else self.http
        assert gateway is not None, f"no gateway for {front}"
        return gateway

    def prepare(self, front: str) -> None:
        """Before a step: a process that died in an earlier example is started again (that
        example already failed with the frame that killed it)."""
        self._gateway(front).ensure()

    def _fail(self, front: str, direction: str, what: str, frame: bytes | list[bytes]) -> None:
        gateway = self._gateway(front)
        if any(pattern.search(what) for pattern in self.ignore):
            self.known[f"[{front}, {direction}] {what.splitlines()[0][:120]}"] += 1
            gateway.stop()
            raise KnownFailure(what)
        saved = save_frame(gateway.directory / "failures", frame)
        what += f"\n  the whole frame is in {saved}"
        if not gateway.alive():
            what += f"\n  the gateway exited with status {gateway.exit_status()}; its log ends:\n"
            what += gateway.log_tail()
        # The next step starts from a fresh process: a broken link or session must not make
        # every later example fail for the same reason.
        gateway.stop()
        raise FuzzFailure(front, direction, what, frame)

    def _after(
        self,
        front: str,
        direction: str,
        frame: bytes | list[bytes],
        got: Received,
        calls_before: int = 0,
    ) -> None:
        gateway = self._gateway(front)
        broken = []
        if got.leaked:
            broken.append(f"a planted credential reached the client: {sorted(set(got.leaked))}")
        if got.problems:
            broken.append("sent invalid JSON-RPC: " + "; ".join(got.problems[:3]))
        if broken:
            self._fail(front, direction, "\n  ".join(broken), frame)
        if not gateway.alive():
            self._fail(front, direction, "the gateway process exited", frame)
        growth = gateway.rss_growth_kib()
        if growth > RSS_BOUND_KIB:
            self._fail(front, direction, f"memory grew by {growth // 1024} MiB", frame)
        refused_upstream = [
            c
            for c in upstream_calls(gateway.directory)[calls_before:]
            if c.get("name") == "delete_things"
        ]
        if refused_upstream:
            self._fail(
                front, direction, "a refused tool (delete_things) reached the upstream", frame
            )

    def _check_refusal(
        self,
        front: str,
        direction: str,
        frame: bytes,
        answers: list[dict[str, Any]],
        calls_before: int,
    ) -> None:
        if any(oracle.error_code(a) in REFUSED for a in answers):
            calls = upstream_calls(self._gateway(front).directory)[calls_before:]
            forwarded = [c for c in calls if c.get("method") == "tools/call"]
            if forwarded:
                self._fail(
                    front, direction, f"a refused call reached the upstream: {forwarded}", frame
                )

    # ---- client direction ---------------------------------------------------------------------

    def client_frame(self, front: str, frame: bytes) -> None:
        """Send one client frame on `front` and check every promise."""
        self.prepare(front)
        COUNTS[(front, "client")] += 1
        try:
            try:
                if front == "stdio":
                    self._client_stdio(frame)
                else:
                    self._client_http(front.removeprefix("http-"), frame)
            except GatewayDied as exc:
                self._fail(front, "client", str(exc), frame)
        except KnownFailure:
            return

    def _client_stdio(self, frame: bytes) -> None:
        gateway = self.stdio
        assert gateway is not None
        slot = oracle.client_slot(frame, MAX_FRAME_BYTES)
        calls_before = len(upstream_calls(gateway.directory))
        start = gateway.inbox.count()
        gateway.send(frame)
        ping = gateway.next_id("ping")
        gateway.send(json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}).encode())

        def settled() -> bool:
            got = self._parse(gateway.inbox.since(start))
            others = [a for a in got.answers() if a.get("id") != ping]
            pinged = len(got.answers()) > len(others)
            return pinged and (slot is None or not slot.required or bool(others))

        if not gateway.inbox.wait(settled, ANSWER_WAIT_S):
            got = self._parse(gateway.inbox.since(start))
            if not any(a.get("id") == ping for a in got.answers()):
                self._fail(
                    "stdio", "client", f"ping was not answered within {ANSWER_WAIT_S:.0f} s", frame
                )
        got = self._parse(gateway.inbox.since(start))
        pings = [a for a in got.answers() if a.get("id") == ping]
        others = [a for a in got.answers() if a.get("id") != ping]
        if len(pings) != 1:
            self._fail("stdio", "client", f"ping answered {len(pings)} times", frame)
        wrong = match_slot(slot, others)
        if wrong:
            self._fail("stdio", "client", wrong, frame)
        self._check_refusal("stdio", "client", frame, others, calls_before)
        self._after("stdio", "client", frame, got, calls_before)

    @staticmethod
    def _parse(lines: list[bytes]) -> Received:
        got = Received()
        for line in lines:
            got.add(line)
        return got

    def _client_http(self, era: str, frame: bytes) -> None:
        gateway = self.http
        assert gateway is not None
        front = f"http-{era}"
        body, method, name = with_modern_meta(frame) if era == "modern" else (frame, None, None)
        slot = oracle.client_slot(body, MAX_FRAME_BYTES, http=True)
        calls_before = len(upstream_calls(gateway.directory))
        get_start = gateway.get_stream_size()
        answer = gateway.post(era, body, method, name)
        got = self._parse(answer.lines)
        if not answer.complete:
            self._fail(front, "client", f"HTTP {answer.status}: the answer never ended", frame)
        if answer.status >= 500:
            self._fail(front, "client", f"HTTP {answer.status}: {answer.raw[:200]!r}", frame)
        answers = got.answers()
        refused_by_http = 400 <= answer.status < 500 and not answers
        if not (refused_by_http and slot is not None):
            if slot is not None and slot.required and not answers and answer.status == 202:
                self._fail(
                    front,
                    "client",
                    f"HTTP 202 without an answer; expected {slot.describe()}",
                    frame,
                )
            wrong = match_slot(slot, answers)
            if wrong:
                self._fail(front, "client", f"HTTP {answer.status}: {wrong}", frame)
        self._http_ping(era, front, "client", frame)
        for line in _get_stream_lines(gateway, get_start):
            got.add(line)
        self._check_refusal(front, "client", frame, answers, calls_before)
        self._after(front, "client", frame, got, calls_before)

    def _http_ping(self, era: str, front: str, direction: str, frame: bytes | list[bytes]) -> None:
        gateway = self.http
        assert gateway is not None
        ping = gateway.next_id("ping")
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ping, "method": "ping"}
        if era == "modern":
            message["params"] = {"_meta": MODERN_META}
        answer = gateway.post(era, json.dumps(message).encode(), "ping")
        got = self._parse(answer.lines)
        if [a.get("id") for a in got.answers()] != [ping]:
            self._fail(front, direction, f"ping: HTTP {answer.status} {answer.raw[:300]!r}", frame)

    # ---- upstream direction -------------------------------------------------------------------

    def upstream_script(self, front: str, lines: list[bytes]) -> None:
        """Have the upstream play `lines` for one call on `front` and check every promise."""
        self.prepare(front)
        COUNTS[(front, "upstream")] += 1
        gateway = self._gateway(front)
        name = gateway.next_id("s").replace("-", "_")
        write_script(gateway.directory, name, lines)
        try:
            try:
                if front == "stdio":
                    self._upstream_stdio(name, lines)
                else:
                    self._upstream_http(front.removeprefix("http-"), name, lines)
            except GatewayDied as exc:
                self._fail(front, "upstream", str(exc), lines)
        except KnownFailure:
            return

    def _upstream_stdio(self, script: str, lines: list[bytes]) -> None:
        gateway = self.stdio
        assert gateway is not None
        calls_before = len(upstream_calls(gateway.directory))
        start = gateway.inbox.count()
        call = gateway.next_id("call")
        params = {
            "name": "reply",
            "arguments": {"script": script},
            "_meta": {"progressToken": f"t-{call}"},
        }
        gateway.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": call, "method": "tools/call", "params": params}
            ).encode()
        )
        if gateway.wait_answer(call, ANSWER_WAIT_S, start) is None:
            self._fail(
                "stdio",
                "upstream",
                f"the call was not answered within {ANSWER_WAIT_S:.0f} s",
                lines,
            )
        ping = gateway.next_id("ping")
        gateway.send(json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}).encode())
        if gateway.wait_answer(ping, ANSWER_WAIT_S, start) is None:
            self._fail("stdio", "upstream", "ping was not answered", lines)
        health_ids = self._stdio_health(lines)
        got = self._parse(gateway.inbox.since(start))
        counts = Counter(oracle.id_key(a.get("id")) for a in got.answers())
        expected = Counter(
            [oracle.id_key(call), oracle.id_key(ping), *map(oracle.id_key, health_ids)]
        )
        if counts != expected:
            extra = counts - expected
            self._fail(
                "stdio",
                "upstream",
                f"answers by id {dict(counts)}; unexpected {dict(extra)}",
                lines,
            )
        self._after("stdio", "upstream", lines, got, calls_before)

    def _stdio_health(self, lines: list[bytes]) -> list[str]:
        """The upstream still serves a plain call (a restart in between may take a while)."""
        gateway = self.stdio
        assert gateway is not None
        sent: list[str] = []
        deadline = time.monotonic() + HEALTH_WAIT_S
        last: Any = None
        while time.monotonic() < deadline:
            call = gateway.next_id("health")
            sent.append(call)
            params = {"name": "reply", "arguments": {"script": PLAIN_SCRIPT}}
            start = gateway.inbox.count()
            gateway.send(
                json.dumps(
                    {"jsonrpc": "2.0", "id": call, "method": "tools/call", "params": params}
                ).encode()
            )
            last = gateway.wait_answer(call, max(1.0, deadline - time.monotonic()), start)
            if last is not None and PLAIN_TEXT in json.dumps(last.get("result")):
                return sent
            time.sleep(0.3)
        self._fail(
            "stdio",
            "upstream",
            f"the upstream no longer serves a plain call; last answer {last!r:.300}",
            lines,
        )
        return sent

    def _upstream_http(self, era: str, script: str, lines: list[bytes]) -> None:
        gateway = self.http
        assert gateway is not None
        front = f"http-{era}"
        calls_before = len(upstream_calls(gateway.directory))
        get_start = gateway.get_stream_size()
        call = gateway.next_id("call")
        answer = gateway.post(era, _call_body(era, call, script), "tools/call", "reply")
        got = self._parse(answer.lines)
        if not answer.complete:
            self._fail(front, "upstream", f"HTTP {answer.status}: the answer never ended", lines)
        if answer.status >= 500:
            self._fail(front, "upstream", f"HTTP {answer.status}: {answer.raw[:200]!r}", lines)
        ids = [oracle.id_key(a.get("id")) for a in got.answers()]
        if ids != [oracle.id_key(call)]:
            self._fail(
                front,
                "upstream",
                f"HTTP {answer.status}: answers with ids {ids} to call {call!r}",
                lines,
            )
        self._http_ping(era, front, "upstream", lines)
        deadline = time.monotonic() + HEALTH_WAIT_S
        last: Any = None
        while True:
            health = gateway.next_id("health")
            reply = gateway.post(era, _call_body(era, health, PLAIN_SCRIPT), "tools/call", "reply")
            last = reply.raw[:300]
            if reply.status == 200 and PLAIN_TEXT.encode() in reply.raw:
                break
            if time.monotonic() > deadline:
                self._fail(
                    front,
                    "upstream",
                    f"the upstream no longer serves a plain call: {last!r}",
                    lines,
                )
            time.sleep(0.3)
        for line in _get_stream_lines(gateway, get_start):
            got.add(line)
        self._after(front, "upstream", lines, got, calls_before)


def _call_body(era: str, call: str, script: str) -> bytes:
    meta: dict[str, Any] = {"progressToken": f"t-{call}"}
    if era == "modern":
        meta.update(MODERN_META)
    params = {"name": "reply", "arguments": {"script": script}, "_meta": meta}
    return json.dumps(
        {"jsonrpc": "2.0", "id": call, "method": "tools/call", "params": params}
    ).encode()


def _get_stream_lines(gateway: HttpGateway, start: int) -> list[bytes]:
    """What the legacy session's GET stream carried since `start` (complete events)."""
    from tests.fuzz.gateways import sse_data

    return sse_data(gateway.get_stream_since(start))


def with_modern_meta(frame: bytes) -> tuple[bytes, str | None, str | None]:
    """A 2026-07-28 request carries its version in params._meta and its method in headers: add
    both where the frame has an object `params` (textually, so the rest stays as generated)."""
    readable, value = oracle.lenient_parse(frame)
    method = name = None
    if readable and isinstance(value, dict):
        method = value.get("method") if isinstance(value.get("method"), str) else None
        params = value.get("params")
        if isinstance(params, dict):
            raw_name = params.get("uri") if method == "resources/read" else params.get("name")
            name = raw_name if isinstance(raw_name, str) else None
    marker = b'"params":{'
    at = frame.find(marker)
    if at < 0 or not frame.lstrip().startswith(b"{"):
        return frame, method, name
    cut = at + len(marker)
    meta = b'"_meta":' + json.dumps(MODERN_META).encode()
    joiner = b"" if frame[cut : cut + 1] == b"}" else b","
    return frame[:cut] + meta + joiner + frame[cut:], method, name
