"""The battery: seeded, reproducible inputs generated from a tool's `inputSchema`.

Valid cases (defaults, each boundary, random samples) and invalid ones (a wrong type, a missing
required property, an extra property where none is allowed, an out-of-range value). Every case's
label is checked with a JSON Schema validator; a case whose label it contradicts is dropped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 4
_WRONG = {"string": 7, "integer": "seven", "number": "seven", "boolean": "yes", "array": {}}
_WRONG_DEFAULT: Any = ["not", "this"]


@dataclass(frozen=True, slots=True)
class Case:
    """One call of the battery. `label` says how it was made (never the values)."""

    label: str
    arguments: dict[str, Any]
    valid: bool


def _types(node: dict[str, Any]) -> list[str]:
    declared = node.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list) and declared:
        return [t for t in declared if isinstance(t, str)]
    if isinstance(node.get("properties"), dict):
        return ["object"]
    return ["string"]


class _Sampler:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def value(self, node: Any, depth: int = 0) -> Any:
        if not isinstance(node, dict):
            return "x"
        if "const" in node:
            return node["const"]
        if isinstance(node.get("enum"), list) and node["enum"]:
            return self.rng.choice(node["enum"])
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list) and node[key]:
                return self.value(self.rng.choice(node[key]), depth + 1)
        kind = self.rng.choice(_types(node))
        if kind == "null":
            return None
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind in ("integer", "number"):
            low, high = _bounds(node, kind)
            if kind == "integer":
                return self.rng.randint(int(low), int(high))
            return round(self.rng.uniform(low, high), 3)
        if kind == "array":
            low = int(node.get("minItems", 0))
            high = max(low, min(int(node.get("maxItems", low + 3)), low + 3))
            if depth >= MAX_DEPTH:
                return []
            return [
                self.value(node.get("items"), depth + 1) for _ in range(self.rng.randint(low, high))
            ]
        if kind == "object":
            return self.object(node, depth + 1, everything=self.rng.random() < 0.5)
        low = int(node.get("minLength", 1))
        high = max(low, min(int(node.get("maxLength", low + 12)), low + 12))
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
        return "".join(self.rng.choice(alphabet) for _ in range(self.rng.randint(low, high)))

    def object(self, node: dict[str, Any], depth: int, *, everything: bool) -> dict[str, Any]:
        props = _properties(node)
        required = [r for r in node.get("required", []) if isinstance(r, str)]
        out: dict[str, Any] = {}
        if depth > MAX_DEPTH:
            return out
        for name, sub in props.items():
            if name in required or everything:
                out[name] = self.value(sub, depth)
        for name in required:
            out.setdefault(name, "x")
        return out


def _properties(node: dict[str, Any]) -> dict[str, Any]:
    found = node.get("properties")
    return found if isinstance(found, dict) else {}


def _bounds(node: dict[str, Any], kind: str) -> tuple[float, float]:
    step = 1 if kind == "integer" else 0.001
    low = node.get("minimum", node.get("exclusiveMinimum", -1000))
    high = node.get("maximum", node.get("exclusiveMaximum", 1000))
    if "exclusiveMinimum" in node and "minimum" not in node:
        low += step
    if "exclusiveMaximum" in node and "maximum" not in node:
        high -= step
    return float(low), float(max(low, high))


def generate(schema: Any, seed: int, samples: int = 12) -> list[Case]:
    """The battery for one input schema; the same schema and seed give the same cases."""
    rng = random.Random(seed)
    sampler = _Sampler(rng)
    root: dict[str, Any] = schema if isinstance(schema, dict) else {"type": "object"}
    props = _properties(root)
    required = [r for r in root.get("required", []) if isinstance(r, str) and r in props]
    base = sampler.object(root, 1, everything=False)
    cases = [Case("required properties only (defaults apply)", dict(base), True)]
    defaults = {n: s["default"] for n, s in props.items() if isinstance(s, dict) and "default" in s}
    if defaults:
        cases.append(Case("every default given explicitly", {**base, **defaults}, True))
    for name, sub in props.items():
        if not isinstance(sub, dict):
            continue
        for label, value in _boundaries(sub):
            cases.append(Case(f"{name}: {label}", {**base, name: value}, True))
        for label, value in _outside(sub):
            cases.append(Case(f"{name}: {label}", {**base, name: value}, False))
        wrong = _WRONG.get(_types(sub)[0], _WRONG_DEFAULT)
        cases.append(Case(f"{name}: wrong type", {**base, name: wrong}, False))
    for name in required:
        cases.append(
            Case(f"missing required {name}", {k: v for k, v in base.items() if k != name}, False)
        )
    if root.get("additionalProperties") is False:
        cases.append(Case("an extra property", {**base, "mcpward_unexpected": 1}, False))
    for i in range(samples):
        cases.append(Case(f"random sample {i + 1}", sampler.object(root, 1, everything=True), True))
    return _checked(root, cases)


def _boundaries(node: dict[str, Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key in ("minimum", "maximum"):
        if isinstance(node.get(key), int | float) and not isinstance(node.get(key), bool):
            out.append((f"at {key}", node[key]))
    for key in ("minLength", "maxLength"):
        if isinstance(node.get(key), int) and node[key] <= 4096:
            out.append((f"length at {key}", "a" * node[key]))
    if isinstance(node.get("enum"), list):
        out += [(f"enum value {i + 1}", v) for i, v in enumerate(node["enum"][:8])]
    return out


def _outside(node: dict[str, Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    step = 1 if _types(node)[0] == "integer" else 0.5
    for key, sign in (
        ("minimum", -1),
        ("maximum", 1),
        ("exclusiveMinimum", 0),
        ("exclusiveMaximum", 0),
    ):
        bound = node.get(key)
        if isinstance(bound, int | float) and not isinstance(bound, bool):
            out.append((f"beyond {key}", bound + sign * step))
    if isinstance(node.get("minLength"), int) and node["minLength"] > 0:
        out.append(("shorter than minLength", "a" * (node["minLength"] - 1)))
    if isinstance(node.get("maxLength"), int) and node["maxLength"] < 4096:
        out.append(("longer than maxLength", "a" * (node["maxLength"] + 1)))
    if isinstance(node.get("enum"), list) and node["enum"]:
        out.append(("not one of the enum", "mcpward-not-in-enum"))
    return out


def _checked(schema: dict[str, Any], cases: list[Case]) -> list[Case]:
    """Keep only cases whose label the schema agrees with (an unusable schema keeps none of the
    valid ones: nothing is called as valid that the schema cannot vouch for)."""
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError

    try:
        cls = validators.validator_for(schema)
        cls.check_schema(schema)
    except SchemaError:
        return []
    validator = cls(schema)
    seen: set[str] = set()
    kept = []
    for case in cases:
        key = repr(sorted(case.arguments.items(), key=lambda kv: kv[0])) + str(case.valid)
        if validator.is_valid(case.arguments) is case.valid and key not in seen:
            seen.add(key)
            kept.append(case)
    return kept
