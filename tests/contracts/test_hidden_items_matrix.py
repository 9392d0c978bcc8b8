"""What a list hides cannot be called (docs/guards.md), as a property over generated message
orders run through the real gateway on the five surfaces of the drift matrix (matrix_harness).

The gateway runs the default guards plus a tool_filter that hides the tool `purge` by name, in
front of drift_server upstreams started with --hidden-items: the tool `audit`, the prompt `coach`
and the resource `<uri>/notes` are poisoned from the start, so tool_poisoning drops them. With
two aggregated upstreams fy's tools are copies of fx's (same names and descriptions), so
tool_shadowing drops every tool of fy (the first-configured upstream wins). Visible: fx's
`transfer`, every upstream's `greet` prompt and ledger resource.

Two configurations (CONFIGS): `as-configured`, the defaults' runs_on and the tool_filter on
tools_list and tool_invoke; `lists-only`, every guard that hides listed items (HIDERS) given only
its list phases, so only the rule (Guard.effective_phases) makes it judge calls.

Programs: open a connection (a new gateway process over the same state_dir on stdio, a new
session on HTTP, a new client token for 2026-07-28), close one, list tools, prompts or
resources, call an item, or burst (a fresh connection calls every item of every upstream at
once, before it lists anything). Every program opens a connection and calls a hidden item before
any list; most open another one later and do the same. The first call a fresh gateway gets,
to a shadowing tool while the other upstream is still being read, is also pinned on its own
(test_a_shadowing_tool_called_first_on_a_fresh_gateway): these orders found it.

Invariants after every step (World.check): no upstream's call log holds a call to a hidden item;
every call to a hidden item was refused with -32013 and a code of a guard that hides it
(`hidden_by`); every call to a visible item succeeded and reached the upstream (so refusing
everything fails); every list shows its visible items and none of its hidden ones.

Shrinking is off: MCPWARD_HIDDEN_SHRINK=1 turns it on, MCPWARD_HIDDEN_EXAMPLES=N generates N
programs per surface and configuration instead of 2 on stdio (a connection is a gateway process,
seconds to start) and 4 over HTTP.
Run: .venv/bin/pytest -q tests/contracts/test_hidden_items_matrix.py
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpward.guards.defaults import default_guard_specs
from mcpward.pipeline.phases import CALL_PHASES, LIST_PHASES
from tests.contracts.matrix_harness import (
    CALL_METHODS,
    DENIED,
    KINDS,
    LIST_KEYS,
    LIST_METHODS,
    SURFACES,
    Conn,
    Connections,
    Surface,
    Upstream,
    call_params,
    gateway_connections,
    hypothesis_settings,
    run_program,
    served_json,
    upstreams_for,
)
from tests.fixtures.drift_server import (
    FILTERED_TOOL,
    POISONED_PROMPT,
    POISONED_TOOL,
    poisoned_resource_uri,
)

# The items of each upstream, by key: its kind. `ledger` and `notes` are resources (by URI).
ITEMS = {
    "transfer": "tool",
    FILTERED_TOOL: "tool",
    POISONED_TOOL: "tool",
    "greet": "prompt",
    POISONED_PROMPT: "prompt",
    "ledger": "resource",
    "notes": "resource",
}
# The denial codes of the guards that hide an item on every upstream.
HIDDEN = {
    FILTERED_TOOL: frozenset({"tool_not_allowed"}),
    POISONED_TOOL: frozenset({"poisoned_item"}),
    POISONED_PROMPT: frozenset({"poisoned_item"}),
    "notes": frozenset({"poisoned_item"}),
}
HIDERS = ("access", "tool_poisoning", "tool_shadowing", "tool_filter")
CONFIGS = ("as-configured", "lists-only")
# The default guards that run where an item can be hidden or a call refused; the others (secrets,
# response_injection) judge results only, and only cost every gateway start.
JUDGING = LIST_PHASES | set(CALL_PHASES)
_examples = itertools.count()


def hidden_by(key: str, upstream: int) -> frozenset[str]:
    """The codes a call to item `key` of upstream number `upstream` may be refused with (one
    per guard that hides it); empty for a visible item. Every tool of the second upstream
    copies one of the first's, so tool_shadowing hides it."""
    codes = HIDDEN.get(key, frozenset())
    if ITEMS[key] == "tool" and upstream > 0:
        codes |= {"shadowing_item"}
    return codes


def guards(config: str) -> list[dict[str, Any]]:
    """The default guards plus a tool_filter hiding FILTERED_TOOL; under `lists-only` every
    guard that hides listed items runs on its list phases only."""
    specs = [
        s.model_dump(mode="json", exclude_none=True)
        for s in default_guard_specs()
        if set(s.runs_on) & JUDGING
    ]
    specs.append(
        {
            "kind": "tool_filter",
            "id": "tool_filter",
            "priority": 10,
            "runs_on": ["tools_list", "tool_invoke"],
            "config": {"rules": [{"deny": [FILTERED_TOOL]}]},
        }
    )
    if config == "lists-only":
        lists = {phase.value for phase in LIST_PHASES}
        for spec in specs:
            if spec["kind"] in HIDERS:
                spec["runs_on"] = [phase for phase in spec["runs_on"] if phase in lists]
    return specs


def client_name(up: Upstream, key: str) -> str:
    """What a client calls item `key` of `up`."""
    if key == "ledger":
        return up.uri
    if key == "notes":
        return poisoned_resource_uri(up.uri)
    return up.name(ITEMS[key], key)


def upstream_name(up: Upstream, key: str) -> str:
    """What `up` calls item `key` (the name its call log records)."""
    return client_name(up, key) if ITEMS[key] == "resource" else key


# ---- one example -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """One step. `conn` picks an open connection (modulo how many are open; one is opened when
    none is); `upstream` picks an upstream (modulo their number)."""

    name: str  # open | close | list | call | burst
    conn: int = 0
    kind: str = "tool"  # list
    item: str = "transfer"  # call
    upstream: int = 0
    initialized: bool = True

    def __repr__(self) -> str:
        if self.name in ("open", "burst"):
            return self.name if self.initialized else f"{self.name}(no initialized)"
        if self.name == "close":
            return f"close(#{self.conn})"
        if self.name == "list":
            return f"list(#{self.conn}, {self.kind})"
        return f"call(#{self.conn}, {self.item}, u{self.upstream})"


@dataclass
class Outcome:
    step: int
    conn: str
    upstream: Upstream
    key: str
    hidden_by: frozenset[str]
    listed: bool  # had this connection listed this kind before the call?
    served: str | None = None  # the name the upstream says it served, on success
    error: dict[str, Any] | None = None


@dataclass
class World:
    surface: Surface
    config: str
    upstreams: list[Upstream]
    pool: Connections
    outcomes: list[Outcome] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    step: int = 0

    async def call(self, conn: Conn, key: str, index: int) -> None:
        up = self.upstreams[index]
        kind = ITEMS[key]
        name = client_name(up, key)
        params = call_params(kind, name, "m")
        hidden = hidden_by(key, index)
        outcome = Outcome(self.step, conn.label, up, key, hidden, kind in conn.listed)
        reply = await conn.request(CALL_METHODS[kind], params)
        if "error" in reply:
            outcome.error = reply["error"]
        else:
            outcome.served = served_json(kind, reply["result"])["name"]
        self.outcomes.append(outcome)
        shown = "ok" if outcome.error is None else f"error {outcome.error.get('code')}"
        self.trace.append(f"    {conn.label} {name}: {shown}")

    async def list_items(self, conn: Conn, kind: str) -> None:
        reply = await conn.request(LIST_METHODS[kind], {})
        assert "result" in reply, self.explain(f"{LIST_METHODS[kind]} failed: {reply}")
        conn.listed.add(kind)
        field_name = "uri" if kind == "resource" else "name"
        shown = {item[field_name] for item in reply["result"][LIST_KEYS[kind]]}
        for index, up in enumerate(self.upstreams):
            for key in (k for k, k_kind in ITEMS.items() if k_kind == kind):
                name = client_name(up, key)
                hidden = bool(hidden_by(key, index))
                assert (name in shown) != hidden, self.explain(
                    f"{conn.label} {LIST_METHODS[kind]}: {name} {'shown' if hidden else 'missing'}"
                    f" (listed: {sorted(shown)})"
                )

    def explain(self, problem: str) -> str:
        lines = [problem, f"surface={self.surface} config={self.config}", "steps:", *self.trace]
        for up in self.upstreams:
            lines.append(f"upstream {up.id} received: {[c['name'] for c in up.calls()]}")
        return "\n".join(lines)

    def check(self) -> None:
        for index, up in enumerate(self.upstreams):
            hidden = {upstream_name(up, key) for key in ITEMS if hidden_by(key, index)}
            reached = [c for c in up.calls() if c["name"] in hidden]
            if reached:
                raise AssertionError(
                    self.explain(f"hidden items of upstream {up.id} were called: {reached}")
                )
        for o in self.outcomes:
            where = f"step {o.step}: {o.conn} {client_name(o.upstream, o.key)}"
            where += " (listed first)" if o.listed else " (before any list of its kind)"
            if not o.hidden_by:
                assert o.error is None, self.explain(f"{where}: a visible item refused: {o.error}")
                assert o.served == upstream_name(o.upstream, o.key), self.explain(where)
                continue
            assert o.error is not None, self.explain(f"{where}: a hidden item was served")
            data = o.error.get("data")
            code = data.get("code") if isinstance(data, dict) else None
            assert o.error.get("code") == DENIED and code in o.hidden_by, self.explain(
                f"{where}: refused with {o.error}, expected -32013 with one of "
                f"{sorted(o.hidden_by)}"
            )

    async def run(self, program: list[Op]) -> None:
        await run_program(self, program)

    async def apply(self, op: Op) -> None:
        if await self.pool.apply(op):
            return
        if op.name == "list":
            await self.list_items(await self.pool.pick(op.conn), op.kind)
        elif op.name == "call":
            index = op.upstream % len(self.upstreams)
            await self.call(await self.pool.pick(op.conn), op.item, index)
        elif op.name == "burst":
            conn = await self.pool.open(op.initialized)
            await asyncio.gather(
                *(self.call(conn, key, i) for i in range(len(self.upstreams)) for key in ITEMS)
            )
        else:
            raise AssertionError(f"unknown op {op}")


@asynccontextmanager
async def world(directory: Path, surface: Surface, config: str) -> AsyncIterator[World]:
    directory.mkdir(parents=True)
    upstreams = upstreams_for(directory, surface, "readonly", "startup", hidden_items=True)
    async with gateway_connections(directory, surface, upstreams, guards(config)) as pool:
        yield World(surface, config, upstreams, pool)


# ---- programs ----------------------------------------------------------------------------------

_conn = st.integers(0, 3)
_connect = st.one_of(
    st.builds(Op, st.just("open"), initialized=st.booleans()),
    st.builds(Op, st.just("close"), conn=_conn),
    st.builds(Op, st.just("burst"), initialized=st.booleans()),
)


def hidden_calls(surface: Surface, conn: st.SearchStrategy[int]) -> st.SearchStrategy[Op]:
    """Calls to a hidden item of any upstream of `surface`, on connection `conn`."""
    pairs = [(key, i) for i in range(surface.upstreams) for key in ITEMS if hidden_by(key, i)]
    return st.builds(
        lambda c, pair: Op("call", conn=c, item=pair[0], upstream=pair[1]),
        conn,
        st.sampled_from(pairs),
    )


@st.composite
def programs(draw: st.DrawFn, surface: Surface) -> list[Op]:
    """A first connection calls a hidden item before any list; then 2 to 7 generated steps,
    into which three programs in four insert a fresh connection that calls a hidden item before
    any list (one call, or a burst). On stdio, where a connection is a gateway process (seconds
    to start), that is the only other connection: the generated steps only list and call."""
    use = st.one_of(
        st.builds(Op, st.just("list"), conn=_conn, kind=st.sampled_from(KINDS)),
        st.builds(
            Op,
            st.just("call"),
            conn=_conn,
            item=st.sampled_from(list(ITEMS)),
            upstream=st.integers(0, surface.upstreams - 1),
        ),
        hidden_calls(surface, _conn),
    )
    steps = use if surface.front == "stdio" else st.one_of(use, _connect)
    body = draw(st.lists(steps, min_size=2, max_size=7))
    fresh = draw(st.sampled_from(["open", "open", "burst", "none"]))
    at = draw(st.integers(0, len(body)))
    if fresh == "open":
        opened = Op("open", initialized=draw(st.booleans()))
        newest = st.just(-1)  # connection -1: the one just opened
        body[at:at] = [opened, draw(hidden_calls(surface, newest))]
    elif fresh == "burst":
        body.insert(at, Op("burst", initialized=draw(st.booleans())))
    return [Op("open"), draw(hidden_calls(surface, st.just(0))), *body]


def _run(tmp_path: Path, surface: str, config: str, program: list[Op]) -> None:
    directory = tmp_path / f"example-{next(_examples)}"

    async def go() -> None:
        async with world(directory, SURFACES[surface], config) as w:
            await w.run(program)

    asyncio.run(go())


@pytest.mark.parametrize("config", CONFIGS)
@hypothesis_settings(max_examples=2, env_prefix="MCPWARD_HIDDEN")
@given(data=st.data())
def test_what_a_list_hides_cannot_be_called_on_stdio(
    tmp_path: Path, config: str, data: st.DataObject
) -> None:
    """Generated orders of list/call and one more gateway process over the same state_dir; the
    invariants are checked after every step (World.check)."""
    _run(tmp_path, "stdio", config, data.draw(programs(SURFACES["stdio"]), label="program"))


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("surface", [name for name in SURFACES if name != "stdio"])
@hypothesis_settings(max_examples=4, env_prefix="MCPWARD_HIDDEN")
@given(data=st.data())
def test_what_a_list_hides_cannot_be_called_over_http(
    tmp_path: Path, surface: str, config: str, data: st.DataObject
) -> None:
    """Generated orders of open/close/list/call/burst; the invariants are checked after every
    step (World.check)."""
    _run(tmp_path, surface, config, data.draw(programs(SURFACES[surface]), label="program"))


@pytest.mark.parametrize("surface", ["http-legacy-x2", "http-modern-x2"])
def test_a_shadowing_tool_called_first_on_a_fresh_gateway(tmp_path: Path, surface: str) -> None:
    """The first call a fresh gateway receives is to fy__transfer, a copy of fx__transfer that
    tool_shadowing drops from every list, while the session's first read of fx (started once
    it opened its upstreams) is still under way. It was judged without fx's list and reached
    fy; tool_shadowing now waits for that read (found by the generated orders above)."""
    program = [Op("open", initialized=False), Op("call", item="transfer", upstream=1)]
    _run(tmp_path, surface, "as-configured", program)
