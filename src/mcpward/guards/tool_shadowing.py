"""tool_shadowing: across upstreams, drops a tool whose name is a look-alike of another
upstream's tool, a copy of it (under its name or another), a promoted stand-in for it, or whose
texts talk about it. With `drop`, a call to a tool it drops is denied too: leaving it out of the
list alone would not stop a client that knows the name.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcpward.guards.detection.concepts import MARKER_RULES, ORDER_CUES
from mcpward.guards.detection.extract import StructureLimit, definition_texts
from mcpward.guards.detection.families import ENGLISH_PREFERENCE_RULES, POISONING_ONLY_RULES, Rule
from mcpward.guards.detection.multilingual import MULTILINGUAL_PREFERENCE_RULES
from mcpward.guards.detection.names import collision_key
from mcpward.guards.detection.regex import compile_pending
from mcpward.guards.detection.scanner import ContentScanner
from mcpward.guards.hidden_items import lists_unreadable
from mcpward.pipeline.context import GuardContext
from mcpward.pipeline.decisions import AddWarning, Allow, Decision, Deny, Modify, ReplaceTools
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.services import CatalogView, GatewayServices
from mcpward.pipeline.spec import GuardSpec
from mcpward.pipeline.subject import Subject

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_.\-/:]{2,127}")
# A plain word counts as a tool reference only when quoted and called a tool: "the `search` tool".
_QUOTED_TOOL = re.compile(
    r"[`'\"]([A-Za-z][A-Za-z0-9_.\-]{2,63})[`'\"]\s+(?:tool|function)\b|"
    r"\b(?:tool|function)\s+[`'\"]([A-Za-z][A-Za-z0-9_.\-]{2,63})[`'\"]",
    re.IGNORECASE,
)
# "the search tool": an unquoted name counts when it is called a tool right there.
_NAMED_TOOL = re.compile(
    r"\bthe\s+([A-Za-z][A-Za-z0-9_.\-]{2,63})\s+(?:tool|function)\b", re.IGNORECASE
)
_WORD = re.compile(r"[^\W_]+")
_SEPARATORS = re.compile(r"[-_. ]+")
# Two descriptions sharing this share of their words (Jaccard) are copies. Independent tools of
# the same name on real servers (GitHub/GitLab, filesystem/desktop-commander) stay below 0.7.
COPY_SIMILARITY = 0.8
# A renamed copy needs a description this long (distinct words): short ones ("Get the current
# time") coincide between independent servers.
RENAMED_COPY_WORDS = 8
# Self-promotion aimed at the model's choice between tools (tool_poisoning's family).
_PROMOTION = ContentScanner(
    [r for r in POISONING_ONLY_RULES if r.family == "preference-manipulation"]
    + ENGLISH_PREFERENCE_RULES
    + MULTILINGUAL_PREFERENCE_RULES
)

# What makes a mention of another server's tool an order about it: an order cue or any concept
# of tool_poisoning's co-occurrence scoring, in the same text field.
_ORDERS = ContentScanner(
    [r for r in MARKER_RULES if r.id not in ("other-tools", "email-address")]
    + [Rule("cross-tool", "order-cue", ORDER_CUES, max_hits=1)]
)
# The separators a gateway puts between a server and a tool name (`fx__send_email`, `fx.send`).
NAMESPACE_SEPARATORS = ("__", ".", "/", ":")


class ToolShadowingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    winner: Literal["first_configured", "last_configured"] = Field(
        default="first_configured",
        description="On a name collision, the tool of this upstream (in config order) is kept.",
    )
    action: Literal["drop", "warn"] = "drop"
    check_descriptions: bool = Field(
        default=True, description="Also drop tools whose texts name another upstream's tools."
    )
    strip_decorations: bool = Field(
        default=True, description="Treat `x_v1`, `x_enhanced`, `premium_x` as the name `x`."
    )
    exact_names: Literal["copies", "always"] = Field(
        default="copies",
        description="A tool named like another upstream's (exactly, or but for case and "
        "separators): `copies` drops it only when "
        "its description copies the other's or promotes itself (two servers implementing one "
        "API share names, and namespacing keeps them apart); `always` drops every such tool.",
    )
    check_renamed_copies: bool = Field(
        default=True,
        description="Drop a tool that copies another upstream tool's description and parameter "
        "names under a different name (a renamed copy; the later-configured one is dropped).",
    )
    check_overlap: bool = Field(
        default=True,
        description="Drop a tool that takes exactly another upstream tool's parameters and "
        "promotes itself (function overlapping with preference manipulation).",
    )


@dataclass(frozen=True, slots=True)
class Shadowing:
    tool: str
    reason: Literal[
        "name-collision", "renamed-copy", "references-other-upstream", "promoted-overlap"
    ]
    other_upstream: str
    other_tool: str
    field: str = "$.name"

    def describe(self) -> dict[str, str]:
        return {
            "tool": self.tool,
            "reason": self.reason,
            "other": f"{self.other_upstream}/{self.other_tool}",
            "field": self.field,
        }


def _same_name(name: str, other: str) -> bool:
    """One name, or one name in another separator style (`take_screenshot`, `takeScreenshot`,
    `take-screenshot`: independent servers write it so). Only the case changed with the same
    separators (`Playwright_Navigate`) is a look-alike, as are decorated or confusable names."""
    if name == other:
        return True
    plain = _SEPARATORS.sub("", name).casefold() == _SEPARATORS.sub("", other).casefold()
    return plain and name.casefold() != other.casefold()


_NUMBERED = re.compile(r"(?P<base>.+?)[-_. ]?\d+")


def _numbered(name: str, other: str) -> bool:
    """`echo_0` next to `echo`: servers number their own variants; a bare number is no
    decoration aimed at the model (`_v2`, `_enhanced` are), so it is judged as the same name."""
    for a, b in ((name, other), (other, name)):
        match = _NUMBERED.fullmatch(a)
        if match and _same_name(match.group("base"), b):
            return True
    return False


PLAIN_NAME_MIN = 4  # shorter plain tool names ("get", "ls") are ordinary letters in prose


def _distinctive(name: str) -> bool:
    """A name unlikely to be an ordinary word in prose (has a separator, digit or camelCase)."""
    return len(name) >= 4 and (
        any(c in name for c in "_-.")
        or any(c.isdigit() for c in name)
        or name[1:] != name[1:].lower()
    )


def _words(tool: Mapping[str, Any]) -> set[str]:
    description = tool.get("description")
    return set(_WORD.findall(description.casefold())) if isinstance(description, str) else set()


def _copies(tool: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    mine, theirs = _words(tool), _words(other)
    return bool(mine | theirs) and len(mine & theirs) >= COPY_SIMILARITY * len(mine | theirs)


def _parameters(tool: Mapping[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    """(parameter names, required names) of a tool's input schema."""
    schema = tool.get("inputSchema")
    if not isinstance(schema, Mapping):
        return frozenset(), frozenset()
    properties = schema.get("properties")
    required = schema.get("required")
    names = frozenset(properties) if isinstance(properties, Mapping) else frozenset()
    needed = (
        frozenset(r for r in required if isinstance(r, str))
        if isinstance(required, list)
        else frozenset()
    )
    return names, needed


def _overlaps(tool: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """The tool can stand in for the other: it takes a part of the other's parameters that
    holds all of the other's required ones (and takes some)."""
    mine, _ = _parameters(tool)
    theirs, required = _parameters(other)
    return bool(mine) and required <= mine <= theirs


def _promotes(tool: Mapping[str, Any]) -> bool:
    return bool(_PROMOTION.scan_definition(tool))


def find_shadowing(
    upstream: str,
    tools: Sequence[Mapping[str, Any]],
    catalog: Mapping[str, Sequence[Mapping[str, Any]]],
    order: Sequence[str],
    options: ToolShadowingOptions,
) -> list[Shadowing]:
    """The tools of `upstream` that shadow another upstream's tools, and why."""
    rank = {uid: i for i, uid in enumerate(order)}
    mine = rank.get(upstream, len(rank))
    by_key: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    all_others: list[tuple[str, Mapping[str, Any]]] = []
    other_names: dict[str, tuple[str, str]] = {}
    for uid, others in catalog.items():
        if uid == upstream:
            continue
        for other in others:
            name = other.get("name")
            if isinstance(name, str) and name:
                by_key.setdefault(collision_key(name, options.strip_decorations), []).append(
                    (uid, other)
                )
                other_names.setdefault(name.casefold(), (uid, name))
                for sep in NAMESPACE_SEPARATORS:  # every name the tool is reachable by
                    other_names.setdefault(f"{uid}{sep}{name}".casefold(), (uid, name))
                all_others.append((uid, other))
    own_names = {str(t.get("name", "")).casefold() for t in tools}
    wanted = {_parameters(t)[0] for t in tools} if options.check_renamed_copies else set()
    by_params = _by_parameters(all_others, wanted) if wanted else {}
    found: list[Shadowing] = []
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str):
            continue
        shadowing = _collision(upstream, mine, rank, tool, name, by_key, options)
        if shadowing is None and by_params:
            shadowing = _renamed_copy(upstream, mine, rank, tool, name, by_params, options)
        if shadowing is None and options.check_descriptions:
            shadowing = _reference(tool, own_names, other_names)
        if shadowing is None and options.check_descriptions:
            shadowing = _server_reference(tool, upstream, catalog)
        if shadowing is None and options.check_overlap and all_others and _promotes(tool):
            for uid, other in all_others:
                if _overlaps(tool, other):
                    shadowing = Shadowing(name, "promoted-overlap", uid, str(other["name"]))
                    break
        if shadowing is None and options.check_descriptions:
            shadowing = _reference(tool, own_names, other_names, plain=True)
        if shadowing is not None:
            found.append(shadowing)
    return found


def _loses(upstream: str, mine: int, uid: str, rank: Mapping[str, int], winner: str) -> bool:
    """This upstream's tool gives way to the other upstream's (config order; ties by id)."""
    theirs = rank.get(uid, len(rank))
    loses = theirs < mine if winner == "first_configured" else theirs > mine
    return loses or (theirs == mine and uid < upstream)


def _by_parameters(
    others: Sequence[tuple[str, Mapping[str, Any]]], wanted: set[frozenset[str]]
) -> dict[frozenset[str], list[tuple[str, Mapping[str, Any]]]]:
    """Other upstreams' tools with a description long enough to be copied, by parameter names
    (only the names some tool of this upstream takes)."""
    out: dict[frozenset[str], list[tuple[str, Mapping[str, Any]]]] = {}
    for uid, other in others:
        key = _parameters(other)[0]
        if key in wanted and len(_words(other)) >= RENAMED_COPY_WORDS:
            out.setdefault(key, []).append((uid, other))
    return out


def _renamed_copy(
    upstream: str,
    mine: int,
    rank: Mapping[str, int],
    tool: Mapping[str, Any],
    name: str,
    by_params: Mapping[frozenset[str], list[tuple[str, Mapping[str, Any]]]],
    options: ToolShadowingOptions,
) -> Shadowing | None:
    """Another upstream's tool, description and parameter names copied, under a new name."""
    if len(_words(tool)) < RENAMED_COPY_WORDS:
        return None
    for uid, other in by_params.get(_parameters(tool)[0], []):
        if _loses(upstream, mine, uid, rank, options.winner) and _copies(tool, other):
            return Shadowing(name, "renamed-copy", uid, str(other["name"]))
    return None


def _collision(
    upstream: str,
    mine: int,
    rank: Mapping[str, int],
    tool: Mapping[str, Any],
    name: str,
    by_key: Mapping[str, list[tuple[str, Mapping[str, Any]]]],
    options: ToolShadowingOptions,
) -> Shadowing | None:
    """A look-alike name (decorated, other case or separators, confusables) that loses to the
    other upstream; an exact same name only when it copies or outbids the other tool."""
    for uid, other in by_key.get(collision_key(name, options.strip_decorations), []):
        if not _loses(upstream, mine, uid, rank, options.winner):
            continue
        other_name = str(other["name"])
        if (
            options.exact_names == "copies"
            and (_same_name(name, other_name) or _numbered(name, other_name))
            and not _copies(tool, other)
            and not _promotes(tool)
        ):
            continue
        return Shadowing(name, "name-collision", uid, other_name)
    return None


def _other_key(key: str, own: set[str], others: Mapping[str, tuple[str, str]]) -> str | None:
    """The key under which a word names another upstream's tool: the word itself, or the part
    after a namespace separator (`srv__send_email` under an alias the catalog does not know)."""
    if key in own:
        return None
    if key in others:
        return key
    for sep in NAMESPACE_SEPARATORS:
        _, found, tail = key.rpartition(sep)
        if found and tail not in own and tail in others and _distinctive(tail):
            return tail
    return None


def _orders(text: str) -> bool:
    """The text gives orders (an order cue or a poisoning concept), not a plain mention."""
    return bool(_ORDERS.scan_text(text))


def _reference(
    tool: Mapping[str, Any], own: set[str], others: dict[str, tuple[str, str]], plain: bool = False
) -> Shadowing | None:
    """A description that names another upstream's tool (under any alias) and gives an order
    about it: an order cue in the same text, or the learned scorer rating the definition as
    orders aimed at the model (a cross-server mention plus that is how shadowing reads).
    `plain`: a tool name that is an ordinary word counts too (the last check: weakest)."""
    if not others:
        return None
    try:
        texts = [t for t in definition_texts(tool) if not t.is_name]
    except StructureLimit:
        return None  # tool_poisoning reports unscannable definitions
    mentioned: tuple[str, str, str] | None = None
    for text in texts:
        quoted = {m.group(1) or m.group(2) for m in _QUOTED_TOOL.finditer(text.text)}
        quoted |= {m.group(1) for m in _NAMED_TOOL.finditer(text.text)}
        for match in _IDENTIFIER.finditer(text.text):
            word = match.group(0).rstrip(".-/:")
            key = _other_key(word.casefold(), own, others)
            if key is None:
                continue
            uid, other = others[key]
            if not (_distinctive(word) or word in quoted):
                # an ordinary word that is also another upstream's tool name ("transfer",
                # "push"): with `plain`, a mention, but only with the learned scorer's verdict
                if plain and len(word) >= PLAIN_NAME_MIN:
                    mentioned = mentioned or (uid, other, text.path)
                continue
            if _orders(text.text):
                return Shadowing(str(tool.get("name")), "references-other-upstream", uid, other,
                                 text.path)  # fmt: skip
            mentioned = mentioned or (uid, other, text.path)
    if mentioned is not None and _directive(tool):
        uid, other, path = mentioned
        return Shadowing(str(tool.get("name")), "references-other-upstream", uid, other, path)
    return None


def _server_reference(
    tool: Mapping[str, Any], upstream: str, catalog: Mapping[str, Sequence[Mapping[str, Any]]]
) -> Shadowing | None:
    """A description that names another upstream itself ("the payments server", "im
    GitHub-Server") and that the learned scorer rates as orders aimed at the model: an order
    about another server's tools without naming one of them."""
    others = [uid for uid in catalog if uid != upstream and len(uid) >= SERVER_NAME_MIN]
    if not others:
        return None
    try:
        texts = [t for t in definition_texts(tool) if not t.is_name]
    except StructureLimit:
        return None
    for text in texts:
        for uid in others:
            if _server_word(uid).search(text.text) and _directive(tool):
                return Shadowing(str(tool.get("name")), "references-other-upstream", uid, "*",
                                 text.path)  # fmt: skip
    return None


SERVER_NAME_MIN = 3  # shorter upstream ids ("fx") are too common as letters in prose


@functools.lru_cache(maxsize=1024)
def _server_word(uid: str) -> re.Pattern[str]:
    """An upstream id as a word of prose, with `-`, `_` or a space between its parts."""
    parts = [re.escape(p) for p in re.split(r"[-_. ]+", uid) if p]
    return re.compile(r"(?<![\w-])" + r"[-_ ]?".join(parts) + r"(?![\w])", re.IGNORECASE)


def _directive(tool: Mapping[str, Any]) -> bool:
    """The learned scorer rates the definition as orders aimed at the model."""
    from mcpward.guards.detection import directive_model
    from mcpward.guards.detection.definition_directive import directive_score

    model = directive_model.load_model("definition")
    return directive_score(tool).probability >= model.threshold


class ToolShadowingGuard(Guard):
    """Compares this upstream's list with the catalog of every other upstream."""

    kind = "tool_shadowing"
    hides_listed_items = True
    # A call may wait for the first read of another upstream (`on_tool_invoke`); every other
    # verdict is given at once (`decide_now`).
    awaits_io = True
    reads_contracts = True  # a call is judged against what its connection lists right now
    Options = ToolShadowingOptions

    def __init__(self, spec: GuardSpec, options: ToolShadowingOptions) -> None:
        super().__init__(spec, options)
        self._catalog: CatalogView | None = None

    async def attach(self, services: GatewayServices) -> None:
        self._catalog = services.catalog
        if len(services.catalog.upstream_ids()) < 2:  # nothing to compare a call with
            self.phases = self.phases - {Phase.TOOL_INVOKE}

    def warm(self) -> None:
        compile_pending()  # this kind's rule sets, off the event loop

    def _full_catalog(self, ctx: GuardContext) -> dict[str, Sequence[Mapping[str, Any]]]:
        """ctx.catalog, completed from the live catalog for upstreams it does not hold yet."""
        catalog: dict[str, Sequence[Mapping[str, Any]]] = dict(ctx.catalog)
        if self._catalog is not None:
            for uid in self._catalog.upstream_ids():
                if uid not in catalog:
                    snap = self._catalog.snapshot(uid)
                    if snap is not None:
                        catalog[uid] = snap.tools
        return catalog

    def decide_now(self, subject: Subject, ctx: GuardContext) -> Decision | None:
        """The verdict on a list, or on a call unless another upstream is still unread."""
        if subject.phase is Phase.TOOLS_LIST:
            return self._judge_list(subject, ctx)
        if subject.phase is Phase.TOOL_INVOKE and not self._unread(ctx):
            return self._judge_call(subject, ctx)
        return None

    def _unread(self, ctx: GuardContext) -> list[str]:
        """The other upstreams whose tools the gateway has never read, when this call is judged
        at all (a session reads every upstream once it has opened them, in the background: a
        call may come first)."""
        if (
            self.options.action != "drop"
            or ctx.contracts is None
            or len(ctx.upstream_order) < 2
            or self._catalog is None
        ):
            return []
        return [
            uid
            for uid in ctx.upstream_order
            if uid != ctx.server_name
            and uid not in ctx.catalog
            and self._catalog.snapshot(uid) is None
        ]

    async def _read_unread(self, unread: Sequence[str]) -> None:
        """Wait for the first read of those upstreams (joining a read under way), for at most
        half this guard's timeout: one still unread then is judged as a list that could not
        read it would (it lists nothing to shadow), not failed closed on."""
        catalog = self._catalog
        if catalog is None or not unread:
            return
        reads = asyncio.gather(*(catalog.refresh(uid) for uid in unread), return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(reads, self.spec.timeout_ms / 2000.0)

    async def on_tools_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        return self._judge_list(subject, ctx)

    def _judge_list(self, subject: Subject, ctx: GuardContext) -> Decision:
        tools = subject.payload if isinstance(subject.payload, list) else []
        catalog = self._full_catalog(ctx)
        order = list(ctx.upstream_order) or sorted(catalog)
        found = find_shadowing(ctx.server_name, tools, catalog, order, self.options)
        if not found:
            return Allow()
        evidence = {
            "upstream": ctx.server_name,
            "action": self.options.action,
            "shadowing": [s.describe() for s in found],
            "counts": {
                reason: sum(1 for s in found if s.reason == reason)
                for reason in sorted({s.reason for s in found})
            },
        }
        if self.options.action == "warn":
            names = ", ".join(
                f"{s.tool} ({s.reason} {s.other_upstream}/{s.other_tool})" for s in found
            )
            return Modify(
                AddWarning(f"tools of {ctx.server_name!r} shadow others: {names}"), evidence
            )
        dropped = {s.tool for s in found}
        return Modify(ReplaceTools([t for t in tools if t.get("name") not in dropped]), evidence)

    async def on_tool_invoke(self, subject: Subject, ctx: GuardContext) -> Decision:
        await self._read_unread(self._unread(ctx))
        return self._judge_call(subject, ctx)

    def _judge_call(self, subject: Subject, ctx: GuardContext) -> Decision:
        """Deny a call to a tool this guard drops from its connection's current list, judged
        against the other upstreams' lists as they are now (kept with this read of the list
        until one of theirs is replaced)."""
        if self.options.action != "drop" or ctx.contracts is None or len(ctx.upstream_order) < 2:
            return Allow()
        snap = ctx.contracts.snapshot
        if snap is None:
            return lists_unreadable("tool", ctx.server_name)
        catalog = self._full_catalog(ctx)
        others = tuple((uid, catalog[uid]) for uid in sorted(catalog) if uid != ctx.server_name)
        lists = ((ctx.server_name, snap.tools), *others)
        cached = snap.derived.get(f"tool_shadowing:{self.id}")
        if cached is not None and _same_lists(cached[0], lists):
            found: dict[str, Shadowing] = cached[1]
        else:
            catalog[ctx.server_name] = snap.tools
            order = list(ctx.upstream_order) or sorted(catalog)
            shadowing = find_shadowing(ctx.server_name, snap.tools, catalog, order, self.options)
            found = {s.tool: s for s in shadowing}
            snap.derived[f"tool_shadowing:{self.id}"] = (lists, found)
        hit = found.get(subject.name or "")
        if hit is None:
            return Allow()
        return Deny(
            code="shadowing_item",
            message=f"tool {hit.tool!r} of upstream {ctx.server_name!r} shadows "
            f"{hit.other_upstream}/{hit.other_tool} ({hit.reason}); it is not listed and cannot "
            "be called",
            details={"reason": hit.reason},
            evidence={"upstream": ctx.server_name, "action": "drop", "shadowing": [hit.describe()]},
        )


def _same_lists(
    cached: tuple[tuple[str, Sequence[Mapping[str, Any]]], ...],
    now: tuple[tuple[str, Sequence[Mapping[str, Any]]], ...],
) -> bool:
    """The lists (this upstream's, then the others') are the very objects a verdict was computed
    from (a list is replaced, never changed, when an upstream is read again)."""
    return len(cached) == len(now) and all(
        a[0] == b[0] and a[1] is b[1] for a, b in zip(cached, now, strict=True)
    )
