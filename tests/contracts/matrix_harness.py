"""The harness shared by the generated-order property tests (test_drift_gate_matrix.py,
test_hidden_items_matrix.py): the five surfaces, client connections to a real gateway on each,
the drift_server upstream, and hypothesis settings.

A surface is a front, a protocol era and a number of aggregated upstreams. A connection is, on
stdio, a gateway process (`mcpward run`) over one config and state_dir; on HTTP, a handshake-era
session (one token, a new Mcp-Session-Id) or, for 2026-07-28, one client token's stream of
stateless requests (one pooled relay session per token, so a new connection is a new token).
A connection declares client capabilities when it opens (in its `initialize`, or in every
2026-07-28 request's _meta): none, or `roots` (the drift_server then lists one more tool).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx
from hypothesis import HealthCheck, Phase, settings

from mcpward.contracts.store import UpstreamPins
from mcpward.store.pins_sqlite import DB_NAME, SqlitePinStore
from mcpward.testing.rawpeer import RawPeer
from tests.http.gateway_harness import gateway_front, token_entry
from tests.support.gateway import gateway_argv, write_gateway_config

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "drift_server.py"
KINDS = ("tool", "prompt", "resource")
LIST_METHODS = {"tool": "tools/list", "prompt": "prompts/list", "resource": "resources/list"}
LIST_KEYS = {"tool": "tools", "prompt": "prompts", "resource": "resources"}
CALL_METHODS = {"tool": "tools/call", "prompt": "prompts/get", "resource": "resources/read"}
HOLD, UNAVAILABLE, DENIED = -32010, -32011, -32013
TIMEOUT_S = 30.0
TOKENS = [f"drift-matrix-token-{i:02d}-0123456789" for i in range(16)]


def call_params(kind: str, name: str, memo: str) -> dict[str, Any]:
    """The params of a call to item `name` of `kind` on the drift_server fixture."""
    if kind == "tool":
        return {"name": name, "arguments": {"amount": 5, "memo": memo}}
    if kind == "prompt":
        return {"name": name, "arguments": {"who": memo}}
    return {"uri": name}


def served_json(kind: str, result: dict[str, Any]) -> dict[str, Any]:
    """What the drift_server fixture says it served, from the result of a call of `kind`."""
    if kind == "tool":
        text = result["content"][0]["text"]
    elif kind == "prompt":
        text = result["messages"][0]["content"]["text"]
    else:
        text = result["contents"][0]["text"]
    served: dict[str, Any] = json.loads(text)
    return served


HTTP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LEGACY_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
ROOTS_CAPABILITIES = {"roots": {"listChanged": True}}


def client_capabilities(roots: bool) -> dict[str, Any]:
    """What a connection declares: `roots` (the drift_server lists its roots-only tool) or none."""
    return dict(ROOTS_CAPABILITIES) if roots else {}


def modern_meta(capabilities: dict[str, Any]) -> dict[str, Any]:
    """The _meta every 2026-07-28 request of a connection carries."""
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "drift-matrix", "version": "1"},
    }


MODERN_META = modern_meta({})  # a 2026-07-28 client that declares no capabilities


# ---- the surfaces ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Surface:
    front: str  # stdio | http
    era: str  # handshake | modern
    upstreams: int
    max_open: int  # connections open at once (each is a gateway process on stdio)


SURFACES = {
    "stdio": Surface("stdio", "handshake", 1, 2),
    "http-legacy": Surface("http", "handshake", 1, 3),
    "http-modern": Surface("http", "modern", 1, 3),
    "http-legacy-x2": Surface("http", "handshake", 2, 3),
    "http-modern-x2": Surface("http", "modern", 2, 3),
}


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def jsonl(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a JSON-lines file (a line still being written is not one)."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line]


async def until(predicate: Callable[[], bool], message: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(message)
        await asyncio.sleep(0.02)


# ---- the upstream ------------------------------------------------------------------------------


@dataclass
class Upstream:
    """One drift_server upstream: its control, call log and process events. `hidden_items`
    starts it with --hidden-items (items the gateway's guards leave out of its lists)."""

    id: str
    directory: Path
    annotations: str
    mode: str
    uri: str
    prefixed: bool
    version: int = 0
    roots_version: int = 0  # the contract of its roots-only tool (drifts on its own)
    hidden_items: bool = False

    @property
    def drifted(self) -> bool:
        """Has its control moved off version 0 (the one every example starts with)?"""
        return self.version != 0

    @property
    def state_dir(self) -> Path:
        """The state_dir of the gateway in front of it (both fronts put it there)."""
        return self.directory / "state"

    @property
    def control(self) -> Path:
        return self.directory / f"{self.id}-control.json"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.id}-calls.jsonl"

    @property
    def events(self) -> Path:
        return self.directory / f"{self.id}-events.jsonl"

    def spec(self) -> dict[str, Any]:
        self.write_control()
        args = [str(FIXTURE), "--control", str(self.control), "--log", str(self.log)]
        args += ["--events", str(self.events), "--mode", self.mode, "--uri", self.uri]
        if self.hidden_items:
            args.append("--hidden-items")
        return {
            "id": self.id,
            "command": sys.executable,
            "args": args,
            "restart": {"initial_backoff_s": 0.1},
        }

    def write_control(self) -> None:
        tmp = self.control.with_suffix(".tmp")
        data = {
            "version": self.version,
            "annotations": self.annotations,
            "roots_version": self.roots_version,
        }
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(self.control)

    def name(self, kind: str, base: str | None = None) -> str:
        """What a client calls an item of this upstream: `base` (the fixture's name, a resource's
        URI; by default its `transfer`, `greet` or ledger), prefixed when upstreams are
        aggregated (a resource keeps its URI)."""
        if base is None:
            base = {"tool": "transfer", "prompt": "greet", "resource": self.uri}[kind]
        return f"{self.id}__{base}" if self.prefixed and kind != "resource" else base

    def calls(self) -> list[dict[str, Any]]:
        return jsonl(self.log)

    def started(self) -> list[int]:
        return [e["pid"] for e in jsonl(self.events) if e["event"] == "start"]

    def switched(self, version: int, roots_version: int) -> set[int]:
        """The processes that switched live to `version` and `roots_version`."""
        return {
            e["pid"]
            for e in jsonl(self.events)
            if e["event"] == "switch" and (e["to"], e["roots_version"]) == (version, roots_version)
        }

    def pin_store(self) -> UpstreamPins:
        """Its pins and holds as the gateway's pin store records them now (none before the
        gateway made the store)."""
        if not (self.state_dir / DB_NAME).exists():
            return UpstreamPins(self.id)
        store = SqlitePinStore(self.state_dir)
        try:
            return store.load(self.id)
        finally:
            store.close()

    def live_pids(self) -> list[int]:
        return [pid for pid in self.started() if alive(pid)]


def upstreams_for(
    directory: Path, surface: Surface, annotations: str, mode: str, hidden_items: bool = False
) -> list[Upstream]:
    """Fresh drift_server upstreams for `surface` (fx, and fy when two are aggregated)."""
    prefixed = surface.upstreams > 1
    return [
        Upstream(
            uid,
            directory,
            annotations,
            mode,
            f"res://{uid}/ledger" if prefixed else "res://ledger",
            prefixed,
            hidden_items=hidden_items,
        )
        for uid in ("fx", "fy")[: surface.upstreams]
    ]


# ---- connections -------------------------------------------------------------------------------


class Conn:
    """One client connection to the gateway: a stdio gateway process, an HTTP session, or (for
    2026-07-28) one client token's stream of stateless requests. `roots`: it declared the
    `roots` client capability."""

    label = "?"
    listed: set[str]
    roots = False

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    async def close(self) -> None:
        return None

    def drain_list_changed(self) -> int:
        return 0


class StdioConn(Conn):
    def __init__(self, peer: RawPeer, label: str, roots: bool) -> None:
        self.peer = peer
        self.label = label
        self.roots = roots
        self.listed = set()
        self.list_changed = 0

    @classmethod
    async def open(cls, config: Path, label: str, initialized: bool, roots: bool) -> StdioConn:
        peer = await RawPeer.spawn(gateway_argv(config), env=dict(os.environ))
        conn = cls(peer, label, roots)
        params = {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": client_capabilities(roots),
            "clientInfo": {"name": "drift-matrix", "version": "1"},
        }
        reply = await asyncio.wait_for(peer.request("initialize", params), TIMEOUT_S)
        assert "result" in reply, reply
        if initialized:
            await peer.notify("notifications/initialized")
        return conn

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.wait_for(self.peer.request(method, params), TIMEOUT_S)

    def drain_list_changed(self) -> int:
        while not self.peer.unsolicited.empty():
            message = self.peer.unsolicited.get_nowait()
            if message.get("method") == "notifications/tools/list_changed":
                self.list_changed += 1
        return self.list_changed

    async def close(self) -> None:
        await self.peer.close()


def _messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an HTTP answer: one JSON body or an SSE stream."""
    if text.lstrip().startswith("{"):
        return [json.loads(text)]
    return [
        json.loads(line[5:])
        for line in text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


class HttpConn(Conn):
    def __init__(
        self, http: httpx.AsyncClient, url: str, token: str, modern: bool, label: str, roots: bool
    ):
        self.http = http
        self.url = url
        self.token = token
        self.modern = modern
        self.label = label
        self.roots = roots
        self.meta = modern_meta(client_capabilities(roots))
        self.listed = set()
        self.session_id: str | None = None
        self.ids = itertools.count(1)

    def headers(self) -> dict[str, str]:
        headers = {**HTTP_HEADERS, "Authorization": f"Bearer {self.token}"}
        if self.modern:
            headers["MCP-Protocol-Version"] = MODERN_VERSION
        elif self.session_id is not None:
            headers["MCP-Protocol-Version"] = LEGACY_VERSION
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    @classmethod
    async def open(
        cls,
        http: httpx.AsyncClient,
        url: str,
        token: str,
        modern: bool,
        label: str,
        initialized: bool,
        roots: bool,
    ) -> HttpConn:
        conn = cls(http, url, token, modern, label, roots)
        if modern:
            return conn  # stateless: the first request opens the pooled relay session
        body = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": client_capabilities(roots),
                "clientInfo": {"name": "drift-matrix", "version": "1"},
            },
        }
        response = await http.post(url, headers=conn.headers(), json=body)
        assert response.status_code == 200, response.text
        conn.session_id = response.headers["mcp-session-id"]
        if initialized:
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            response = await http.post(url, headers=conn.headers(), json=note)
            assert response.status_code == 202, response.text
        return conn

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self.ids)
        headers = self.headers()
        if self.modern:
            params = {**params, "_meta": self.meta}
            headers["Mcp-Method"] = method
            name = params.get("uri") if method == "resources/read" else params.get("name")
            if isinstance(name, str):
                headers["Mcp-Name"] = name
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        response = await self.http.post(self.url, headers=headers, json=body)
        for message in _messages(response.text):
            if message.get("id") == request_id and "method" not in message:
                return message
        raise AssertionError(f"{method}: no answer (HTTP {response.status_code}) {response.text}")

    async def close(self) -> None:
        if self.session_id is not None:
            response = await self.http.delete(self.url, headers=self.headers())
            assert response.status_code in (200, 404), response.text


Opener = Callable[[str, bool, bool], Awaitable[Conn]]  # (label, initialized, roots)


@dataclass
class Connections:
    """The open client connections of one example, at most `surface.max_open` at once (the
    oldest is closed to make room)."""

    surface: Surface
    opener: Opener
    conns: list[Conn] = field(default_factory=list)
    opened: int = 0

    async def apply(self, op: Any) -> bool:
        """Carry out a step that opens or closes a connection (`op.name` "open" or "close",
        `op.conn` picks one to close modulo how many are open, `op.roots` if the op has it:
        the new connection declares `roots`); False for any other step."""
        if op.name == "open":
            await self.open(op.initialized, getattr(op, "roots", False))
        elif op.name == "close":
            if self.conns:
                await self.close(self.conns[op.conn % len(self.conns)])
        else:
            return False
        return True

    async def open(self, initialized: bool = True, roots: bool = False) -> Conn:
        while len(self.conns) >= self.surface.max_open:
            await self.close(self.conns[0])
        label = f"c{self.opened}{'+roots' if roots else ''}"
        self.opened += 1
        conn = await self.opener(label, initialized, roots)
        self.conns.append(conn)
        return conn

    async def close(self, conn: Conn) -> None:
        self.conns.remove(conn)
        await conn.close()

    async def pick(self, index: int) -> Conn:
        """Open connection number `index` (modulo how many are open; one is opened when none is)."""
        if not self.conns:
            return await self.open()
        return self.conns[index % len(self.conns)]

    async def close_all(self) -> None:
        conns, self.conns = self.conns, []
        await asyncio.gather(*(conn.close() for conn in conns), return_exceptions=True)


@contextlib.asynccontextmanager
async def gateway_connections(
    directory: Path,
    surface: Surface,
    upstreams: Sequence[Upstream],
    guards: Sequence[Mapping[str, Any]],
) -> AsyncIterator[Connections]:
    """A gateway on `surface` in front of `upstreams`, with `guards` and a fresh state_dir in
    `directory`; yields its connections (none open yet), all closed on the way out."""
    specs = [u.spec() for u in upstreams]
    if surface.front == "stdio":
        config = write_gateway_config(directory, specs, guards=guards)

        async def open_stdio(label: str, initialized: bool, roots: bool) -> Conn:
            return await StdioConn.open(config, label, initialized, roots)

        pool = Connections(surface, open_stdio)
        try:
            yield pool
        finally:
            await pool.close_all()
        return
    front = {"tokens": [token_entry(t, f"client{i}") for i, t in enumerate(TOKENS)]}
    tokens = iter(TOKENS)
    async with (
        gateway_front(specs, directory / "state", front, [dict(g) for g in guards]) as (_, url),
        httpx.AsyncClient(timeout=TIMEOUT_S) as http,
    ):
        modern = surface.era == "modern"

        async def open_http(label: str, initialized: bool, roots: bool) -> Conn:
            # legacy: one token, a new Mcp-Session-Id per connection; modern: a new token
            token = next(tokens) if modern else TOKENS[0]
            return await HttpConn.open(http, url, token, modern, label, initialized, roots)

        pool = Connections(surface, open_http)
        try:
            yield pool
        finally:
            await pool.close_all()


# ---- hypothesis ----------------------------------------------------------------------------------


class World(Protocol):
    """An example's state, as `run_program` drives it."""

    step: int
    trace: list[str]

    async def apply(self, op: Any) -> None: ...

    def check(self) -> None: ...


async def run_program(world: World, program: Sequence[Any]) -> None:
    """Each step in turn, traced, with the world's invariants checked after every one."""
    for op in program:
        world.step += 1
        world.trace.append(f"  {world.step}. {op!r}")
        await world.apply(op)
        world.check()


def hypothesis_settings(max_examples: int, env_prefix: str) -> settings:
    """No shrinking (slow on a gateway) unless `<env_prefix>_SHRINK` is set;
    `<env_prefix>_EXAMPLES=N` generates N examples instead of `max_examples`."""
    phases = [Phase.explicit, Phase.reuse, Phase.generate]
    if os.environ.get(f"{env_prefix}_SHRINK"):
        phases.append(Phase.shrink)
    return settings(
        max_examples=int(os.environ.get(f"{env_prefix}_EXAMPLES", max_examples)),
        deadline=None,
        phases=phases,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
        ],
    )
