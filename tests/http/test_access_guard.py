"""The access guard: role globs, annotation ceilings with the spec's defaults, list filtering."""

from __future__ import annotations

from typing import Any

import pytest

from mcpward.guards.access import AccessGuard, AccessOptions, required_ceiling
from mcpward.identity.consent import (
    CEILING_CLAIM,
    ConsentCeiling,
    ceiling_of,
    requested_ceiling,
    session_identity,
)
from mcpward.pipeline import GuardContext, GuardSpec, Identity, Phase
from mcpward.pipeline.executor import Pipeline

TOOLS: list[dict[str, Any]] = [
    {"name": "read_file", "annotations": {"readOnlyHint": True}},
    {"name": "append_note", "annotations": {"readOnlyHint": False, "destructiveHint": False}},
    {"name": "delete_repo", "annotations": {"destructiveHint": True}},
    {"name": "no_hints"},
    {"name": "only_idempotent", "annotations": {"idempotentHint": True}},
    {"name": "string_true", "annotations": {"readOnlyHint": "true"}},
]


@pytest.mark.parametrize(
    ("hints", "needed"),
    [
        ({"readOnlyHint": True}, "read_only"),
        ({"readOnlyHint": True, "destructiveHint": True}, "read_only"),
        ({"readOnlyHint": False, "destructiveHint": False}, "no_destructive"),
        ({"destructiveHint": False}, "no_destructive"),
        ({}, "full"),
        ({"destructiveHint": True}, "full"),
        ({"readOnlyHint": "true"}, "full"),
        ({"destructiveHint": 0}, "full"),
    ],
)
def test_required_ceiling_uses_spec_defaults(hints: dict[str, Any], needed: str) -> None:
    assert required_ceiling(hints) is ConsentCeiling(needed)


def identity(ceiling: str | None, roles: tuple[str, ...] = (), client: str = "c1") -> Identity:
    claims = {CEILING_CLAIM: ceiling} if ceiling else {}
    return Identity(sub=client, client_id=client, roles=roles, claims=claims)


def make_pipeline(**options: Any) -> Pipeline:
    spec = GuardSpec(
        kind="access",
        runs_on=[Phase.TOOLS_LIST, Phase.TOOL_INVOKE, Phase.PROMPTS_LIST, Phase.PROMPT_REQUEST],
        config=options,
    )
    return Pipeline([AccessGuard(spec, AccessOptions.model_validate(options))])


def ctx(who: Identity | None, upstream: str = "files") -> GuardContext:
    return GuardContext(
        server_name=upstream, method="tools/call", identity=who, catalog={upstream: TOOLS}
    )


async def listed(pipeline: Pipeline, who: Identity | None, upstream: str = "files") -> list[str]:
    out = await pipeline.run([Phase.TOOLS_LIST], None, [dict(t) for t in TOOLS], ctx(who, upstream))
    assert out.allowed
    return [t["name"] for t in out.payload]


async def call(pipeline: Pipeline, who: Identity | None, tool: str, upstream: str = "files") -> Any:
    return await pipeline.run([Phase.TOOL_INVOKE], tool, {}, ctx(who, upstream))


@pytest.mark.parametrize(
    ("ceiling", "visible"),
    [
        ("read_only", ["read_file"]),
        ("no_destructive", ["read_file", "append_note"]),
        ("full", [t["name"] for t in TOOLS]),
    ],
)
async def test_ceiling_filters_lists_and_denies_calls(ceiling: str, visible: list[str]) -> None:
    pipeline = make_pipeline()
    who = identity(ceiling)
    assert await listed(pipeline, who) == visible
    for tool in TOOLS:
        out = await call(pipeline, who, tool["name"])
        assert out.allowed is (tool["name"] in visible), tool["name"]
        if not out.allowed:
            assert out.stop.code == "consent_ceiling"
            assert ceiling in out.stop.message


async def test_no_recorded_ceiling_uses_the_default() -> None:
    assert len(await listed(make_pipeline(), None)) == len(TOOLS)
    closed = make_pipeline(default_ceiling="read_only")
    assert await listed(closed, identity(None)) == ["read_file"]


async def test_untrusted_annotations_count_as_destructive_and_overrides_apply() -> None:
    pipeline = make_pipeline(
        trust_annotations=["trusted-*"],
        annotations=[{"upstream": "files", "tool": "no_hints", "read_only": True}],
    )
    who = identity("read_only")
    assert await listed(pipeline, who, "files") == ["no_hints"]
    assert await listed(pipeline, who, "trusted-files") == ["read_file"]


async def test_unknown_tool_is_denied_below_full() -> None:
    pipeline = make_pipeline()
    out = await call(pipeline, identity("no_destructive"), "not_listed")
    assert out.stop is not None and "not in the catalog" in out.stop.message
    assert (await call(pipeline, identity("full"), "not_listed")).allowed


async def test_roles_select_upstreams_and_tools() -> None:
    pipeline = make_pipeline(
        roles={
            "reader": [{"upstream": "files", "tools": ["read_*"]}],
            "notes": [{"upstream": "files", "tools": ["append_note"]}],
            "ops": [{"upstream": "infra*"}],
        }
    )
    reader = identity("full", roles=("reader",))
    assert await listed(pipeline, reader) == ["read_file"]
    both = identity("full", roles=("reader", "notes"))
    assert await listed(pipeline, both) == ["read_file", "append_note"]
    assert (await call(pipeline, both, "append_note")).allowed
    denied = await call(pipeline, reader, "delete_repo")
    assert denied.stop is not None and denied.stop.code == "role_not_allowed"
    # an upstream no rule of the client's roles names is hidden entirely
    assert await listed(pipeline, reader, "infra-1") == []
    out = await pipeline.run([Phase.PROMPTS_LIST], None, [{"name": "p"}], ctx(reader, "infra-1"))
    assert out.payload == []
    out = await pipeline.run([Phase.PROMPT_REQUEST], "p", {}, ctx(reader, "infra-1"))
    assert out.stop is not None and out.stop.code == "role_not_allowed"
    ops = identity("full", roles=("ops",))
    assert len(await listed(pipeline, ops, "infra-1")) == len(TOOLS)
    # no identity and no anonymous roles: nothing
    assert await listed(pipeline, None) == []


async def test_roles_and_ceiling_combine() -> None:
    pipeline = make_pipeline(roles={"dev": [{"upstream": "*"}]})
    assert await listed(pipeline, identity("read_only", roles=("dev",))) == ["read_file"]
    assert await listed(pipeline, identity("full", roles=("unknown-role",))) == []


def test_session_narrowing_never_widens() -> None:
    full, ro, nd = ConsentCeiling.FULL, ConsentCeiling.READ_ONLY, ConsentCeiling.NO_DESTRUCTIVE
    assert full.narrowed_to(ro) is ro
    assert nd.narrowed_to(ro) is ro
    assert ro.narrowed_to(full) is ro
    assert ro.narrowed_to(nd) is ro
    assert nd.narrowed_to(None) is nd


@pytest.mark.parametrize(
    ("params", "valid", "requested"),
    [
        (None, True, None),
        ({}, True, None),
        ({"consentCeiling": "read_only"}, True, "read_only"),
        ({"_meta": {"dev.mcpward/consentCeiling": "no_destructive"}}, True, "no_destructive"),
        ({"_meta": {"dev.mcpward/consentCeiling": "root"}}, False, None),
        ({"consentCeiling": 3}, False, None),
    ],
)
def test_requested_ceiling(params: Any, valid: bool, requested: str | None) -> None:
    ok, ceiling = requested_ceiling(params)
    assert ok is valid
    assert (ceiling.value if ceiling else None) == requested


def test_session_identity_narrows_but_never_widens() -> None:
    who = identity("no_destructive", roles=("dev",))
    recorded = ConsentCeiling.NO_DESTRUCTIVE
    assert ceiling_of(session_identity(who, recorded, ConsentCeiling.FULL)) is recorded
    narrowed = session_identity(who, recorded, ConsentCeiling.READ_ONLY)
    assert ceiling_of(narrowed) is ConsentCeiling.READ_ONLY
    assert narrowed.roles == ("dev",) and narrowed.client_id == who.client_id
