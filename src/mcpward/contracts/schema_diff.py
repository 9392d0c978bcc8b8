"""Classify the difference between two JSON Schemas (a tool's input or output schema).

Pure and bounded: depth, node budget and `$ref` cycles end in deep-schema-undiffable, never in a
stack overflow or a silent pass. `$ref`s are resolved, so a rewritten `$defs` body is compared.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import orjson

from mcpward.contracts.taxonomy import Change, ChangeKind, same_words
from mcpward.protocol.canonical import canonical_bytes

MAX_DEPTH = 32  # nesting of schema nodes walked (refs count as a level)
MAX_NODES = 20_000  # schema node pairs compared per diff

K = ChangeKind

# keywords whose value is a bound: which direction narrows
_UPPER_BOUNDS = frozenset({"maxLength", "maxItems", "maxProperties", "maxContains"})
_LOWER_BOUNDS = frozenset({"minLength", "minItems", "minProperties", "minContains"})
# numeric range keywords are compared together, as one interval per side
_RANGE_KEYS = frozenset({"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"})
_ADDED_NARROWS = frozenset({"pattern", "format", "multipleOf", "contentEncoding"})
_ANNOTATIONS = frozenset(
    {
        "title",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "$vocabulary",
        "contentMediaType",
        "contentSchema",
        "discriminator",
    }
)
_BRANCH_LISTS = ("allOf", "anyOf", "oneOf")
_BRANCH_SINGLES = ("then", "else")
_DEFS = ("$defs", "definitions")
# handled by the object-level parameter analysis, not keyword by keyword
_PARAM_KEYWORDS = frozenset({"properties", "required", "dependentRequired"})


class _Stop(Exception):
    """The walk hit a bound; the diff is reported as undiffable."""


@dataclass(slots=True)
class _Side:
    root: Any
    defs_changed: bool = False


@dataclass(slots=True)
class _Walk:
    old: _Side
    new: _Side
    changes: list[Change] = field(default_factory=list)
    nodes: int = 0
    refs_active: set[tuple[str, str]] = field(default_factory=set)
    refs_seen: set[str] = field(default_factory=set)
    unresolved: bool = False
    touched: bool = False  # some difference was examined (even if judged equivalent)
    cyclic: bool = False

    def emit(
        self, kind: ChangeKind, path: str, detail: str = "", before: Any = None, after: Any = None
    ) -> None:
        self.changes.append(Change(kind, path, detail, clip_value(before), clip_value(after)))


def clip_value(value: Any, limit: int = 2000) -> Any:
    """Bound the before/after values kept for display; they are contract fragments."""
    if value is None:
        return None
    try:
        raw = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return "<unserialisable>"
    if len(raw) <= limit:
        return value
    return raw[:limit].decode("utf-8", "replace") + "…"


def json_equal(a: Any, b: Any) -> bool:
    """Equal as canonical JSON (so 1 == 1.0, true != 1, and NFC-equal strings are equal)."""
    try:
        if a is b:
            return True
        return canonical_bytes(a) == canonical_bytes(b)
    except (RecursionError, ValueError, TypeError):
        return False


def _contains_ref(value: Any) -> bool:
    try:
        return b'"$ref"' in orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return True


def _as_schema(value: Any) -> Any:
    """Boolean schemas as objects: true accepts anything, false accepts nothing."""
    if value is True:
        return {}
    if value is False:
        return {"not": {}}
    return value


def _pointer(root: Any, ref: str) -> Any:
    """Resolve a local `#/...` JSON pointer; None if it does not resolve."""
    if not ref.startswith("#"):
        return None
    frag = unquote(ref[1:])
    if frag == "":
        return root
    if not frag.startswith("/"):
        return None  # an anchor name; not resolved
    node = root
    for raw in frag[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _type_set(value: Any) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    return frozenset({repr(value)})


def _covers(new: frozenset[str], old: frozenset[str]) -> bool:
    """Does the new type set accept everything the old one did (integer is a number)?"""
    return all(t in new or (t == "integer" and "number" in new) for t in old)


def _canon_list(values: list[Any]) -> list[bytes]:
    out = []
    for v in values:
        try:
            out.append(orjson.dumps(v, option=orjson.OPT_SORT_KEYS))
        except (TypeError, orjson.JSONEncodeError):
            out.append(repr(v).encode())
    return out


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


@dataclass(slots=True)
class _ObjectView:
    """Where each parameter of an object schema is declared, and which names are required.

    Branches of allOf/anyOf/oneOf/if-then-else and dependentSchemas are folded in, and their
    `required` sets unioned: a parameter required in any branch counts as required (fail safe).
    """

    occurrences: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)


class SchemaDiff:
    """One diff between two schemas. Use `diff_schema()`."""

    def __init__(self, old: Any, new: Any, where: str) -> None:
        self.where = where
        old_defs = _defs_of(old)
        new_defs = _defs_of(new)
        defs_changed = not json_equal(old_defs, new_defs)
        self.w = _Walk(_Side(old, defs_changed), _Side(new, defs_changed))
        self.old, self.new = old, new
        self.old_defs, self.new_defs = old_defs, new_defs

    def run(self) -> list[Change]:
        w = self.w
        try:
            self._node(self.old, self.new, self.where, 0, params=True)
            self._unvisited_defs()
        except _Stop as stop:
            w.emit(K.DEEP_SCHEMA_UNDIFFABLE, self.where, str(stop))
        except RecursionError:
            w.emit(K.DEEP_SCHEMA_UNDIFFABLE, self.where, "schema too deep to compare")
        if w.unresolved and w.old.defs_changed:
            w.emit(
                K.DEEP_SCHEMA_UNDIFFABLE,
                self.where,
                "a $ref could not be resolved and $defs changed",
            )
        if not w.changes and not json_equal(self.old, self.new):
            if w.touched:  # every difference was examined and found to mean the same
                w.emit(K.SCHEMA_EQUIVALENT_FORM, self.where, "same constraints, other form")
            else:
                w.emit(K.DEEP_SCHEMA_UNDIFFABLE, self.where, "difference not located")
        return _dedupe(w.changes)

    # -- walking -------------------------------------------------------------------------------

    def _budget(self, depth: int) -> None:
        w = self.w
        w.nodes += 1
        if depth > MAX_DEPTH:
            raise _Stop(f"schema nesting exceeds {MAX_DEPTH} levels")
        if w.nodes > MAX_NODES:
            raise _Stop(f"schema exceeds {MAX_NODES} compared nodes")

    def _same(self, o: Any, n: Any) -> bool:
        """Equal subtrees can be skipped, unless a `$ref` inside may point at a changed def."""
        if not json_equal(o, n):
            return False
        return not (self.w.old.defs_changed and _contains_ref(o))

    def _node(self, o: Any, n: Any, path: str, depth: int, *, params: bool) -> None:
        if self._same(o, n):
            return
        self._budget(depth)
        o, n = _as_schema(o), _as_schema(n)
        if not isinstance(o, Mapping) or not isinstance(n, Mapping):
            if not json_equal(o, n):
                self.w.emit(K.SCHEMA_KEYWORD_CHANGED, path, "schema is not an object", o, n)
            return
        if "$ref" in o or "$ref" in n:
            self._ref(o, n, path, depth, params=params)
            return
        if params:
            self._params(o, n, path, depth)
        self._keywords(o, n, path, depth)

    def _ref(
        self, o: Mapping[str, Any], n: Mapping[str, Any], path: str, depth: int, *, params: bool
    ) -> None:
        w = self.w
        ro, rn = o.get("$ref"), n.get("$ref")
        to = self._resolve(self.old, ro) if ro is not None else o
        tn = self._resolve(self.new, rn) if rn is not None else n
        if ro != rn:
            w.touched = True
        if to is None or tn is None:
            w.unresolved = True
            if ro != rn:
                w.emit(K.SCHEMA_KEYWORD_CHANGED, f"{path}.$ref", "reference changed", ro, rn)
            # compare what sits beside the unresolved reference
            so = {k: v for k, v in o.items() if k != "$ref"}
            sn = {k: v for k, v in n.items() if k != "$ref"}
            if params:
                self._params(so, sn, path, depth)
            self._keywords(so, sn, path, depth)
            return
        if ro != rn and ro is not None and rn is not None:
            # a renamed definition; its body is compared below
            w.emit(K.SCHEMA_ANNOTATION_CHANGED, f"{path}.$ref", "reference renamed", ro, rn)
        pair = (str(ro if ro is not None else id(o)), str(rn if rn is not None else id(n)))
        if pair in w.refs_active:
            # the cycle's first pass is being compared already; going round again proves nothing
            if not w.cyclic:
                w.cyclic = True
                w.emit(K.DEEP_SCHEMA_UNDIFFABLE, path, "cyclic $ref")
            return
        for ref in (ro, rn):
            if isinstance(ref, str):
                w.refs_seen.add(ref)
        merged_o = _merge_ref(to, o) if ro is not None else o
        merged_n = _merge_ref(tn, n) if rn is not None else n
        w.refs_active.add(pair)
        try:
            self._node(merged_o, merged_n, path, depth + 1, params=params)
        finally:
            w.refs_active.discard(pair)

    def _resolve(self, root: Any, ref: Any) -> Any:
        if not isinstance(ref, str):
            return None
        return _as_schema(_pointer(root, ref))

    # -- parameters ----------------------------------------------------------------------------

    def _view(
        self, schema: Mapping[str, Any], root: Any, path: str, depth: int, view: _ObjectView
    ) -> None:
        if depth > MAX_DEPTH:
            raise _Stop(f"schema nesting exceeds {MAX_DEPTH} levels")
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for name, sub in props.items():
                view.occurrences.setdefault(str(name), []).append(
                    (f"{path}.properties.{name}", sub)
                )
        req = schema.get("required")
        if isinstance(req, list):
            view.required.update(str(r) for r in req if isinstance(r, str))
        dep_req = schema.get("dependentRequired")
        if isinstance(dep_req, Mapping):
            for names in dep_req.values():
                if isinstance(names, list):
                    view.required.update(str(r) for r in names if isinstance(r, str))
        for key in _BRANCH_LISTS:
            branches = schema.get(key)
            if isinstance(branches, list):
                for i, branch in enumerate(branches):
                    self._view_branch(branch, root, f"{path}.{key}[{i}]", depth, view)
        for key in _BRANCH_SINGLES:
            if key in schema:
                self._view_branch(schema[key], root, f"{path}.{key}", depth, view)
        dep = schema.get("dependentSchemas")
        if isinstance(dep, Mapping):
            for name, branch in dep.items():
                self._view_branch(branch, root, f"{path}.dependentSchemas.{name}", depth, view)

    def _view_branch(
        self, branch: Any, root: Any, path: str, depth: int, view: _ObjectView
    ) -> None:
        branch = _as_schema(branch)
        if not isinstance(branch, Mapping):
            return
        seen: set[str] = set()
        while "$ref" in branch:
            ref = branch["$ref"]
            if not isinstance(ref, str) or ref in seen:
                return
            seen.add(ref)
            self.w.refs_seen.add(ref)
            target = _as_schema(_pointer(root, ref))
            if not isinstance(target, Mapping):
                self.w.unresolved = True
                return
            branch = _merge_ref(target, branch)
        self._view(branch, root, path, depth + 1, view)

    def _params(self, o: Mapping[str, Any], n: Mapping[str, Any], path: str, depth: int) -> None:
        vo, vn = _ObjectView(), _ObjectView()
        self._view(o, self.old, path, depth, vo)
        self._view(n, self.new, path, depth, vn)
        names_o = set(vo.occurrences) | vo.required
        names_n = set(vn.occurrences) | vn.required
        if not names_o and not names_n:
            return
        w = self.w
        w.touched = True
        for name in sorted(names_n - names_o):
            where = f"{path}.properties.{name}"
            after = vn.occurrences.get(name, [(where, None)])[0][1]
            if name in vn.required:
                w.emit(K.ADDED_REQUIRED_PARAM, where, name, None, after)
            else:
                w.emit(K.ADDED_OPTIONAL_PARAM, where, name, None, after)
        for name in sorted(names_o - names_n):
            before = vo.occurrences.get(name, [("", None)])[0][1]
            w.emit(K.REMOVED_PARAM, f"{path}.properties.{name}", name, before, None)
        for name in sorted(names_o & names_n):
            where = f"{path}.properties.{name}"
            if name in vn.required and name not in vo.required:
                w.emit(K.REQUIRED_SET_EXPANDED, where, name)
            elif name in vo.required and name not in vn.required:
                w.emit(K.REQUIRED_SET_REDUCED, where, name)
            self._occurrences(
                vo.occurrences.get(name, []), vn.occurrences.get(name, []), where, depth
            )

    def _occurrences(
        self, olds: list[tuple[str, Any]], news: list[tuple[str, Any]], where: str, depth: int
    ) -> None:
        by_path_n = dict(news)
        left_o, left_n = [], []
        for p, sub in olds:
            if p in by_path_n:
                self._node(sub, by_path_n.pop(p), p, depth + 1, params=True)
            else:
                left_o.append((p, sub))
        left_n = [(p, s) for p, s in news if p in by_path_n]
        for (po, so), (_, sn) in zip(left_o, left_n, strict=False):
            self._node(so, sn, po, depth + 1, params=True)
        if len(left_n) > len(left_o):
            self.w.emit(K.CONSTRAINT_NARROWED, where, "parameter gained another declaration")
        elif len(left_o) > len(left_n):
            self.w.emit(K.CONSTRAINT_RELAXED, where, "parameter lost a declaration")

    # -- keywords ------------------------------------------------------------------------------

    def _keywords(self, o: Mapping[str, Any], n: Mapping[str, Any], path: str, depth: int) -> None:
        if any(not json_equal(o.get(k), n.get(k)) or ((k in o) != (k in n)) for k in _RANGE_KEYS):
            self.w.touched = True
            self._range(o, n, path)
        for key in _union_keys(o, n):
            if key in _PARAM_KEYWORDS or key in _DEFS or key in _RANGE_KEYS:
                continue
            a, b = o.get(key), n.get(key)
            has_a, has_b = key in o, key in n
            if has_a and has_b and self._same(a, b):
                continue
            self._keyword(key, a, b, has_a, has_b, f"{path}.{key}", path, depth)

    def _keyword(
        self, key: str, a: Any, b: Any, has_a: bool, has_b: bool, kpath: str, path: str, depth: int
    ) -> None:
        w = self.w
        w.touched = True
        if key == "type":
            self._type(a, b, kpath)
        elif key == "enum":
            self._enum(a, b, has_a, has_b, kpath)
        elif key == "const":
            if not has_a:
                w.emit(K.CONSTRAINT_NARROWED, kpath, "const added", None, b)
            elif not has_b:
                w.emit(K.CONSTRAINT_RELAXED, kpath, "const removed", a, None)
            else:
                w.emit(K.ENUM_VALUES_REMOVED, kpath, "const changed", a, b)
        elif key in _UPPER_BOUNDS or key in _LOWER_BOUNDS:
            self._bound(key, a, b, has_a, has_b, kpath)
        elif key in _ADDED_NARROWS:
            if has_b:
                w.emit(
                    K.CONSTRAINT_NARROWED, kpath, f"{key} {'changed' if has_a else 'added'}", a, b
                )
            else:
                w.emit(K.CONSTRAINT_RELAXED, kpath, f"{key} removed", a, None)
        elif key == "uniqueItems":
            if b is True and a is not True:
                w.emit(K.CONSTRAINT_NARROWED, kpath, "uniqueItems required", a, b)
            elif a is True and b is not True:
                w.emit(K.CONSTRAINT_RELAXED, kpath, "uniqueItems dropped", a, b)
        elif key in ("additionalProperties", "unevaluatedProperties"):
            self._additional(key, a, b, has_a, has_b, kpath, depth)
        elif key in ("items", "additionalItems", "unevaluatedItems", "contains", "propertyNames"):
            self._subschema(a, b, has_a, has_b, kpath, depth)
        elif key == "prefixItems":
            self._tuple(a, b, kpath, depth)
        elif key == "patternProperties":
            self._pattern_properties(a, b, kpath, depth)
        elif key in _BRANCH_LISTS:
            self._branches(key, a, b, kpath, depth)
        elif key in _BRANCH_SINGLES or key == "dependentSchemas":
            self._branch_single(key, a, b, has_a, has_b, kpath, depth)
        elif key == "description":
            if not has_b:
                w.emit(K.SCHEMA_ANNOTATION_CHANGED, kpath, "description removed", a, None)
            elif same_words(a, b):
                w.emit(K.DESCRIPTION_REFORMATTED, kpath, "whitespace only", a, b)
            else:
                w.emit(K.PARAM_DESCRIPTION_CHANGED, kpath, "description rewritten", a, b)
        elif key == "default":
            if has_a and has_b:
                w.emit(K.DEFAULT_CHANGED, kpath, "default value changed", a, b)
            else:
                w.emit(
                    K.SCHEMA_ANNOTATION_CHANGED,
                    kpath,
                    f"default {'added' if has_b else 'removed'}",
                    a,
                    b,
                )
        elif key == "$schema":
            w.emit(K.SCHEMA_DIALECT_CHANGED, kpath, "JSON Schema dialect changed", a, b)
        elif key in _ANNOTATIONS or key.startswith("x-"):
            w.emit(K.SCHEMA_ANNOTATION_CHANGED, kpath, f"{key} changed", a, b)
        else:
            # `not`, `if`, and any keyword we do not model: the direction is unknown
            w.emit(K.SCHEMA_KEYWORD_CHANGED, kpath, f"{key} changed", a, b)
        del path

    def _type(self, a: Any, b: Any, kpath: str) -> None:
        ta, tb = _type_set(a), _type_set(b)
        if ta == tb:
            return  # same set, other order
        if tb is None or (ta is not None and _covers(tb, ta)):
            self.w.emit(K.TYPE_WIDENED, kpath, "accepts more types", a, b)
        else:
            self.w.emit(K.TYPE_CHANGED, kpath, "type changed", a, b)

    def _enum(self, a: Any, b: Any, has_a: bool, has_b: bool, kpath: str) -> None:
        w = self.w
        if not has_b:
            w.emit(K.CONSTRAINT_RELAXED, kpath, "enum removed", a, None)
            return
        if not has_a:
            w.emit(K.CONSTRAINT_NARROWED, kpath, "enum added", None, b)
            return
        if not isinstance(a, list) or not isinstance(b, list):
            w.emit(K.SCHEMA_KEYWORD_CHANGED, kpath, "enum is not a list", a, b)
            return
        ca, cb = _canon_list(a), _canon_list(b)
        removed = [v for v, c in zip(a, ca, strict=True) if c not in set(cb)]
        added = [v for v, c in zip(b, cb, strict=True) if c not in set(ca)]
        if removed:
            w.emit(K.ENUM_VALUES_REMOVED, kpath, "values no longer accepted", removed, None)
        if added:
            w.emit(K.ENUM_VALUES_ADDED, kpath, "values added", None, added)

    def _range(self, o: Mapping[str, Any], n: Mapping[str, Any], path: str) -> None:
        """Compare numeric intervals, so `exclusiveMaximum: 1000000` and `maximum: 999999` on an
        integer are the same bound (a common SDK rendering change), not a narrowing."""
        for lower in (True, False):
            name = "minimum" if lower else "maximum"
            a, b = _limit(o, lower), _limit(n, lower)
            if a == b:
                continue
            where = f"{path}.{name}"
            if a is _UNKNOWN or b is _UNKNOWN:
                self.w.emit(K.CONSTRAINT_NARROWED, where, f"{name} changed (form not compared)")
            elif a is None:
                self.w.emit(K.CONSTRAINT_NARROWED, where, f"{name} added", None, b)
            elif b is None:
                self.w.emit(K.CONSTRAINT_RELAXED, where, f"{name} removed", a, None)
            else:
                assert isinstance(a, tuple) and isinstance(b, tuple)
                tighter = (b[0] > a[0]) if lower else (b[0] < a[0])
                tighter = tighter or (b[0] == a[0] and b[1] and not a[1])
                kind = K.CONSTRAINT_NARROWED if tighter else K.CONSTRAINT_RELAXED
                shown_a = f"{'>' if lower else '<'}{'' if a[1] else '='} {a[0]:g}"
                shown_b = f"{'>' if lower else '<'}{'' if b[1] else '='} {b[0]:g}"
                self.w.emit(kind, where, f"{shown_a} -> {shown_b}", list(a), list(b))

    def _bound(self, key: str, a: Any, b: Any, has_a: bool, has_b: bool, kpath: str) -> None:
        w = self.w
        if not has_b:
            w.emit(K.CONSTRAINT_RELAXED, kpath, f"{key} removed", a, None)
            return
        if not has_a:
            w.emit(K.CONSTRAINT_NARROWED, kpath, f"{key} added", None, b)
            return
        na, nb = _num(a), _num(b)
        if na is None or nb is None:
            # draft-04 boolean exclusive bounds and the like: direction unknown, fail safe
            w.emit(K.CONSTRAINT_NARROWED, kpath, f"{key} changed", a, b)
            return
        narrows = nb < na if key in _UPPER_BOUNDS else nb > na
        if narrows:
            w.emit(K.CONSTRAINT_NARROWED, kpath, f"{key} {a} -> {b}", a, b)
        else:
            w.emit(K.CONSTRAINT_RELAXED, kpath, f"{key} {a} -> {b}", a, b)

    def _additional(
        self, key: str, a: Any, b: Any, has_a: bool, has_b: bool, kpath: str, depth: int
    ) -> None:
        w = self.w
        open_a = (not has_a) or a is True or a == {}
        open_b = (not has_b) or b is True or b == {}
        if open_a and open_b:
            return  # absent, true and {} all mean "anything"
        if b is False:
            w.emit(K.ADDITIONAL_PROPERTIES_CLOSED, kpath, f"{key} closed", a, b)
        elif a is False:
            w.emit(K.CONSTRAINT_RELAXED, kpath, f"{key} opened", a, b)
        elif open_a:
            w.emit(K.CONSTRAINT_NARROWED, kpath, f"{key} now constrained", a, b)
        elif open_b:
            w.emit(K.CONSTRAINT_RELAXED, kpath, f"{key} constraint dropped", a, b)
        else:
            self._node(a, b, kpath, depth + 1, params=True)

    def _subschema(self, a: Any, b: Any, has_a: bool, has_b: bool, kpath: str, depth: int) -> None:
        if isinstance(a, list) or isinstance(b, list):
            self._tuple(a, b, kpath, depth)
        elif not has_b:
            self.w.emit(K.CONSTRAINT_RELAXED, kpath, "subschema removed", a, None)
        elif not has_a:
            self.w.emit(K.CONSTRAINT_NARROWED, kpath, "subschema added", None, b)
        else:
            self._node(a, b, kpath, depth + 1, params=True)

    def _tuple(self, a: Any, b: Any, kpath: str, depth: int) -> None:
        la = a if isinstance(a, list) else []
        lb = b if isinstance(b, list) else []
        for i, (x, y) in enumerate(zip(la, lb, strict=False)):
            self._node(x, y, f"{kpath}[{i}]", depth + 1, params=True)
        if len(lb) > len(la):
            self.w.emit(K.CONSTRAINT_NARROWED, kpath, "positional items added", None, lb[len(la) :])
        elif len(la) > len(lb):
            self.w.emit(
                K.CONSTRAINT_RELAXED, kpath, "positional items removed", la[len(lb) :], None
            )

    def _pattern_properties(self, a: Any, b: Any, kpath: str, depth: int) -> None:
        ma = a if isinstance(a, Mapping) else {}
        mb = b if isinstance(b, Mapping) else {}
        for pat in sorted(set(ma) | set(mb)):
            p = f"{kpath}.{pat}"
            if pat not in ma:
                self.w.emit(K.CONSTRAINT_NARROWED, p, "pattern property added", None, mb[pat])
            elif pat not in mb:
                self.w.emit(K.CONSTRAINT_RELAXED, p, "pattern property removed", ma[pat], None)
            else:
                self._node(ma[pat], mb[pat], p, depth + 1, params=True)

    def _branches(self, key: str, a: Any, b: Any, kpath: str, depth: int) -> None:
        """Combinator branches: their parameters were folded into the parent's view already;
        here the branches' other keywords are compared pairwise."""
        la = a if isinstance(a, list) else []
        lb = b if isinstance(b, list) else []
        for i, (x, y) in enumerate(zip(la, lb, strict=False)):
            self._node(x, y, f"{kpath}[{i}]", depth + 1, params=False)
        narrowing = key == "allOf"
        for extra in lb[len(la) :]:
            if _constrains(extra):
                kind = K.CONSTRAINT_NARROWED if narrowing else K.CONSTRAINT_RELAXED
                self.w.emit(kind, kpath, f"{key} branch added", None, extra)
        for gone in la[len(lb) :]:
            if _constrains(gone):
                kind = K.CONSTRAINT_RELAXED if narrowing else K.CONSTRAINT_NARROWED
                self.w.emit(kind, kpath, f"{key} branch removed", gone, None)

    def _branch_single(
        self, key: str, a: Any, b: Any, has_a: bool, has_b: bool, kpath: str, depth: int
    ) -> None:
        if key == "dependentSchemas":
            ma = a if isinstance(a, Mapping) else {}
            mb = b if isinstance(b, Mapping) else {}
            for name in sorted(set(ma) | set(mb)):
                p = f"{kpath}.{name}"
                if name in ma and name in mb:
                    self._node(ma[name], mb[name], p, depth + 1, params=False)
                elif name in mb and _constrains(mb[name]):
                    self.w.emit(K.CONSTRAINT_NARROWED, p, "dependent schema added", None, mb[name])
                elif name in ma and _constrains(ma[name]):
                    self.w.emit(K.CONSTRAINT_RELAXED, p, "dependent schema removed", ma[name], None)
            return
        if has_a and has_b:
            self._node(a, b, kpath, depth + 1, params=False)
        elif has_b and _constrains(b):
            self.w.emit(K.CONSTRAINT_NARROWED, kpath, f"{key} branch added", None, b)
        elif has_a and _constrains(a):
            self.w.emit(K.CONSTRAINT_RELAXED, kpath, f"{key} branch removed", a, None)

    def _unvisited_defs(self) -> None:
        """A def that changed but that no reference reached: report it, never drop it."""
        if not self.w.old.defs_changed:
            return
        for name, (a, b) in _changed_defs(self.old_defs, self.new_defs):
            if any(ref.endswith(f"/{name}") for ref in self.w.refs_seen):
                continue
            self.w.emit(
                K.SCHEMA_ANNOTATION_CHANGED,
                f"{self.where}.$defs.{name}",
                "unreferenced definition changed",
                a,
                b,
            )


_UNKNOWN = object()


def _limit(schema: Mapping[str, Any], lower: bool) -> tuple[float, bool] | object | None:
    """The tightest (value, exclusive) bound on one side, None if unbounded, or _UNKNOWN.

    Integer schemas turn exclusive integral bounds into inclusive ones (x > 0 is x >= 1);
    draft-04 boolean `exclusiveMinimum`/`exclusiveMaximum` make the plain bound exclusive.
    """
    inc_key, exc_key = ("minimum", "exclusiveMinimum") if lower else ("maximum", "exclusiveMaximum")
    inc = _num(schema.get(inc_key))
    if inc_key in schema and inc is None:
        return _UNKNOWN
    exc_raw = schema.get(exc_key)
    found: list[tuple[float, bool]] = []
    if isinstance(exc_raw, bool):
        if inc is not None:
            found.append((inc, exc_raw))
    else:
        if inc is not None:
            found.append((inc, False))
        exc = _num(exc_raw)
        if exc is not None:
            found.append((exc, True))
        elif exc_key in schema:
            return _UNKNOWN
    if not found:
        return None
    integer = _type_set(schema.get("type")) == frozenset({"integer"})
    norm = []
    for value, exclusive in found:
        if integer and exclusive and value.is_integer():
            value, exclusive = (value + 1, False) if lower else (value - 1, False)
        norm.append((value, exclusive))
    if lower:
        return max(norm, key=lambda t: (t[0], t[1]))
    return min(norm, key=lambda t: (t[0], not t[1]))


def _constrains(schema: Any) -> bool:
    """Does a branch constrain anything beyond declaring parameters (already reported)?"""
    schema = _as_schema(schema)
    if not isinstance(schema, Mapping):
        return True
    inert = _PARAM_KEYWORDS | _ANNOTATIONS | {"description", "type"}
    return any(k not in inert for k in schema) or (
        "type" in schema and schema["type"] not in ("object", ["object"])
    )


def _merge_ref(target: Any, site: Mapping[str, Any]) -> Any:
    """A `$ref` with sibling keywords (2020-12): the target's keywords plus the siblings."""
    siblings = {k: v for k, v in site.items() if k != "$ref"}
    if not siblings:
        return target
    if not isinstance(target, Mapping):
        return {"allOf": [target], **siblings}
    merged = dict(target)
    merged.update(siblings)
    return merged


def _defs_of(schema: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(schema, Mapping):
        for key in _DEFS:
            defs = schema.get(key)
            if isinstance(defs, Mapping):
                for name, body in defs.items():
                    out[f"{key}/{name}"] = body
    return out


def _changed_defs(a: dict[str, Any], b: dict[str, Any]) -> Iterator[tuple[str, tuple[Any, Any]]]:
    for name in sorted(set(a) | set(b)):
        if not json_equal(a.get(name), b.get(name)):
            yield name, (a.get(name), b.get(name))


def _union_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    keys = list(a)
    keys += [k for k in b if k not in a]
    return keys


def _dedupe(changes: list[Change]) -> list[Change]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for change in changes:
        key = (change.kind.value, change.path, change.detail)
        if key not in seen:
            seen.add(key)
            out.append(change)
    return out


def diff_schema(old: Any, new: Any, where: str = "inputSchema") -> list[Change]:
    """The classified changes from schema `old` to `new` (empty if they are equal)."""
    if json_equal(old, new):
        return []
    return SchemaDiff(old, new, where).run()
