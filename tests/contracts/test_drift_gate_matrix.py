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

Lists that depend on the client (issue #26 item 6): a connection opens declaring the `roots`
client capability or not, and the fixture lists its tool `workspace_roots` only to the former.
After every step the pin store holds no `*-removed` hold and no hold of an item whose contract
never changed (strict alone may hold the roots-only tool for review when it is first seen after
the tools were pinned: a new item); the roots-only tool reaches the upstream only under the
contract pinned for it; a connection without `roots` calling it is answered -32602 (never a
HOLD); a connection with `roots` calling it while it is unchanged succeeds.

Shrinking is off (slow on a gateway): MCPWARD_DRIFT_SHRINK=1 turns it on, MCPWARD_DRIFT_EXAMPLES=N
generates N programs per posture and annotation instead of 3.
Run: .venv/bin/pytest -q tests/contracts/test_drift_gate_matrix.py
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpward.contracts.model import HoldRecord, ItemKind
from tests.contracts.matrix_harness import (
    CALL_METHODS,
    DENIED,
    HOLD,
    KINDS,
    LIST_METHODS,
    SURFACES,
    UNAVAILABLE,
    Conn,
    Connections,
    Surface,
    Upstream,
    alive,
    call_params,
    gateway_connections,
    hypothesis_settings,
    run_program,
    served_json,
    until,
    upstreams_for,
)
from tests.fixtures.drift_server import ROOTS_TOOL, roots_version_of

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
PINNED = 0  # the version every example pins first (its baseline steps run before any drift)
LIVE_SETTLE_S = 0.2  # after a live upstream announced list_changed: time for the gateway's re-read
CRASH_WINDOW_S = 2.0  # after killing an upstream, a call may find it down (-32011)
ROOTS = "roots"  # the kind of a step calling the roots-only tool (a tools/call)
INVALID_PARAMS = -32602  # how MCP answers a call to a tool the connection is not served
_examples = itertools.count()


# ---- the guard ----------------------------------------------------------------------------------


def rug_pull(posture: str, **options: Any) -> dict[str, Any]:
    return {
        "kind": "rug_pull",
        "id": "rug_pull",
        "priority": 15,
        "timeout_ms": 8000,
        "runs_on": PHASES,
        "config": {"posture": posture, **options},
    }


# ---- one example -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """One step. `conn` picks an open connection (modulo how many are open, so -1 is the newest;
    one is opened when none is); `upstream` picks an upstream (modulo their number); `roots`: an
    opened connection declares the `roots` client capability."""

    name: str
    conn: int = 0
    kind: str = "tool"
    upstream: int = 0
    initialized: bool = True
    roots: bool = False

    def __repr__(self) -> str:
        if self.name == "open":
            flags = [*(["roots"] if self.roots else []), *([] if self.initialized else ["no init"])]
            return f"open({', '.join(flags)})" if flags else "open"
        if self.name in ("drift", "drift_roots", "restart", "crash"):
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
    drifted: bool  # had this item's contract changed (in the control file) at the time?
    listed: bool  # had this connection listed this kind before the call?
    after_crash: bool  # sent within CRASH_WINDOW_S of killing this upstream's processes
    offered: bool  # is the item served to this connection (the roots-only tool: with `roots`)?
    served: int | None = None  # the contract version the upstream answered under, on success
    code: int | None = None  # the error code, on failure
    error: dict[str, Any] | None = None


@dataclass
class World:
    surface: Surface
    posture: str
    mode: str
    upstreams: list[Upstream]
    pool: Connections
    outcomes: list[Outcome] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    step: int = 0
    crashed_at: dict[str, float] = field(default_factory=dict)

    # -- calls ----------------------------------------------------------------------------------

    async def call(self, conn: Conn, kind: str, up: Upstream) -> Outcome:
        memo = f"s{self.step}-{conn.label}-{kind}-{time.monotonic_ns()}"
        roots_tool = kind == ROOTS
        item_kind = "tool" if roots_tool else kind
        params = call_params(
            item_kind, up.name(item_kind, ROOTS_TOOL if roots_tool else None), memo
        )
        crashed = time.monotonic() - self.crashed_at.get(up.id, -1e9) < CRASH_WINDOW_S
        outcome = Outcome(
            step=self.step,
            conn=conn.label,
            kind=kind,
            upstream=up.id,
            drifted=up.roots_version != PINNED if roots_tool else up.drifted,
            listed=item_kind in conn.listed,
            after_crash=crashed,
            offered=conn.roots or not roots_tool,
        )
        reply = await conn.request(CALL_METHODS[item_kind], params)
        if "error" in reply:
            outcome.error = reply["error"]
            outcome.code = reply["error"].get("code")
        else:
            outcome.served = served_json(item_kind, reply["result"])["version_served"]
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

    async def drift(self, up: Upstream, roots_only: bool = False) -> None:
        """The upstream's contract changes: its three items, or (`roots_only`) its roots tool."""
        seen = {id(c): c.drain_list_changed() for c in self.pool.conns}
        if roots_only:
            up.roots_version += 1
        else:
            up.version += 1
        up.write_control()
        if self.mode != "live":
            return  # startup mode: only processes started from now on serve the new contract
        pids = up.live_pids()
        await until(
            lambda: all(
                p in up.switched(up.version, up.roots_version) or not alive(p) for p in pids
            ),
            f"live upstream {up.id} never switched to v{up.version}/r{up.roots_version}",
        )
        if self.surface.front == "stdio":
            try:
                await until(
                    lambda: all(c.drain_list_changed() > seen[id(c)] for c in self.pool.conns),
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
        await until(
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
            lines.append(f"upstream {up.id} (v{up.version} r{up.roots_version}) received:")
            lines.append(f"  {up.calls()}")
        return "\n".join(lines)

    def check(self) -> None:
        enforcing = self.posture != "monitor"
        roots_pins: dict[str, int | None] = {}
        for up in self.upstreams:
            stored = up.pin_store()
            self.check_holds(up, list(stored.holds.values()))
            pin = stored.pins.get((ItemKind.TOOL, ROOTS_TOOL))
            roots_pins[up.id] = None if pin is None else roots_version_of(pin.contract)
            expected = {ROOTS_TOOL: roots_pins[up.id]}
            bad = [c for c in up.calls() if c["version_served"] != expected.get(c["name"], PINNED)]
            if enforcing and bad:
                raise AssertionError(
                    self.explain(
                        f"upstream {up.id} received calls under a contract other than the pinned "
                        f"one (roots-only tool pinned at {roots_pins[up.id]}): {bad}"
                    )
                )
        for o in self.outcomes:
            where = f"step {o.step}: {o.kind} on {o.conn} to {o.upstream}"
            data = (o.error or {}).get("data")
            data = data if isinstance(data, dict) else {}
            if o.code == HOLD:
                assert data.get("guard") == "rug_pull", self.explain(
                    f"{where}: a -32010 not from rug_pull: {o.error}"
                )
            if not o.offered:
                # the roots-only tool on a connection that did not declare `roots`: unknown there
                if o.after_crash and (o.code == UNAVAILABLE or self.unverifiable(o)):
                    continue
                assert o.code == INVALID_PARAMS, self.explain(
                    f"{where}: a tool the connection is not served answered {o.error or o.served}"
                )
                continue
            if o.code is None:
                pinned = roots_pins[o.upstream] if o.kind == ROOTS else PINNED
                if enforcing:
                    assert o.served == pinned, self.explain(f"{where}: served under v{o.served}")
                continue
            if o.after_crash and (o.code == UNAVAILABLE or self.unverifiable(o)):
                continue  # a call racing a crash may find the upstream down: not a bypass
            if self.reviewed_as_new(o.kind == ROOTS, data.get("code") == "new_item_review"):
                continue
            if not o.drifted:
                raise AssertionError(
                    self.explain(f"{where}: failed on an unchanged contract: {o.error}")
                )
            if not enforcing:
                raise AssertionError(self.explain(f"{where}: monitor blocked a call: {o.error}"))
            assert o.code in (HOLD, UNAVAILABLE, DENIED), self.explain(
                f"{where}: a drifted call refused with an unexpected error: {o.error}"
            )

    def reviewed_as_new(self, roots_tool: bool, new: bool) -> bool:
        """Is this a hold of the roots-only tool as a new item? Strict reviews an item first seen
        after its kind was pinned (new_items: review), and the roots-only tool is one when no
        connection with `roots` showed it before the tools were pinned."""
        return roots_tool and new and self.posture == "strict"

    def check_holds(self, up: Upstream, holds: list[HoldRecord]) -> None:
        """No item is held for being absent from a list (a list may vary with the client), and
        none whose contract never changed."""
        for hold in holds:
            where = f"upstream {up.id}: a '{hold.reason}' hold of {hold.kind.value} {hold.name}"
            assert hold.reason != "removed", self.explain(f"{where} {hold.change_kinds}")
            roots_tool = hold.name == ROOTS_TOOL
            if (up.roots_version if roots_tool else up.version) != PINNED:
                continue
            if self.reviewed_as_new(roots_tool, hold.reason == "new"):
                continue
            raise AssertionError(self.explain(f"{where}, whose contract never changed"))

    @staticmethod
    def unverifiable(o: Outcome) -> bool:
        data = (o.error or {}).get("data")
        unverifiable = isinstance(data, dict) and data.get("code") == "contract_unverifiable"
        return o.code == DENIED and unverifiable

    # -- running a program ------------------------------------------------------------------

    async def run(self, program: list[Op]) -> None:
        await run_program(self, program)

    async def apply(self, op: Op) -> None:
        up = self.upstreams[op.upstream % len(self.upstreams)]
        if await self.pool.apply(op):
            return
        if op.name == "list":
            await self.list_items(await self.pool.pick(op.conn), op.kind)
        elif op.name == "call":
            await self.call(await self.pool.pick(op.conn), op.kind, up)
        elif op.name == "burst":
            conn = await self.pool.open(op.initialized)
            await asyncio.gather(
                *(self.call(conn, kind, u) for u in self.upstreams for kind in KINDS for _ in "xy")
            )
        elif op.name in ("drift", "drift_roots"):
            await self.drift(up, roots_only=op.name == "drift_roots")
        elif op.name in ("restart", "crash"):
            await self.restart(up, wait=op.name == "restart")
        else:
            raise AssertionError(f"unknown op {op}")


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
    upstreams = upstreams_for(directory, surface, annotations, mode)
    guards = [rug_pull(posture, **options)]
    async with gateway_connections(directory, surface, upstreams, guards) as pool:
        yield World(surface, posture, mode, upstreams, pool)


# ---- programs ----------------------------------------------------------------------------------

_conn = st.integers(0, 3)
_up = st.integers(0, 1)
_kind = st.sampled_from(KINDS)
OPS = st.one_of(
    st.builds(Op, st.just("open"), initialized=st.booleans(), roots=st.booleans()),
    st.builds(Op, st.just("close"), conn=_conn),
    st.builds(Op, st.just("list"), conn=_conn, kind=_kind),
    st.builds(Op, st.just("call"), conn=_conn, kind=_kind, upstream=_up),
    st.builds(Op, st.just("call"), conn=_conn, kind=_kind, upstream=_up),
    st.builds(Op, st.just("call"), conn=_conn, kind=st.just(ROOTS), upstream=_up),
    st.builds(Op, st.just("drift"), upstream=_up),
    st.builds(Op, st.just("drift_roots"), upstream=_up),
    st.builds(Op, st.just("restart"), upstream=_up),
    st.builds(Op, st.just("crash"), upstream=_up),
    st.builds(Op, st.just("burst"), initialized=st.booleans()),
)
# Connections with and without `roots` in any order, lists and calls on each (issue #26 item 6)
CAPABILITY_OPS = st.one_of(
    st.builds(Op, st.just("open"), roots=st.just(True)),
    st.builds(Op, st.just("open"), roots=st.just(False)),
    st.builds(Op, st.just("close"), conn=_conn),
    st.builds(Op, st.just("list"), conn=_conn, kind=st.just("tool")),
    st.builds(Op, st.just("call"), conn=_conn, kind=_kind, upstream=_up),
    st.builds(Op, st.just("call"), conn=_conn, kind=st.just(ROOTS), upstream=_up),
    st.builds(Op, st.just("call"), conn=_conn, kind=st.just(ROOTS), upstream=_up),
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
    """A first connection (with or without `roots`) and its baseline, then up to 7 generated
    steps: every kind of step, or (one program in two) connections with and without `roots`
    and their lists and calls. Three programs in four contain a drift: of the three items, or
    (in the second kind of program) of the roots-only tool."""
    capabilities = draw(st.booleans())
    body = draw(st.lists(CAPABILITY_OPS if capabilities else OPS, min_size=1, max_size=6))
    if draw(st.sampled_from([True, True, True, False])):
        drift = "drift_roots" if capabilities else "drift"
        body.insert(draw(st.integers(0, len(body))), Op(drift, upstream=draw(_up)))
    return [Op("open", roots=draw(st.booleans())), *draw(BASELINE), *body]


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
@hypothesis_settings(max_examples=3, env_prefix="MCPWARD_DRIFT")
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
    """Generated orders of open (with or without `roots`)/close/list/call/burst/drift (of the
    three items or of the roots-only tool)/restart/crash on a generated surface and contract
    mode, with the default re-validation TTL or revalidate_ttl_s: 0; the invariants are checked
    after every step (World.check)."""
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


# ---- lists that depend on the client's declared capabilities (issue #26 item 6) ---------------

NEWEST = -1  # Op.conn of the connection opened last


def _capability_scenario(name: str, upstreams: int) -> list[Op]:
    """A named order of connections with and without `roots` (the fixture lists its roots-only
    tool to the former), for a surface with `upstreams` upstreams."""
    ups = range(upstreams)

    def calls(conn: int, kind: str) -> list[Op]:
        return [Op("call", conn=conn, kind=kind, upstream=u) for u in ups]

    if name == "roots-client-pins-plain-client-lists-roots-client-calls":
        # the roots client's list pins the roots-only tool; a plain client's list lacks it (not a
        # removal); the roots client, then a new one before listing, call it: it passes silently
        plain = [Op("open"), Op("list", conn=1), *calls(1, "tool"), *calls(1, ROOTS)]
        again = [*calls(0, ROOTS), Op("open", roots=True), *calls(NEWEST, ROOTS)]
        return [Op("open", roots=True), Op("list"), *plain, *again]
    if name == "plain-client-pins-roots-client-lists-and-calls":
        # the tools are pinned without the roots-only tool; it appears to a roots client (a new
        # tool, pinned on first use under guard) and stays absent from the plain client's lists
        pin = [Op("open"), *(Op("list", kind=k) for k in KINDS)]
        roots = [Op("open", roots=True), *calls(1, ROOTS), Op("list", conn=1), Op("list", conn=0)]
        return [*pin, *roots, *calls(0, "tool"), *calls(1, ROOTS)]
    if name == "roots-tool-drifts-while-only-plain-clients-connected":
        # pinned by a roots client that then leaves; it drifts while only a plain client is
        # connected (its lists never show it); a new roots client calls it: held (-32010)
        pin = [Op("open", roots=True), Op("list"), Op("open"), Op("close", conn=0)]
        drift = [*(Op("drift_roots", upstream=u) for u in ups), Op("list"), *calls(0, "tool")]
        return [*pin, *drift, Op("open", roots=True), *calls(NEWEST, ROOTS)]
    raise AssertionError(name)


CAPABILITY_SCENARIOS = [
    "roots-client-pins-plain-client-lists-roots-client-calls",
    "plain-client-pins-roots-client-lists-and-calls",
    "roots-tool-drifts-while-only-plain-clients-connected",
]


# To keep the file's time about what it was (the generated orders cover every order on every
# surface): the first order on every surface (on stdio, two desktop clients sharing a state_dir);
# the drifted one not on stdio (a gateway process per connection, ~1 s each; a new process's
# first call against the store's pin is "new-connection-call-before-list-stdio"); the
# plain-first one on one surface per era.
CAPABILITY_CASES = [
    pytest.param(scenario, surface, id=f"{scenario}-{surface}")
    for scenario, surfaces in (
        (CAPABILITY_SCENARIOS[0], list(SURFACES)),
        (CAPABILITY_SCENARIOS[1], ["http-legacy-x2", "http-modern"]),
        (CAPABILITY_SCENARIOS[2], [s for s in SURFACES if s != "stdio"]),
    )
    for surface in surfaces
]


def _roots_calls(w: World) -> list[Outcome]:
    return [o for o in w.outcomes if o.kind == ROOTS and o.offered]


@pytest.mark.parametrize(("scenario", "surface"), CAPABILITY_CASES)
def test_lists_that_depend_on_the_client(tmp_path: Path, scenario: str, surface: str) -> None:
    """Guard, contracts read at start-up, World.check after every step (no hold but of a
    changed contract, none for an absence). Unchanged: every call of the roots-only tool by a
    client with `roots` succeeds under the pinned contract. Drifted: the new roots client's
    calls are held with -32010 contract_drift and never reach the upstream."""
    program = _capability_scenario(scenario, SURFACES[surface].upstreams)

    async def go() -> None:
        async with world(tmp_path / "w", SURFACES[surface], "guard", "readonly", "startup") as w:
            await w.run(program)
            calls = _roots_calls(w)
            assert calls, w.explain("no call of the roots-only tool")
            if "drifts" in scenario:
                for o in calls:
                    assert o.code == HOLD and o.error is not None, w.explain(f"not held: {o}")
                    assert o.error["data"]["code"] == "contract_drift", w.explain(str(o.error))
            else:
                assert all(o.code is None for o in calls), w.explain("a call failed")
                holds = [h for up in w.upstreams for h in up.pin_store().holds.values()]
                assert not holds, w.explain(f"holds: {holds}")

    asyncio.run(go())


def test_monitor_records_a_drifted_roots_only_tool(tmp_path: Path) -> None:
    """The drifted order under monitor, two upstreams aggregated for a 2026-07-28 client: the
    roots-only tool's calls pass and reach the upstream under the new contract, and the pin
    store records each drift as a hold it does not enforce."""
    surface = "http-modern-x2"
    program = _capability_scenario(
        "roots-tool-drifts-while-only-plain-clients-connected", SURFACES[surface].upstreams
    )

    async def go() -> None:
        async with world(tmp_path / "w", SURFACES[surface], "monitor", "readonly", "startup") as w:
            await w.run(program)
            calls = _roots_calls(w)
            assert calls and all(o.served == PINNED + 1 for o in calls), w.explain("not passed")
            for up in w.upstreams:
                hold = up.pin_store().holds.get((ItemKind.TOOL, ROOTS_TOOL))
                assert hold is not None and not hold.enforced, w.explain(f"{up.id}: {hold}")

    asyncio.run(go())


# ---- several first calls at once on a fresh connection -----------------------------------------


async def _burst_after_pin(w: World, drifted: bool) -> list[Outcome]:
    """Connection 1 pins; maybe every contract drifts; a fresh connection then sends two of each
    call to every upstream at once, before it lists anything."""
    w.trace.append("  1. open; pin with one tool call per upstream")
    first = await w.pool.open()
    for up in w.upstreams:
        await w.call(first, "tool", up)
    if drifted:
        w.trace.append("  2. drift every upstream")
        for up in w.upstreams:
            await w.drift(up)
    w.step = 3
    w.trace.append("  3. open; burst of first calls")
    fresh = await w.pool.open()
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
