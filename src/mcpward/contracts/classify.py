"""The drift classifier: a pure function from (pinned, live) contracts to a list of changes.

Every field of a definition is compared; a field nobody modelled still yields a named kind, so a
hash mismatch never ends in "changed, don't know how".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpward.contracts.extract import ContractMap
from mcpward.contracts.markers import MarkerScan, new_markers
from mcpward.contracts.model import ItemKind
from mcpward.contracts.schema_diff import clip_value, diff_schema, json_equal
from mcpward.contracts.taxonomy import Change, ChangeKind, same_words

K = ChangeKind

# inner output-schema kinds that are tooling churn, not a change of what the tool returns
_OUTPUT_CHURN = frozenset(
    {
        K.ADDITIONAL_PROPERTIES_CLOSED,
        K.SCHEMA_DIALECT_CHANGED,
        K.SCHEMA_ANNOTATION_CHANGED,
        K.SCHEMA_EQUIVALENT_FORM,
        K.DESCRIPTION_REFORMATTED,
    }
)
# inner output-schema kinds reported as they are
_OUTPUT_KEEP = frozenset({K.PARAM_DESCRIPTION_CHANGED, K.DEEP_SCHEMA_UNDIFFABLE})

_ADDED = {
    ItemKind.TOOL: K.TOOL_ADDED,
    ItemKind.PROMPT: K.PROMPT_ADDED,
    ItemKind.RESOURCE: K.RESOURCE_ADDED,
    ItemKind.RESOURCE_TEMPLATE: K.RESOURCE_ADDED,
    ItemKind.SERVER: K.INSTRUCTIONS_CHANGED,
}
_REMOVED = {
    ItemKind.TOOL: K.TOOL_REMOVED,
    ItemKind.PROMPT: K.PROMPT_REMOVED,
    ItemKind.RESOURCE: K.RESOURCE_REMOVED,
    ItemKind.RESOURCE_TEMPLATE: K.RESOURCE_REMOVED,
    ItemKind.SERVER: K.INSTRUCTIONS_CHANGED,
}


_ARGUMENT_FIELD_KIND = {
    "description": K.PROMPT_ARGUMENT_DESCRIPTION_CHANGED,
    "title": K.PROMPT_TITLE_CHANGED,
}


def _get(d: Mapping[str, Any], key: str) -> tuple[bool, Any]:
    return (key in d, d.get(key))


def _common_fields(
    old: Mapping[str, Any], new: Mapping[str, Any], handled: set[str]
) -> list[Change]:
    """icons, execution, _meta and any field not handled by the item's own rules."""
    out: list[Change] = []
    for key in sorted((set(old) | set(new)) - handled):
        a, b = old.get(key), new.get(key)
        if (key in old) == (key in new) and json_equal(a, b):
            continue
        if key == "icons":
            out.append(Change(K.ICONS_CHANGED, key, "icons changed", clip_value(a), clip_value(b)))
        elif key == "execution":
            out.append(
                Change(
                    K.EXECUTION_CHANGED,
                    key,
                    "execution settings changed",
                    clip_value(a),
                    clip_value(b),
                )
            )
        elif key == "_meta":
            out.append(Change(K.META_CHANGED, key, "_meta changed", clip_value(a), clip_value(b)))
        else:
            out.append(
                Change(
                    K.UNKNOWN_FIELD_CHANGED,
                    key,
                    f"field {key!r} changed",
                    clip_value(a),
                    clip_value(b),
                )
            )
    return out


def _text(
    kind: ChangeKind, key: str, old: Mapping[str, Any], new: Mapping[str, Any], what: str
) -> list[Change]:
    a, b = old.get(key), new.get(key)
    if (key in old) == (key in new) and json_equal(a, b):
        return []
    if key == "description" and same_words(a, b):
        kind, what = K.DESCRIPTION_REFORMATTED, "whitespace only"
    return [Change(kind, key, what, clip_value(a), clip_value(b))]


def _is_true(annotations: Mapping[str, Any], hint: str, default: bool) -> bool:
    value = annotations.get(hint, default)
    return value if isinstance(value, bool) else default


def _annotations(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """Hints use the spec's defaults when absent: readOnly false, destructive true (only
    meaningful when not read-only), idempotent false, openWorld true."""
    if json_equal(old.get("annotations"), new.get("annotations")):
        return []
    raw_o, raw_n = old.get("annotations"), new.get("annotations")
    ao: Mapping[str, Any] = raw_o if isinstance(raw_o, Mapping) else {}
    an: Mapping[str, Any] = raw_n if isinstance(raw_n, Mapping) else {}
    out: list[Change] = []
    covered: set[str] = set()
    ro_o, ro_n = _is_true(ao, "readOnlyHint", False), _is_true(an, "readOnlyHint", False)
    destr_o = not ro_o and _is_true(ao, "destructiveHint", True)
    destr_n = not ro_n and _is_true(an, "destructiveHint", True)
    if (ro_o and not ro_n) or (destr_n and not destr_o):
        why = "read-only hint dropped" if ro_o and not ro_n else "now declares itself destructive"
        out.append(Change(K.ANNOTATION_FLIP_TO_DESTRUCTIVE, "annotations", why, dict(ao), dict(an)))
        covered |= {"readOnlyHint", "destructiveHint"}
    if _is_true(an, "openWorldHint", True) and not _is_true(ao, "openWorldHint", True):
        out.append(
            Change(
                K.ANNOTATION_FLIP_TO_OPEN_WORLD,
                "annotations.openWorldHint",
                "now declares it reaches an open world",
                ao.get("openWorldHint"),
                an.get("openWorldHint"),
            )
        )
        covered.add("openWorldHint")
    for hint in sorted(set(ao) | set(an)):
        a, b = ao.get(hint), an.get(hint)
        if hint in covered or ((hint in ao) == (hint in an) and json_equal(a, b)):
            continue
        if hint == "title":
            out.append(Change(K.TITLE_CHANGED, "annotations.title", "display title changed", a, b))
        else:
            out.append(
                Change(
                    K.ANNOTATION_HINT_CHANGED,
                    f"annotations.{hint}",
                    f"{hint} changed",
                    clip_value(a),
                    clip_value(b),
                )
            )
    if not out:
        out.append(
            Change(
                K.ANNOTATION_HINT_CHANGED,
                "annotations",
                "annotations reshaped",
                clip_value(raw_o),
                clip_value(raw_n),
            )
        )
    return out


def _output_schema(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    has_o, so = _get(old, "outputSchema")
    has_n, sn = _get(new, "outputSchema")
    if not has_o and not has_n:
        return []
    if not has_o:
        return [
            Change(
                K.OUTPUT_SCHEMA_ADDED,
                "outputSchema",
                "output schema published",
                None,
                clip_value(sn),
            )
        ]
    if not has_n:
        return [
            Change(
                K.OUTPUT_SCHEMA_REMOVED,
                "outputSchema",
                "output schema withdrawn",
                clip_value(so),
                None,
            )
        ]
    out: list[Change] = []
    for inner in diff_schema(so, sn, "outputSchema"):
        if inner.kind in _OUTPUT_CHURN:
            out.append(
                Change(
                    K.OUTPUT_SCHEMA_CHURN,
                    inner.path,
                    f"{inner.kind.value}: {inner.detail}",
                    inner.before,
                    inner.after,
                )
            )
        elif inner.kind in _OUTPUT_KEEP:
            out.append(inner)
        else:
            out.append(
                Change(
                    K.OUTPUT_SCHEMA_CHANGED,
                    inner.path,
                    f"{inner.kind.value}: {inner.detail}",
                    inner.before,
                    inner.after,
                )
            )
    return out


def _marker_changes(old: Any, new: Any, scan: MarkerScan | None) -> list[Change]:
    if scan is None:
        return []
    if isinstance(new, str):  # the server instructions: scanned as the field they are
        old, new = ({"description": old} if old is not None else None), {"description": new}
    return [
        Change(
            K.INJECTION_MARKER_ADDED,
            paths[0],
            f"marker {family!r} newly present",
            extra={"paths": paths[:10]},
        )
        for family, paths in sorted(new_markers(old, new, scan).items())
    ]


def classify_tool(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    out: list[Change] = []
    out += _text(K.TITLE_CHANGED, "title", old, new, "title changed")
    out += _text(K.DESCRIPTION_ONLY, "description", old, new, "description rewritten")
    out += diff_schema(old.get("inputSchema"), new.get("inputSchema"), "inputSchema")
    out += _output_schema(old, new)
    out += _annotations(old, new)
    handled = {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}
    out += _common_fields(old, new, handled)
    return out


def _arguments(value: Any) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    if isinstance(value, list):
        for arg in value:
            if isinstance(arg, Mapping) and isinstance(arg.get("name"), str):
                out.setdefault(arg["name"], arg)
    return out


def classify_prompt(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    out: list[Change] = []
    out += _text(K.PROMPT_TITLE_CHANGED, "title", old, new, "title changed")
    out += _text(K.PROMPT_DESCRIPTION_CHANGED, "description", old, new, "description rewritten")
    ao, an = _arguments(old.get("arguments")), _arguments(new.get("arguments"))
    for name in sorted(set(an) - set(ao)):
        required = an[name].get("required") is True
        kind = K.PROMPT_ARGUMENT_ADDED_REQUIRED if required else K.PROMPT_ARGUMENT_ADDED_OPTIONAL
        out.append(Change(kind, f"arguments.{name}", name, None, dict(an[name])))
    for name in sorted(set(ao) - set(an)):
        out.append(
            Change(K.PROMPT_ARGUMENT_REMOVED, f"arguments.{name}", name, dict(ao[name]), None)
        )
    for name in sorted(set(ao) & set(an)):
        a, b = ao[name], an[name]
        req_a, req_b = a.get("required") is True, b.get("required") is True
        if req_b and not req_a:
            out.append(Change(K.PROMPT_ARGUMENT_BECAME_REQUIRED, f"arguments.{name}", name))
        elif req_a and not req_b:
            out.append(Change(K.PROMPT_ARGUMENT_BECAME_OPTIONAL, f"arguments.{name}", name))
        for key in sorted((set(a) | set(b)) - {"name", "required"}):
            if (key in a) == (key in b) and json_equal(a.get(key), b.get(key)):
                continue
            kind = _ARGUMENT_FIELD_KIND.get(key, K.UNKNOWN_FIELD_CHANGED)
            if key == "description" and same_words(a.get(key), b.get(key)):
                kind = K.DESCRIPTION_REFORMATTED
            out.append(
                Change(
                    kind,
                    f"arguments.{name}.{key}",
                    f"{key} changed",
                    clip_value(a.get(key)),
                    clip_value(b.get(key)),
                )
            )
    if not json_equal(old.get("arguments"), new.get("arguments")) and not any(
        c.path.startswith("arguments") for c in out
    ):
        out.append(Change(K.UNKNOWN_FIELD_CHANGED, "arguments", "argument list reshaped"))
    out += _common_fields(old, new, {"name", "title", "description", "arguments"})
    return out


def classify_resource(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    out: list[Change] = []
    out += _text(K.RESOURCE_TITLE_CHANGED, "title", old, new, "title changed")
    out += _text(K.RESOURCE_NAME_CHANGED, "name", old, new, "name changed")
    out += _text(K.RESOURCE_DESCRIPTION_CHANGED, "description", old, new, "description rewritten")
    out += _text(K.RESOURCE_MIME_TYPE_CHANGED, "mimeType", old, new, "MIME type changed")
    out += _text(K.RESOURCE_ANNOTATIONS_CHANGED, "annotations", old, new, "annotations changed")
    out += _text(K.RESOURCE_ANNOTATIONS_CHANGED, "size", old, new, "size changed")
    handled = {
        "uri",
        "uriTemplate",
        "name",
        "title",
        "description",
        "mimeType",
        "annotations",
        "size",
    }
    out += _common_fields(old, new, handled)
    return out


def classify_item(
    kind: ItemKind, old: Any, new: Any, markers: MarkerScan | None = None
) -> list[Change]:
    """All changes of one item. `old` None = newly seen, `new` None = gone. With `markers`,
    marker families newly present anywhere in the definition are reported too."""
    if old is None and new is None:
        return []
    if old is None:
        return [
            Change(_ADDED[kind], "", "first seen after the baseline"),
            *_marker_changes(None, new, markers),
        ]
    if new is None:
        return [Change(_REMOVED[kind], "", "no longer listed")]
    if json_equal(old, new):
        return []
    if kind is ItemKind.SERVER or not isinstance(old, Mapping) or not isinstance(new, Mapping):
        if kind is not ItemKind.SERVER:
            what = K.UNKNOWN_FIELD_CHANGED
        else:
            what = K.DESCRIPTION_REFORMATTED if same_words(old, new) else K.INSTRUCTIONS_CHANGED
        changes = [Change(what, "", "text changed", clip_value(old), clip_value(new))]
    elif kind is ItemKind.TOOL:
        changes = classify_tool(old, new)
    elif kind is ItemKind.PROMPT:
        changes = classify_prompt(old, new)
    else:
        changes = classify_resource(old, new)
    changes += _marker_changes(old, new, markers)
    if not changes:
        # unreachable if the rules above are complete; fail safe rather than pass
        changes.append(Change(K.DEEP_SCHEMA_UNDIFFABLE, "", "difference not located"))
    return changes


def classify_maps(
    old: ContractMap, new: ContractMap, markers: MarkerScan | None = None
) -> dict[tuple[ItemKind, str], list[Change]]:
    """Changes per item across two whole views (only items that differ appear)."""
    out: dict[tuple[ItemKind, str], list[Change]] = {}
    for key in sorted(set(old) | set(new), key=lambda k: (k[0].value, k[1])):
        changes = classify_item(key[0], old.get(key), new.get(key), markers)
        if changes:
            out[key] = changes
    return out
