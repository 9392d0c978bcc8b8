"""The `guards:` section: the built-in defaults plus (or, said explicitly, instead of) the
configured guards. An entry whose id is a default's adjusts that default field by field.

    guards:                        # a list: the defaults stay on, these are added or adjust one
      - kind: tool_filter ...
    guards:                        # said explicitly: only these guards run
      replace_defaults: true
      list: [...]
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from pydantic import Field, TypeAdapter, ValidationError

from mcpward.config.upstreams import Strict
from mcpward.pipeline.phases import Phase
from mcpward.pipeline.spec import GuardSpec


class GuardEntry(GuardSpec):
    """A configured guard. `kind` and `runs_on` may be left out when the entry adjusts a
    built-in default (same id); every field given replaces the default's, `config` as a whole."""

    kind: str | None = Field(  # type: ignore[assignment]
        default=None,
        description="Guard kind, e.g. tool_filter, tool_poisoning, rug_pull, wasm (may be left "
        "out when the id names a built-in default, which this entry then adjusts).",
    )
    runs_on: list[Phase] | None = Field(  # type: ignore[assignment]
        default=None,
        description="Non-empty list of phases this guard runs at (default: the adjusted "
        "built-in guard's).",
    )


class GuardsSection(Strict):
    """The explicit form of `guards:`, needed only to turn the built-in defaults off."""

    replace_defaults: bool = Field(
        default=False,
        description="true: only the guards in `list` run, the built-in defaults (pins and "
        "HOLDs, content guards) are off. false: the defaults plus `list`.",
    )
    entries: list[GuardEntry] = Field(default_factory=list, alias="list")


GuardsConfig = list[GuardEntry] | GuardsSection
DEFAULT_WHERE = "guards (built-in default)"


@dataclass(frozen=True)
class ResolvedGuards:
    """The guard pipeline a config asks for, and where each spec came from."""

    specs: list[GuardSpec]
    where: list[str]  # per spec: "guards[i]" or "guards (built-in default)"
    replaced_defaults: bool
    problems: list[tuple[str, str]]  # (location, message)


def guard_entries(section: GuardsConfig | None) -> tuple[list[GuardEntry], bool]:
    """The entries and whether they replace the defaults."""
    if section is None:
        return [], False
    if isinstance(section, GuardsSection):
        return list(section.entries), section.replace_defaults
    return list(section), False


def _unknown_kind(kind: str, known: list[str]) -> str:
    close = get_close_matches(kind, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown guard kind {kind!r}; known kinds: {', '.join(sorted(known))}{hint}"


def _entry_spec(
    entry: GuardEntry, default: GuardSpec | None, where: str, known: list[str]
) -> tuple[GuardSpec | None, list[tuple[str, str]]]:
    """One entry as a full spec: merged over the default it adjusts, else as written."""
    given = entry.model_dump(exclude_unset=True)
    problems: list[tuple[str, str]] = []
    if default is not None:
        if entry.kind is not None and entry.kind != default.kind:
            problems.append(
                (
                    f"{where}.id",
                    f"{default.id!r} is the id of the built-in {default.kind} guard; give this "
                    f"{entry.kind} guard another id, or set `replace_defaults: true` to drop the "
                    "defaults",
                )
            )
            return None, problems
        return GuardSpec.model_validate({**default.model_dump(), **given}), problems
    if entry.kind is None:
        hint = (
            "(or give the `id` of a built-in guard to adjust it: " + ", ".join(known) + ")"
            if known
            else "(`replace_defaults: true` drops the built-in guards: there is none to adjust)"
        )
        problems.append((f"{where}.kind", "required field is missing " + hint))
    elif entry.kind not in _known_kinds():
        problems.append((f"{where}.kind", _unknown_kind(entry.kind, _known_kinds())))
    if entry.runs_on is None:
        problems.append((f"{where}.runs_on", "required field is missing"))
    if problems:
        return None, problems
    return GuardSpec.model_validate(given), problems


def _known_kinds() -> list[str]:
    from mcpward.guards.kinds import BUILTIN_GUARDS

    return list(BUILTIN_GUARDS)


def resolve_guards(section: GuardsConfig | None) -> ResolvedGuards:
    """The defaults (each adjusted by a same-id entry) plus the other entries; or, with
    `replace_defaults`, the entries alone."""
    from mcpward.guards.defaults import default_guard_specs

    entries, replace = guard_entries(section)
    defaults = [] if replace else default_guard_specs()
    by_id = {spec.id or spec.kind: i for i, spec in enumerate(defaults)}
    default_ids = list(by_id)
    specs: list[GuardSpec] = list(defaults)
    where = [DEFAULT_WHERE] * len(defaults)
    problems: list[tuple[str, str]] = []
    for index, entry in enumerate(entries):
        here = f"guards[{index}]" if isinstance(section, list) else f"guards.list[{index}]"
        slot = by_id.get(entry.id or entry.kind or "")
        default = defaults[slot] if slot is not None else None
        try:
            spec, found = _entry_spec(entry, default, here, default_ids)
        except ValidationError as exc:  # a merged field the default's model refuses
            found = [(here, e["msg"]) for e in exc.errors(include_url=False)]
            spec = None
        problems += found
        if spec is None:
            continue
        if slot is not None and where[slot] != DEFAULT_WHERE:
            problems.append(
                (f"{here}.id", f"{where[slot]} already adjusts the built-in guard {spec.id!r}")
            )
        elif slot is not None:
            specs[slot], where[slot] = spec, here
        else:
            specs.append(spec)
            where.append(here)
    return ResolvedGuards(specs, where, replace, problems)


def parse_guards_section(raw: Any) -> GuardsConfig | None:
    """Validate the raw `guards:` value: pydantic's ValidationError, or ValueError when it is
    neither a list nor a mapping."""
    if raw is None:
        return None
    if isinstance(raw, list):
        return _ENTRIES.validate_python(raw)
    if isinstance(raw, dict):
        return GuardsSection.model_validate(raw)
    raise ValueError(
        "must be a list of guards (added to the built-in defaults) or a mapping "
        "{replace_defaults: true, list: [...]}"
    )


_ENTRIES: TypeAdapter[list[GuardEntry]] = TypeAdapter(list[GuardEntry])


def guards_schema(raw: Any) -> dict[str, Any]:
    """The JSON Schema the raw `guards:` value was validated against (for field suggestions)."""
    if isinstance(raw, dict):
        return GuardsSection.model_json_schema()
    return _ENTRIES.json_schema()


def unknown_kinds(raw: Any) -> list[tuple[str, str]]:
    """Unknown guard kinds in a raw `guards:` value that failed validation elsewhere, so that a
    misspelt kind is reported with the other problems instead of in a later round."""
    if isinstance(raw, dict):
        entries, prefix = raw.get("list"), "guards.list"
    else:
        entries, prefix = raw, "guards"
    if not isinstance(entries, list):
        return []
    known = _known_kinds()
    return [
        (f"{prefix}[{index}].kind", _unknown_kind(entry["kind"], known))
        for index, entry in enumerate(entries)
        if isinstance(entry, dict)
        and isinstance(entry.get("kind"), str)
        and entry["kind"] not in known
    ]
