"""What an upstream sends the client outside a result passes the guards, through the real gateway
with its default guards: credentials planted in an upstream's errors (`message`, `data` of any
shape), `notifications/message`, `notifications/progress` and its own `elicitation/create` never
reach the client; the shapes survive and ordinary text is untouched. On the stdio and HTTP
fronts, in both eras, with one upstream and with two aggregated (namespaced names).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpward.testing.rawpeer import RawPeer
from tests.contracts.matrix_harness import HTTP_HEADERS, LEGACY_VERSION, MODERN_META, MODERN_VERSION
from tests.http.gateway_harness import gateway_front, token_entry
from tests.support.gateway import gateway_argv, write_gateway_config

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "leaky_upstream.py"
TIMEOUT_S = 30.0
TOKEN = "upstream-texts-token-0123456789abcdef"
ERROR_CODE = -32001  # the fixture's
# Built from parts so that no scanner flags this file; both are found by the built-in rules.
SECRETS = {
    "AKIA" + "QW3ERT5YUI7OPA2S": "[REDACTED:aws-access-key-id]",
    "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5": "[REDACTED:github-token]",
}
# Ordinary text (no keyword the generic rule reads as `name = value`) that must pass unchanged.
WORDS = ["the", "report", "failed", "retry", "later", "weather", "café", "naïve", "42", "Zürich"]
# Keys of generated objects; base64 media (`data` beside `mimeType`, `blob`) is not scanned.
KEYS = ["detail", "items", "cause", "trace", "where", "x", "note", "level2", "émoji"]


def expected(value: Any) -> Any:
    """`value` as the client must see it: each planted secret replaced by its marker."""
    if isinstance(value, str):
        for secret, marker in SECRETS.items():
            value = value.replace(secret, marker)
        return value
    if isinstance(value, list):
        return [expected(v) for v in value]
    if isinstance(value, dict):
        return {k: expected(v) for k, v in value.items()}
    return value


def _text(rng: random.Random, secret: bool) -> str:
    words = rng.choices(WORDS, k=rng.randint(1, 5))
    if secret:
        words.insert(rng.randint(0, len(words)), rng.choice(list(SECRETS)))
    return " ".join(words)


def _value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth >= 4 or roll < 0.35:
        return _text(rng, secret=rng.random() < 0.5)
    if roll < 0.45:
        return rng.choice([0, -7, 3.5, True, False, None])
    if roll < 0.7:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = rng.sample(KEYS, rng.randint(0, 4))
    return {k: _value(rng, depth + 1) for k in keys}


def cases() -> list[dict[str, Any]]:
    """The plan: the named shapes, then generated ones (seeded: the same on every run)."""
    akia, ghp = list(SECRETS)
    named = [
        {"text": f"lookup failed with {akia}", "data": f"creds {ghp} rejected"},
        {"text": f"{ghp}", "data": {"cause": {"detail": f"key {akia} expired", "n": 3}}},
        {"text": "ordinary failure, nothing secret", "data": [akia, {"x": [ghp, 1, None]}, True]},
        {"text": f"two: {akia} and {ghp}.", "data": None},
        {"text": "plain", "data": {"items": ["the report", 42, False], "where": "Zürich"}},
    ]
    rng = random.Random(20261127)
    generated = [
        {"text": _text(rng, secret=rng.random() < 0.7), "data": _value(rng, 0)} for _ in range(20)
    ]
    return named + generated


CASES = cases()


def planted(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


# ---- surfaces ------------------------------------------------------------------------------------


SURFACES = [
    ("stdio", 1),
    ("stdio", 2),
    ("http-legacy", 1),
    ("http-legacy", 2),
    ("http-modern", 1),
    ("http-modern", 2),
]


def upstream_specs(directory: Path, count: int) -> list[dict[str, Any]]:
    directory.mkdir(parents=True, exist_ok=True)
    plan = directory / "plan.json"
    plan.write_text(json.dumps(CASES), encoding="utf-8")
    return [
        {
            "id": uid,
            "command": sys.executable,
            "args": [str(FIXTURE), "--plan", str(plan), "--tool", tool],
        }
        for uid, tool in list(UPSTREAMS.items())[:count]
    ]


UPSTREAMS = {"la": "leak", "lb": "spill"}  # id -> its tool (two names: no shadowing)


def tool_for(index: int, count: int) -> str:
    """The aggregated upstreams take turns (namespaced names)."""
    if count == 1:
        return "leak"
    uid, tool = list(UPSTREAMS.items())[index % count]
    return f"{uid}__{tool}"


class Seen:
    """What one call made the client receive: the answer and every message beside it."""

    def __init__(self) -> None:
        self.answer: dict[str, Any] | None = None
        self.others: list[dict[str, Any]] = []
        self.raw = ""

    def by_method(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.others if m.get("method") == method]


class StdioClient:
    def __init__(self, peer: RawPeer) -> None:
        self.peer = peer

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls, directory: Path, count: int, guards: list[dict[str, Any]] | None = None
    ) -> AsyncIterator[StdioClient]:
        config = write_gateway_config(directory, upstream_specs(directory, count), guards=guards)
        peer = await RawPeer.spawn(gateway_argv(config), env=dict(os.environ))
        peer.keep_raw = True
        try:
            result = await asyncio.wait_for(
                peer.initialize(LEGACY_VERSION, {"elicitation": {}}), TIMEOUT_S
            )
            assert "capabilities" in result, result
            yield cls(peer)
        finally:
            await peer.close()
            directory.joinpath("config.path").write_text(str(config), encoding="utf-8")

    async def request(self, method: str, params: dict[str, Any]) -> Seen:
        seen = Seen()
        seen.answer = await asyncio.wait_for(self.peer.request(method, params), TIMEOUT_S)
        seen.raw = "\n".join(line.decode("utf-8", "replace") for line in self.peer.raw_lines)
        return seen

    async def call(self, name: str, case: int, token: str) -> Seen:
        seen = Seen()
        params = {"name": name, "arguments": {"case": case}, "_meta": {"progressToken": token}}
        seen.answer = await asyncio.wait_for(self.peer.request("tools/call", params), TIMEOUT_S)
        # message, progress and elicitation come before the answer on the upstream's pipe; the
        # gateway relays them in order, but wait for all three (a hang guard, not a timing)
        while len(seen.others) < 3:
            message = await asyncio.wait_for(self.peer.unsolicited.get(), TIMEOUT_S)
            seen.others.append(message)
        seen.raw = "\n".join(line.decode("utf-8", "replace") for line in self.peer.raw_lines)
        return seen


def _sse_messages(text: str) -> list[dict[str, Any]]:
    if text.lstrip().startswith("{"):
        return [json.loads(text)]
    return [
        json.loads(line[5:])
        for line in text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


class HttpClient:
    def __init__(self, http: httpx.AsyncClient, url: str, modern: bool) -> None:
        self.http = http
        self.url = url
        self.modern = modern
        self.session_id: str | None = None
        self.ids = 0
        self.standalone: list[dict[str, Any]] = []  # the legacy GET stream
        self.standalone_raw: list[str] = []
        self._taken = 0  # standalone messages already given to a call

    def headers(self) -> dict[str, str]:
        headers = {**HTTP_HEADERS, "Authorization": f"Bearer {TOKEN}"}
        if self.modern:
            headers["MCP-Protocol-Version"] = MODERN_VERSION
        elif self.session_id is not None:
            headers["MCP-Protocol-Version"] = LEGACY_VERSION
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, directory: Path, count: int, modern: bool) -> AsyncIterator[HttpClient]:
        front = {"tokens": [token_entry(TOKEN, "client0")]}
        specs = upstream_specs(directory, count)
        async with (
            gateway_front(specs, directory / "state", front) as (_, url),
            httpx.AsyncClient(timeout=TIMEOUT_S) as http,
        ):
            client = cls(http, url, modern)
            if modern:
                yield client
                return
            body = {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": LEGACY_VERSION,
                    "capabilities": {"elicitation": {}},
                    "clientInfo": {"name": "upstream-texts", "version": "1"},
                },
            }
            response = await http.post(url, headers=client.headers(), json=body)
            assert response.status_code == 200, response.text
            client.session_id = response.headers["mcp-session-id"]
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            response = await http.post(url, headers=client.headers(), json=note)
            assert response.status_code == 202, response.text
            opened = asyncio.Event()
            reader = asyncio.create_task(client._read_standalone(opened))
            await asyncio.wait_for(opened.wait(), TIMEOUT_S)
            try:
                yield client
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader

    async def _read_standalone(self, opened: asyncio.Event) -> None:
        headers = {**self.headers(), "Accept": "text/event-stream"}
        async with self.http.stream("GET", self.url, headers=headers, timeout=None) as response:
            assert response.status_code == 200
            opened.set()
            async for line in response.aiter_lines():
                self.standalone_raw.append(line)
                if line.startswith("data:") and line[5:].strip():
                    self.standalone.append(json.loads(line[5:]))

    async def request(self, method: str, params: dict[str, Any]) -> Seen:
        seen = Seen()
        self.ids += 1
        headers = self.headers()
        if self.modern:
            meta = {**(params.get("_meta") or {}), **MODERN_META}
            params = {**params, "_meta": meta}
            headers["Mcp-Method"] = method
            if isinstance(params.get("name"), str):
                headers["Mcp-Name"] = params["name"]
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        response = await self.http.post(self.url, headers=headers, json=body)
        seen.raw = response.text
        for message in _sse_messages(response.text):
            if message.get("id") == self.ids and "method" not in message:
                seen.answer = message
            else:
                seen.others.append(message)
        return seen

    async def call(self, name: str, case: int, token: str) -> Seen:
        params = {"name": name, "arguments": {"case": case}, "_meta": {"progressToken": token}}
        seen = await self.request("tools/call", params)
        if not self.modern:
            # notifications/message has no request to travel with: the standalone stream
            await self._take_log(seen)
        return seen

    async def _take_log(self, seen: Seen) -> None:
        async def arrived() -> None:
            while not any(
                m.get("method") == "notifications/message" for m in self.standalone[self._taken :]
            ):
                await asyncio.sleep(0.01)

        await asyncio.wait_for(arrived(), TIMEOUT_S)  # a hang guard
        fresh = self.standalone[self._taken :]
        self._taken = len(self.standalone)
        seen.others += fresh
        seen.raw += "\n".join(self.standalone_raw)


@contextlib.asynccontextmanager
async def client_on(surface: str, directory: Path, count: int) -> AsyncIterator[Any]:
    if surface == "stdio":
        async with StdioClient.open(directory, count) as stdio:
            yield stdio
    else:
        async with HttpClient.open(directory, count, surface == "http-modern") as http:
            yield http


# ---- the property --------------------------------------------------------------------------------


def check_case(seen: Seen, index: int, surface: str) -> None:
    case = CASES[index]
    trace = f"case {index} on {surface}: {json.dumps(case)[:300]}"
    leaked = planted(seen.raw)
    where = [line[:200] for line in seen.raw.splitlines() if planted(line)]
    assert not leaked, f"{trace}: the client received planted credential(s) in {where}"
    answer = seen.answer
    assert answer is not None, trace
    error = answer.get("error")
    assert isinstance(error, dict), f"{trace}: {answer}"
    assert error["code"] == ERROR_CODE, f"{trace}: {error}"
    assert error["message"] == expected(case["text"]), trace
    assert error["data"] == expected(case["data"]), trace
    logs = seen.by_method("notifications/message")
    assert len(logs) == 1, f"{trace}: {seen.others}"
    assert logs[0]["params"]["logger"] == expected(case["text"]), trace
    assert logs[0]["params"]["data"] == expected(case["data"]), trace
    assert logs[0]["params"]["level"] == "error", trace
    progress = seen.by_method("notifications/progress")
    assert len(progress) == 1, f"{trace}: {seen.others}"
    assert progress[0]["params"]["message"] == expected(case["text"]), trace
    assert progress[0]["params"]["progress"] == 1, trace
    asks = seen.by_method("elicitation/create")
    if surface == "http-modern":
        assert asks == [], trace  # 2026-07-28 has no server requests
    else:
        assert len(asks) == 1, f"{trace}: {seen.others}"
        assert asks[0]["params"]["message"] == expected(case["text"]), trace
        assert asks[0]["params"]["requestedSchema"]["type"] == "object", trace


@pytest.mark.parametrize(("surface", "count"), SURFACES, ids=[f"{s}-x{n}" for s, n in SURFACES])
async def test_no_planted_credential_reaches_the_client(
    surface: str, count: int, tmp_path: Path
) -> None:
    async with client_on(surface, tmp_path, count) as client:
        for index in range(len(CASES)):
            seen = await client.call(tool_for(index, count), index, f"tok-{index}")
            check_case(seen, index, surface)


@pytest.mark.parametrize(
    ("surface", "count"), [("stdio", 1), ("http-legacy", 2), ("http-modern", 2)]
)
async def test_an_error_answering_a_relayed_request_is_judged(
    surface: str, count: int, tmp_path: Path
) -> None:
    """Not a judged call: a method the gateway passes through (routed by name when aggregated)."""
    case = CASES[0]
    async with client_on(surface, tmp_path, count) as client:
        params = {"name": tool_for(0, count)} if count > 1 else {}
        seen = await client.request("x-leaky/echo", params)
    assert not planted(seen.raw), seen.raw
    assert seen.answer is not None
    error = seen.answer["error"]
    assert error["code"] == -32601, error
    assert error["message"] == f"Method not found: {expected(case['text'])}"
    assert error["data"] == expected(case["data"])


@pytest.mark.parametrize("count", [1, 2])
async def test_the_requests_an_input_required_result_carries_are_judged(
    count: int, tmp_path: Path
) -> None:
    """2026-07-28 has no server requests: an upstream asks for input in a result instead."""
    async with client_on("http-modern", tmp_path, count) as client:
        for index in range(len(CASES)):
            arguments = {"case": index, "ask": True}
            seen = await client.request(
                "tools/call", {"name": tool_for(index, count), "arguments": arguments}
            )
            assert not planted(seen.raw), f"case {index}: {seen.raw[:500]}"
            assert seen.answer is not None
            result = seen.answer["result"]
            assert result["resultType"] == "input_required", result
            ask = result["inputRequests"]["q"]
            assert ask["method"] == "elicitation/create"
            assert ask["params"]["message"] == expected(CASES[index]["text"])
            assert ask["params"]["requestedSchema"]["type"] == "object"


def receipts(config: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "mcpward.cli.main", "ledger", "export", "--config", str(config)],
        capture_output=True,
        text=True,
        check=True,
    )
    return [json.loads(line)["receipt"] for line in done.stdout.splitlines() if line.strip()]


async def test_the_receipt_of_a_call_records_its_error_redacted(tmp_path: Path) -> None:
    async with StdioClient.open(tmp_path, 1) as client:
        seen = await client.call("leak", 3, "tok-receipt")  # both kinds in message
    assert seen.answer is not None and "error" in seen.answer
    config = Path(tmp_path.joinpath("config.path").read_text(encoding="utf-8"))
    calls = [r for r in receipts(config) if r.get("method") == "tools/call"]
    assert len(calls) == 1, calls
    counts = calls[0]["redaction_counts"]
    assert counts == {"aws-access-key-id": 1, "github-token": 1}, calls[0]
    assert "secret" in calls[0]["redactions"]


async def test_what_a_guard_denies_is_dropped_or_refused_never_relayed(tmp_path: Path) -> None:
    """secrets with `egress: deny`: the error becomes the gateway's -32013; the notifications and
    the server's request that carried a credential are dropped; clean ones still pass."""
    phases = ["tool_result", "upstream_error", "upstream_message"]
    guards = [{"kind": "secrets", "runs_on": phases, "config": {"egress": "deny"}}]
    async with StdioClient.open(tmp_path, 1, guards) as client:
        params = {"name": "leak", "arguments": {"case": 0}, "_meta": {"progressToken": "t0"}}
        denied = await asyncio.wait_for(client.peer.request("tools/call", params), TIMEOUT_S)
        clean = await client.call("leak", 4, "t4")  # after case 0's on the same pipe
    assert denied["error"]["code"] == -32013, denied
    assert denied["error"]["data"]["code"] == "secret_detected"
    assert not planted(clean.raw)
    assert [m["method"] for m in clean.others] == [
        "notifications/message",
        "notifications/progress",
        "elicitation/create",
    ]
    assert clean.by_method("notifications/progress")[0]["params"]["progressToken"] == "t4"
    assert clean.answer is not None and clean.answer["error"]["message"] == "plain"
