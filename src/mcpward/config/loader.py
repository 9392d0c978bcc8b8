"""Load and validate a configuration file; every error names the file, the field and the fix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from mcpward.config.guards import (
    guards_schema,
    parse_guards_section,
    resolve_guards,
    unknown_kinds,
)
from mcpward.config.models import GatewayConfig
from mcpward.config.suggest import unknown_field_message
from mcpward.guards.kinds import resolve_guard_kind
from mcpward.pipeline.guard import Guard
from mcpward.pipeline.spec import GuardSpec


@dataclass(frozen=True)
class ConfigProblem:
    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


class ConfigError(Exception):
    """An invalid configuration. The gateway never starts with one."""

    def __init__(self, source: str, problems: list[ConfigProblem]) -> None:
        self.source = source
        self.problems = problems
        lines = [f"{source}: invalid configuration ({len(problems)} problem(s))"]
        lines += [f"  - {p}" for p in problems]
        super().__init__("\n".join(lines))


def _loc(parts: tuple[int | str, ...] | list[int | str]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _pydantic_problems(
    exc: ValidationError, prefix: str = "", schema: dict[str, Any] | None = None
) -> list[ConfigProblem]:
    """One problem per pydantic error; `schema` (of the model that refused) names the valid
    fields next to an unknown one."""
    problems = []
    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if p not in ("stdio", "http")]
        where = _loc(loc)
        if prefix:
            where = f"{prefix}{'' if where.startswith('[') else '.'}{where}" if where else prefix
        message = err["msg"]
        if err["type"] == "extra_forbidden":
            message = unknown_field_message(schema, loc)
        elif err["type"] == "missing":
            message = "required field is missing"
        elif "input" in err and err["type"] not in ("model_type",):
            shown = repr(err["input"])
            if len(shown) <= 60:
                message += f" (got {shown})"
        problems.append(ConfigProblem(where, message))
    return problems


@dataclass(frozen=True)
class LoadedConfig:
    """A validated config with each guard's options parsed by its kind's own model."""

    source: str
    config: GatewayConfig
    guard_specs: list[GuardSpec]
    guard_options: list[BaseModel]

    def guard_classes(self) -> list[type[Guard]]:
        return [resolve_guard_kind(spec.kind) for spec in self.guard_specs]

    def build_guards(self) -> list[Guard]:
        return [
            resolve_guard_kind(spec.kind)(spec, options)
            for spec, options in zip(self.guard_specs, self.guard_options, strict=True)
        ]


class _Invalid(BaseModel):
    """Placeholder options for a guard whose config failed (the load is refused anyway)."""


_INVALID = _Invalid()


def _check_guards(
    specs: list[GuardSpec], places: list[str]
) -> tuple[list[BaseModel], list[ConfigProblem]]:
    problems: list[ConfigProblem] = []
    options: list[BaseModel] = []
    seen: dict[str, str] = {}
    for spec, where in zip(specs, places, strict=True):
        try:
            cls = resolve_guard_kind(spec.kind)
        except KeyError as exc:
            problems.append(ConfigProblem(f"{where}.kind", str(exc.args[0])))
            options.append(_INVALID)
            continue
        guard_id = spec.id or spec.kind
        if guard_id in seen:
            problems.append(
                ConfigProblem(
                    f"{where}.id",
                    f"guard id {guard_id!r} is already used by {seen[guard_id]}; "
                    "give each guard of the same kind its own id",
                )
            )
        seen[guard_id] = where
        supported = cls.supported_phases()
        unsupported = [p.value for p in spec.runs_on if p not in supported]
        if unsupported:
            problems.append(
                ConfigProblem(
                    f"{where}.runs_on",
                    f"guard kind {spec.kind!r} does not run at {', '.join(unsupported)}; "
                    f"it supports: {', '.join(sorted(p.value for p in supported))}",
                )
            )
        try:
            options.append(cls.Options.model_validate(spec.config))
        except ValidationError as exc:
            schema = cls.Options.model_json_schema()
            problems += _pydantic_problems(exc, f"{where}.config", schema)
            options.append(_INVALID)
        except ValueError as exc:
            problems.append(ConfigProblem(f"{where}.config", str(exc)))
            options.append(_INVALID)
    return options, problems


def _consult_problems(config: GatewayConfig, specs: list[GuardSpec]) -> list[ConfigProblem]:
    """A consult that could outlast the rug_pull guard waiting for it would time the guard out
    (failing its call closed) instead of keeping the deterministic verdict."""
    consult = config.consult
    if consult is None or not consult.enabled:
        return []
    return [
        ConfigProblem(
            "consult.deadline_s",
            f"{consult.deadline_s:g} s is not below the timeout of guard "
            f"{spec.id or spec.kind!r} ({spec.timeout_ms} ms), which waits for the consult; "
            "lower deadline_s or raise that guard's timeout_ms",
        )
        for spec in specs
        if spec.kind == "rug_pull" and consult.deadline_s * 1000 >= spec.timeout_ms
    ]


def parse_config(data: Any, source: str = "<config>") -> LoadedConfig:
    """Validate already parsed YAML/JSON data; every problem is reported at once."""
    if not isinstance(data, dict):
        raise ConfigError(
            source, [ConfigProblem("", "the file must contain a mapping at the top level")]
        )
    problems: list[ConfigProblem] = []
    config: GatewayConfig | None = None
    try:
        config = GatewayConfig.model_validate({k: v for k, v in data.items() if k != "guards"})
    except ValidationError as exc:
        problems += _pydantic_problems(exc, schema=GatewayConfig.model_json_schema())
    specs: list[GuardSpec] = []
    options: list[BaseModel] = []
    section = None
    try:
        section = parse_guards_section(data.get("guards"))
    except ValidationError as exc:
        raw = data.get("guards")
        problems += _pydantic_problems(exc, "guards", guards_schema(raw))
        problems += [ConfigProblem(where, message) for where, message in unknown_kinds(raw)]
    except ValueError as exc:
        problems.append(ConfigProblem("guards", str(exc)))
    else:
        resolved = resolve_guards(section)
        problems += [ConfigProblem(where, message) for where, message in resolved.problems]
        specs = resolved.specs
        options, found = _check_guards(specs, resolved.where)
        problems += found
    if config is not None:
        problems += _consult_problems(config, specs)
    if problems or config is None:
        raise ConfigError(source, problems)
    config = config.model_copy(update={"guards": section})
    return LoadedConfig(source, config, specs, options)


def load_config(path: Path | str) -> LoadedConfig:
    """Read, parse and validate a YAML configuration file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            source, [ConfigProblem("", f"cannot read the file: {exc.strerror}")]
        ) from None
    import yaml  # a file's configuration only (the quick form has none to read)

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, [ConfigProblem(where, f"not valid YAML: {problem}")]) from None
    return parse_config(data, source)
