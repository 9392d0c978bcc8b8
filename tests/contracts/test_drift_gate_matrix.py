"""Issue #11 as a property: no call for a pinned tool, prompt or resource reaches an upstream unless
the contract that upstream connection serves right now was checked against its pin.

Generated message orders (hypothesis) run through the real gateway on every surface: the stdio
front (`mcpward run`; a new connection is a new gateway process over the same state_dir), HTTP
handshake-era sessions, HTTP 2026-07-28 stateless requests (one pooled relay session per client
token, so a new connection is a new token), and two upstreams aggregated. The upstream is
tests/fixtures/drift_server.py: it logs every call it receives with the contract version it
served, so "reached the upstream under a drifted contract" is a line in a file, not an inference.

Invariants after every step (World.check): under guard and strict no log line was served under
a version other than the pinned one (0), and a drifted call is refused only with a HOLD (-32010)
from rug_pull, an unavailable upstream (-32011) or a fail-closed denial (-32013); under monitor
nothing is blocked; while an upstream's contract never changed every call to it succeeds (no
fail-closed on an unchanged contract), except -32011 or contract_unverifiable within
CRASH_WINDOW_S of killing its process (a call racing a crash may find the upstream down or
restarting). A resource may be read before anything was listed, with several upstreams too.

Shrinking is off (slow on a gateway): MCPWARD_DRIFT_SHRINK=1 turns it on, MCPWARD_DRIFT_EXAMPLES=N
generates N programs per posture and annotation instead of 3.
Run: .venv/bin/pytest -q tests/contracts/test_drift_gate_matrix.py
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from mcpward.testing.rawpeer import RawPeer
from tests.http.gateway_harness import gateway_front, token_entry
from tests.support.gateway import gateway_argv, write_gateway_config

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "drift_server.py"
PHASES = [
    "tools_list",
    "prompts_list",
    "resources_list",
    "tool_invoke",
    "prompt_request",
    "resource_request",
]
POSTURES = ("monitor", "guard", "strict")
ANNOTATIONS = ("readonly", "write", "none")
MODES = ("startup", "live")
KINDS = ("tool", "prompt", "resource")
LIST_METHODS = {"tool": "tools/list", "prompt": "prompts/list", "resource": "resources/list"}
CALL_METHODS = {"tool": "tools/call", "prompt": "prompts/get", "resource": "resources/read"}
HOLD, UNAVAILABLE, DENIED = -32010, -32011, -32013
PINNED = 0  # the version every example pins first (its baseline steps run before any drift)
TIMEOUT_S = 30.0
LIVE_SETTLE_S = 0.2  # after a live upstream announced list_changed: time for the gateway's re-read
CRASH_WINDOW_S = 2.0  # after killing an upstream, a call may find it down (-32011)
TOKENS = [f"drift-matrix-token-{i:02d}-0123456789" for i in range(16)]
HTTP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LEGACY_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "drift-matrix", "version": "1"},
}
_examples = itertools.count()


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


def rug_pull(posture: str, **options: Any) -> dict[str, Any]:
    return {
        "kind": "rug_pull",
        "id": "rug_pull",
        "priority": 15,
        "timeout_ms": 8000,
        "runs_on": PHASES,
        "config": {"posture": posture, **options},
    }


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a JSON-lines file (a line still being written is not one)."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line]


@dataclass
class Upstream:
    """One drift_server upstream: its control, call log and process events."""

    id: str
    directory: Path
    annotations: str
    mode: str
    uri: str
    prefixed: bool
    version: int = 0

    @property
    def control(self) -> Path:
        return self.directory / f"{self.id}-control.json"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.id}-calls.jsonl"

    @property
    def events(self) -> Path:
        return self.directory / f"{self.id}-events.jsonl"

    @property
    def drifted(self) -> bool:
        return self.version != PINNED

    def spec(self) -> dict[str, Any]:
        self.write_control()
        args = [str(FIXTURE), "--control", str(self.control), "--log", str(self.log)]
        args += ["--events", str(self.events), "--mode", self.mode, "--uri", self.uri]
        return {
            "id": self.id,
            "command": sys.executable,
            "args": args,
            "restart": {"initial_backoff_s": 0.1},
        }

    def write_control(self) -> None:
        tmp = self.control.with_suffix(".tmp")
        data = {"version": self.version, "annotations": self.annotations}
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(self.control)

    def name(self, kind: str) -> str:
        base = {"tool": "transfer", "prompt": "greet", "resource": self.uri}[kind]
        return f"{self.id}__{base}" if self.prefixed and kind != "resource" else base

    def calls(self) -> list[dict[str, Any]]:
        return _jsonl(self.log)

    def started(self) -> list[int]:
        return [e["pid"] for e in _jsonl(self.events) if e["event"] == "start"]

    def switched(self, version: int) -> set[int]:
        return {
            e["pid"] for e in _jsonl(self.events) if e["event"] == "switch" and e["to"] == version
        }

    def live_pids(self) -> list[int]:
        return [pid for pid in self.started() if _alive(pid)]


# ---- connections -------------------------------------------------------------------------------


class Conn:
    """One client connection to the gateway: a stdio gateway process, an HTTP session, or (for
    2026-07-28) one client token's stream of stateless requests."""

    label = "?"
    listed: set[str]

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    async def close(self) -> None:
        return None

    def drain_list_changed(self) -> int:
        return 0


class StdioConn(Conn):
    def __init__(self, peer: RawPeer, label: str) -> None:
        self.peer = peer
        self.label = label
        self.listed = set()
        self.list_changed = 0

    @classmethod
    async def open(cls, config: Path, label: str, initialized: bool) -> StdioConn:
        peer = await RawPeer.spawn(gateway_argv(config), env=dict(os.environ))
        conn = cls(peer, label)
        params = {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {},
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
    def __init__(self, http: httpx.AsyncClient, url: str, token: str, modern: bool, label: str):
        self.http = http
        self.url = url
        self.token = token
        self.modern = modern
        self.label = label
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
    ) -> HttpConn:
        conn = cls(http, url, token, modern, label)
        if modern:
            return conn  # stateless: the first request opens the pooled relay session
        body = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": {},
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
            params = {**params, "_meta": MODERN_META}
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


# ---- one example -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """One step. `conn` picks an open connection (modulo how many are open; one is opened when
    none is); `upstream` picks an upstream (modulo their number)."""

    name: str
    conn: int = 0
    kind: str = "tool"
    upstream: int = 0
    initialized: bool = True

    def __repr__(self) -> str:
        if self.name == "open":
            return "open" if self.initialized else "open(no initialized)"
        if self.name in ("drift", "restart", "crash"):
            return f"{self.name}(u{self.upstream})"
        if self.name == "close":
            return f"close(#{self.conn})"
        if self.name == "burst":
            return "burst(fresh connection)" if self.initialized else "burst(fresh, no initialized)"
        return f"{self.name}(#{self.conn}, {self.kind}, u{self.upstream})"


@dataclass
class Outcome:
    step: int
    conn: str
    kind: str
    upstream: str
    drifted: bool  # had this upstream's contract changed (in the control file) at the time?
    listed: bool  # had this connection listed this kind before the call?
    after_crash: bool  # sent within CRASH_WINDOW_S of killing this upstream's processes
    served: int | None = None  # the contract version the upstream answered under, on success
    code: int | None = None  # the error code, on failure
    error: dict[str, Any] | None = None


@dataclass
class World:
    surface: Surface
    posture: str
    mode: str
    upstreams: list[Upstream]
    opener: Callable[[str, bool], Awaitable[Conn]]
    conns: list[Conn] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    opened: int = 0
    step: int = 0
    crashed_at: dict[str, float] = field(default_factory=dict)

    # -- connections --------------------------------------------------------------------------

    async def open(self, initialized: bool = True) -> Conn:
        while len(self.conns) >= self.surface.max_open:
            await self.close(self.conns[0])
        label = f"c{self.opened}"
        self.opened += 1
        conn = await self.opener(label, initialized)
        self.conns.append(conn)
        return conn

    async def close(self, conn: Conn) -> None:
        self.conns.remove(conn)
        await conn.close()

    async def pick(self, index: int) -> Conn:
        if not self.conns:
            return await self.open()
        return self.conns[index % len(self.conns)]

    async def close_all(self) -> None:
        conns, self.conns = self.conns, []
        await asyncio.gather(*(conn.close() for conn in conns), return_exceptions=True)

    # -- calls ----------------------------------------------------------------------------------

    async def call(self, conn: Conn, kind: str, up: Upstream) -> Outcome:
        memo = f"s{self.step}-{conn.label}-{kind}-{time.monotonic_ns()}"
        if kind == "tool":
            params: dict[str, Any] = {
                "name": up.name(kind),
                "arguments": {"amount": 5, "memo": memo},
            }
        elif kind == "prompt":
            params = {"name": up.name(kind), "arguments": {"who": memo}}
        else:
            params = {"uri": up.name(kind)}
        crashed = time.monotonic() - self.crashed_at.get(up.id, -1e9) < CRASH_WINDOW_S
        outcome = Outcome(
            step=self.step,
            conn=conn.label,
            kind=kind,
            upstream=up.id,
            drifted=up.drifted,
            listed=kind in conn.listed,
            after_crash=crashed,
        )
        reply = await conn.request(CALL_METHODS[kind], params)
        if "error" in reply:
            outcome.error = reply["error"]
            outcome.code = reply["error"].get("code")
        else:
            result = reply["result"]
            if kind == "tool":
                text = result["content"][0]["text"]
            elif kind == "prompt":
                text = result["messages"][0]["content"]["text"]
            else:
                text = result["contents"][0]["text"]
            outcome.served = json.loads(text)["version_served"]
        self.outcomes.append(outcome)
        shown = outcome.served if outcome.code is None else f"error {outcome.code}"
        self.trace.append(f"    {conn.label} {kind} -> {up.id}: {shown}")
        return outcome

    async def list_items(self, conn: Conn, kind: str) -> None:
        reply = await conn.request(LIST_METHODS[kind], {})
        crashed = any(time.monotonic() - t < CRASH_WINDOW_S for t in self.crashed_at.values())
        if reply.get("error", {}).get("code") == UNAVAILABLE and crashed:
            self.trace.append(f"    {conn.label} {LIST_METHODS[kind]}: upstream down")
            return
        assert "result" in reply, self.explain(f"{LIST_METHODS[kind]} failed: {reply}")
        conn.listed.add(kind)

    # -- the upstream side --------------------------------------------------------------------

    async def drift(self, up: Upstream) -> None:
        seen = {id(c): c.drain_list_changed() for c in self.conns}
        up.version += 1
        up.write_control()
        if self.mode != "live":
            return  # startup mode: only processes started from now on serve the new contract
        pids = up.live_pids()
        await _until(
            lambda: all(p in up.switched(up.version) or not _alive(p) for p in pids),
            f"live upstream {up.id} never switched to v{up.version}",
        )
        if self.surface.front == "stdio":
            try:
                await _until(
                    lambda: all(c.drain_list_changed() > seen[id(c)] for c in self.conns),
                    "list_changed not forwarded",
                    timeout=3.0,
                )
            except AssertionError:
                self.trace.append("    (a client never saw tools/list_changed)")
        await asyncio.sleep(LIVE_SETTLE_S)

    async def restart(self, up: Upstream, wait: bool) -> None:
        """Kill the upstream's live processes; the gateway restarts each one. `wait`: until the
        new processes run (restart); else only until the gateway noticed (crash), so the next
        call waits for, and then races, the restart."""
        before = len(up.started())
        victims = up.live_pids()
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.crashed_at[up.id] = time.monotonic()
        if not wait:
            await asyncio.sleep(0.05)  # < the restart backoff (0.1 s): the upstream is down
            return
        await _until(
            lambda: len(up.started()) >= before + len(victims),
            f"the gateway did not restart upstream {up.id} ({len(victims)} killed)",
        )

    # -- the property -----------------------------------------------------------------------

    def explain(self, problem: str) -> str:
        lines = [
            problem,
            f"surface={self.surface} posture={self.posture} mode={self.mode}",
            "steps:",
            *self.trace,
        ]
        for up in self.upstreams:
            lines.append(f"upstream {up.id} (v{up.version}) received: {up.calls()}")
        return "\n".join(lines)

    def check(self) -> None:
        enforcing = self.posture != "monitor"
        for up in self.upstreams:
            bad = [line for line in up.calls() if line["version_served"] != PINNED]
            if enforcing and bad:
                raise AssertionError(
                    self.explain(f"upstream {up.id} received calls under a drifted contract: {bad}")
                )
        for o in self.outcomes:
            where = f"step {o.step}: {o.kind} on {o.conn} to {o.upstream}"
            if o.code == HOLD:
                assert o.error is not None and o.error.get("data", {}).get("guard") == "rug_pull", (
                    self.explain(f"{where}: a -32010 not from rug_pull: {o.error}")
                )
            if o.code is None:
                if enforcing:
                    assert o.served == PINNED, self.explain(f"{where}: served under v{o.served}")
                continue
            if o.after_crash and (o.code == UNAVAILABLE or self.unverifiable(o)):
                continue  # a call racing a crash may find the upstream down: not a bypass
            if not o.drifted:
                raise AssertionError(
                    self.explain(f"{where}: failed on an unchanged contract: {o.error}")
                )
            if not enforcing:
                raise AssertionError(self.explain(f"{where}: monitor blocked a call: {o.error}"))
            assert o.code in (HOLD, UNAVAILABLE, DENIED), self.explain(
                f"{where}: a drifted call refused with an unexpected error: {o.error}"
            )

    @staticmethod
    def unverifiable(o: Outcome) -> bool:
        data = (o.error or {}).get("data")
        unverifiable = isinstance(data, dict) and data.get("code") == "contract_unverifiable"
        return o.code == DENIED and unverifiable

    # -- running a program ------------------------------------------------------------------

    async def run(self, program: list[Op]) -> None:
        for op in program:
            self.step += 1
            self.trace.append(f"  {self.step}. {op!r}")
            await self.apply(op)
            self.check()

    async def apply(self, op: Op) -> None:
        up = self.upstreams[op.upstream % len(self.upstreams)]
        if op.name == "open":
            await self.open(op.initialized)
        elif op.name == "close":
            if self.conns:
                await self.close(self.conns[op.conn % len(self.conns)])
        elif op.name == "list":
            await self.list_items(await self.pick(op.conn), op.kind)
        elif op.name == "call":
            await self.call(await self.pick(op.conn), op.kind, up)
        elif op.name == "burst":
            conn = await self.open(op.initialized)
            await asyncio.gather(
                *(self.call(conn, kind, u) for u in self.upstreams for kind in KINDS for _ in "xy")
            )
        elif op.name == "drift":
            await self.drift(up)
        elif op.name in ("restart", "crash"):
            await self.restart(up, wait=op.name == "restart")
        else:
            raise AssertionError(f"unknown op {op}")


async def _until(predicate: Callable[[], bool], message: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(message)
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def world(
    directory: Path,
    surface: Surface,
    posture: str,
    annotations: str,
    mode: str,
    **options: Any,
) -> AsyncIterator[World]:
    """A gateway on `surface` in front of fresh drift_server upstreams and a fresh state_dir."""
    directory.mkdir(parents=True)
    prefixed = surface.upstreams > 1
    upstreams = [
        Upstream(
            uid,
            directory,
            annotations,
            mode,
            f"res://{uid}/ledger" if prefixed else "res://ledger",
            prefixed,
        )
        for uid in ("fx", "fy")[: surface.upstreams]
    ]
    specs = [u.spec() for u in upstreams]
    guards = [rug_pull(posture, **options)]
    if surface.front == "stdio":
        config = write_gateway_config(directory, specs, guards=guards)

        async def open_stdio(label: str, initialized: bool) -> Conn:
            return await StdioConn.open(config, label, initialized)

        w = World(surface, posture, mode, upstreams, open_stdio)
        try:
            yield w
        finally:
            await w.close_all()
        return
    front = {"tokens": [token_entry(t, f"client{i}") for i, t in enumerate(TOKENS)]}
    tokens = iter(TOKENS)
    async with (
        gateway_front(specs, directory / "state", front, guards=guards) as (_gateway, url),
        httpx.AsyncClient(timeout=TIMEOUT_S) as http,
    ):
        modern = surface.era == "modern"

        async def open_http(label: str, initialized: bool) -> Conn:
            # legacy: one token, a new Mcp-Session-Id per connection; modern: a new token
            token = next(tokens) if modern else TOKENS[0]
            return await HttpConn.open(http, url, token, modern, label, initialized)

        w = World(surface, posture, mode, upstreams, open_http)
        try:
            yield w
        finally:
            await w.close_all()


# ---- programs ----------------------------------------------------------------------------------

_conn = st.integers(0, 3)
_up = st.integers(0, 1)
_kind = st.sampled_from(KINDS)
OPS = st.one_of(
    st.builds(Op, st.just("open"), initialized=st.booleans()),
    st.builds(Op, st.just("close"), conn=_conn),
    st.builds(Op, st.just("list"), conn=_conn, kind=_kind),
    st.builds(Op, st.just("call"), conn=_conn, kind=_kind, upstream=_up),
    st.builds(Op, st.just("call"), conn=_conn, kind=_kind, upstream=_up),
    st.builds(Op, st.just("drift"), upstream=_up),
    st.builds(Op, st.just("restart"), upstream=_up),
    st.builds(Op, st.just("crash"), upstream=_up),
    st.builds(Op, st.just("burst"), initialized=st.booleans()),
)
# Every kind of every upstream is pinned at version 0 before the generated part can drift it:
# the first connection lists all three kinds (a list pins the kind it shows, for every upstream),
# or calls a tool or prompt of each upstream (the gate pins from a full first read). One list
# alone is not enough: see the scenario "first-list-of-one-kind-then-drift".
BASELINE = st.one_of(
    st.permutations(KINDS).map(lambda kinds: [Op("list", kind=k) for k in kinds]),
    st.tuples(*(st.sampled_from(["tool", "prompt"]) for _ in (0, 1))).map(
        lambda kinds: [Op("call", kind=k, upstream=u) for u, k in enumerate(kinds)]
    ),
)


@st.composite
def programs(draw: st.DrawFn) -> list[Op]:
    """A baseline, then up to 7 generated steps; three programs in four contain a drift."""
    body = draw(st.lists(OPS, min_size=1, max_size=6))
    if draw(st.sampled_from([True, True, True, False])):
        body.insert(draw(st.integers(0, len(body))), Op("drift", upstream=draw(_up)))
    return [Op("open"), *draw(BASELINE), *body]


def _hypothesis_settings(max_examples: int) -> settings:
    phases = [Phase.explicit, Phase.reuse, Phase.generate]
    if os.environ.get("MCPWARD_DRIFT_SHRINK"):
        phases.append(Phase.shrink)
    return settings(
        max_examples=int(os.environ.get("MCPWARD_DRIFT_EXAMPLES", max_examples)),
        deadline=None,
        phases=phases,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
        ],
    )


def _run(
    tmp_path: Path,
    surface: str,
    posture: str,
    annotations: str,
    mode: str,
    ops: list[Op],
    **options: Any,
) -> None:
    directory = tmp_path / f"example-{next(_examples)}"

    async def go() -> None:
        async with world(directory, SURFACES[surface], posture, annotations, mode, **options) as w:
            await w.run(ops)

    asyncio.run(go())


@pytest.mark.parametrize("posture", POSTURES)
@pytest.mark.parametrize("annotations", ANNOTATIONS)
@_hypothesis_settings(max_examples=3)
@given(
    surface=st.sampled_from(list(SURFACES)),
    mode=st.sampled_from(MODES),
    ttl=st.sampled_from([None, 0]),
    program=programs(),
)
def test_generated_message_orders(
    tmp_path: Path,
    annotations: str,
    posture: str,
    surface: str,
    mode: str,
    ttl: int | None,
    program: list[Op],
) -> None:
    """Generated orders of open/close/list/call/burst/drift/restart/crash on a generated surface
    and contract mode, with the default re-validation TTL or revalidate_ttl_s: 0; the invariants
    are checked after every step (World.check)."""
    options = {} if ttl is None else {"revalidate_ttl_s": ttl}
    _run(tmp_path, surface, posture, annotations, mode, program, **options)


# ---- the message orders of issue #11, one by one ------------------------------------------------


def _scenario(name: str, upstreams: int) -> tuple[str, list[Op]]:
    """(contract mode, program) of a named order, for a surface with `upstreams` upstreams.
    Every one but the last drifts every upstream; run under guard with a read-only tool."""
    ups = range(upstreams)

    def calls(conn: int) -> list[Op]:
        return [Op("call", conn=conn, kind=k, upstream=u) for u in ups for k in KINDS]

    pin = [Op("open"), *(Op("call", kind="tool", upstream=u) for u in ups)]
    drift = [Op("drift", upstream=u) for u in ups]
    if name == "new-connection-call-before-list":
        # session 1 pins; the contract drifts; session 2 (a new upstream process) calls first
        return "startup", [*pin, *drift, Op("open"), *calls(1)]
    if name == "new-connection-without-initialized":
        # the same by a client that never sends notifications/initialized
        return "startup", [*pin, *drift, Op("open", initialized=False), *calls(1)]
    if name == "restart-then-call":
        # the upstream process dies and is back, serving the new contract, before the call
        return "startup", [*pin, *drift, *(Op("restart", upstream=u) for u in ups), *calls(0)]
    if name == "crash-then-call":
        # the call arrives while the upstream is down; the restarted process serves it
        return "startup", [*pin, *drift, *(Op("crash", upstream=u) for u in ups), *calls(0)]
    if name == "list-changed-then-call":
        # a live upstream changes and says so (list_changed); the next call must see it
        return "live", [*pin, *drift, *calls(0)]
    if name == "newest-session-closed-then-list-changed":
        # the newest session goes away; the older session's upstream then changes and says so
        newest = [Op("open"), Op("call", conn=1), Op("close", conn=1)]
        return "live", [*pin, *newest, *drift, *calls(0)]
    if name == "first-list-of-one-kind-then-drift":
        # docs/contracts.md: on first sight the gate pins from a full read, so the first list
        # of resources is judged against it; the tool and prompt must be pinned by it too
        first = [Op("open"), Op("list", kind="resource")]
        return "startup", [*first, *drift, Op("open"), *calls(1)]
    if name == "newest-session-closed-unchanged":
        # nothing drifts: an older session's calls must still pass (no fail-closed)
        newest = [Op("open"), Op("call", conn=1), Op("close", conn=1)]
        return "startup", [*pin, *newest, *calls(0)]
    raise AssertionError(name)


SCENARIOS = [
    "new-connection-call-before-list",
    "new-connection-without-initialized",
    "restart-then-call",
    "crash-then-call",
    "list-changed-then-call",
    "newest-session-closed-then-list-changed",
    "newest-session-closed-unchanged",
    "first-list-of-one-kind-then-drift",
]


def _scenario_params() -> list[Any]:
    params = []
    for scenario in SCENARIOS:
        for surface in ("stdio", "http-legacy", "http-modern", "http-legacy-x2"):
            if surface == "stdio" and scenario.startswith("newest-session-closed"):
                continue  # on stdio a connection is a gateway process: nothing is shared
            params.append(pytest.param(scenario, surface, id=f"{scenario}-{surface}"))
    return params


@pytest.mark.parametrize(("scenario", "surface"), _scenario_params())
def test_message_orders_of_issue_11(tmp_path: Path, scenario: str, surface: str) -> None:
    """Each named order once, under guard, with the tool pinned read-only (the tool the gate
    re-validates least before a call); the unchanged order with a tool that may write and
    revalidate_ttl_s: 0 (the gate re-reads before every call to it)."""
    mode, program = _scenario(scenario, SURFACES[surface].upstreams)
    if scenario.endswith("-unchanged"):
        _run(tmp_path, surface, "guard", "write", mode, program, revalidate_ttl_s=0)
    else:
        _run(tmp_path, surface, "guard", "readonly", mode, program)


# ---- several first calls at once on a fresh connection -----------------------------------------


async def _burst_after_pin(w: World, drifted: bool) -> list[Outcome]:
    """Connection 1 pins; maybe every contract drifts; a fresh connection then sends two of each
    call to every upstream at once, before it lists anything."""
    w.trace.append("  1. open; pin with one tool call per upstream")
    first = await w.open()
    for up in w.upstreams:
        await w.call(first, "tool", up)
    if drifted:
        w.trace.append("  2. drift every upstream")
        for up in w.upstreams:
            await w.drift(up)
    w.step = 3
    w.trace.append("  3. open; burst of first calls")
    fresh = await w.open()
    outcomes = await asyncio.gather(
        *(w.call(fresh, kind, up) for up in w.upstreams for kind in KINDS for _ in "xy")
    )
    w.check()
    return list(outcomes)


# stdio (a gateway process per connection, ~1 s each) with absent hints only; the generated
# orders cover stdio with every annotation
BURST_CASES = [
    *(("stdio", "none", d) for d in (False, True)),
    *(
        (s, a, d)
        for s in ("http-legacy", "http-modern", "http-modern-x2")
        for a in ANNOTATIONS
        for d in (False, True)
    ),
]


@pytest.mark.parametrize(
    ("surface", "annotations", "drifted"),
    BURST_CASES,
    ids=[f"{s}-{a}-{'drifted' if d else 'unchanged'}" for s, a, d in BURST_CASES],
)
def test_concurrent_first_calls_on_a_fresh_connection(
    tmp_path: Path, surface: str, annotations: str, drifted: bool
) -> None:
    """Guard. Drifted: none of the burst reaches the upstream, each is held with -32010
    (contract_drift). Unchanged: all succeed."""

    async def go() -> None:
        async with world(tmp_path / "w", SURFACES[surface], "guard", annotations, "startup") as w:
            for o in await _burst_after_pin(w, drifted):
                if drifted:
                    assert o.code == HOLD, w.explain(f"{o.kind} to {o.upstream} not held: {o}")
                    assert o.error is not None and o.error["data"]["code"] == "contract_drift"
                else:
                    assert o.code is None and o.served == PINNED, w.explain(f"failed: {o}")
            for up in w.upstreams:
                received = [c for c in up.calls() if c["version_served"] != PINNED]
                assert not received, w.explain(f"{up.id} received drifted calls: {received}")

    asyncio.run(go())


@pytest.mark.parametrize("surface", ["stdio", "http-legacy", "http-modern-x2"])
def test_monitor_lets_drifted_calls_through(tmp_path: Path, surface: str) -> None:
    """The same burst under monitor: nothing is blocked, and the drifted calls do reach the
    upstream (so the guard-posture assertions above are not vacuous)."""

    async def go() -> None:
        async with world(tmp_path / "w", SURFACES[surface], "monitor", "none", "startup") as w:
            outcomes = await _burst_after_pin(w, drifted=True)
            passed = outcomes
            assert all(o.code is None for o in passed), w.explain("monitor blocked a call")
            assert all(o.served == PINNED + 1 for o in passed), w.explain("not the new contract")
            for up in w.upstreams:
                assert any(c["version_served"] != PINNED for c in up.calls()), w.explain(up.id)

    asyncio.run(go())
