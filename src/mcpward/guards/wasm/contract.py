"""The contract mcp:security-guard@0.1.0 as signatures, and the load-time check of a component.

A component must export the guard interface with exactly these signatures and may import only
the host interface (plus, when the operator allows it, the WASI set a guest language needs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from wasmtime import Engine
from wasmtime.component import (
    Component,
    ComponentInstanceType,
    EnumType,
    FuncType,
    ListType,
    OptionType,
    RecordType,
    ResultType,
    TupleType,
    VariantType,
)

from mcpward.guards.wasm.errors import WasmGuardLoadError

CONTRACT_VERSION = "0.1.0"
GUARD_INTERFACE = f"mcp:security-guard/guard@{CONTRACT_VERSION}"
HOST_INTERFACE = f"mcp:security-guard/host@{CONTRACT_VERSION}"

# Field and case names are part of the contract (values pass by name); parameter names are not.
_OPT_STR = "option<string>"
_CONTEXT = (
    "record{server-name: string, identity: option<record{sub: string, email: option<string>, "
    "groups: list<string>, claims: string}>, metadata: string}"
)
_TOOL = f"record{{name: string, description: {_OPT_STR}, input-schema: string}}"
_RESULT = (
    "result<variant{allow, deny(record{code: string, message: string, details: option<string>}), "
    "modify(string)}, string>"
)

GUARD_FUNCS: dict[str, str] = {
    "evaluate-tools-list": f"func(list<{_TOOL}>, {_CONTEXT}) -> {_RESULT}",
    "evaluate-tool-call": f"func(string, string, {_CONTEXT}) -> {_RESULT}",
    "evaluate-tool-response": f"func(string, string, {_CONTEXT}) -> {_RESULT}",
    "evaluate-prompt-request": f"func(string, string, {_CONTEXT}) -> {_RESULT}",
    "evaluate-resource-request": f"func(string, {_CONTEXT}) -> {_RESULT}",
}

HOST_FUNCS: dict[str, str] = {
    "log": "func(enum{trace, debug, info, warn, error}, string)",
    "get-config": "func(string) -> option<string>",
    "record-metric": "func(string, f64, list<tuple<string, string>>)",
}

# What a guest language's runtime may import when the operator sets needs_wasi. The gateway links
# them with no preopened directories, no environment, closed stdio, sockets denied, and the clocks
# replaced by a frozen clock that cannot wait. wasi:http is never linked.
WASI_ALLOWED_PACKAGES = (
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:cli/",
    "wasi:filesystem/",
    "wasi:sockets/",
)
WASI_VERSION_PREFIX = "@0.2."

_SCALARS = {
    "Bool": "bool",
    "S8": "s8",
    "S16": "s16",
    "S32": "s32",
    "S64": "s64",
    "U8": "u8",
    "U16": "u16",
    "U32": "u32",
    "U64": "u64",
    "F32": "f32",
    "F64": "f64",
    "Char": "char",
    "String": "string",
}


def describe(ty: Any) -> str:
    """A WIT-like structural spelling of a component value type."""
    name = type(ty).__name__
    if name in _SCALARS:
        return _SCALARS[name]
    if isinstance(ty, ListType):
        return f"list<{describe(ty.element)}>"
    if isinstance(ty, OptionType):
        return f"option<{describe(ty.payload)}>"
    if isinstance(ty, ResultType):
        ok = describe(ty.ok) if ty.ok is not None else "_"
        err = describe(ty.err) if ty.err is not None else "_"
        return f"result<{ok}, {err}>"
    if isinstance(ty, RecordType):
        return "record{" + ", ".join(f"{n}: {describe(t)}" for n, t in ty.fields) + "}"
    if isinstance(ty, VariantType):
        cases = [n if t is None else f"{n}({describe(t)})" for n, t in ty.cases]
        return "variant{" + ", ".join(cases) + "}"
    if isinstance(ty, EnumType):
        return "enum{" + ", ".join(ty.names) + "}"
    if isinstance(ty, TupleType):
        return "tuple<" + ", ".join(describe(t) for t in ty.elements) + ">"
    return name.lower()


def describe_func(ty: FuncType) -> str:
    params = ", ".join(describe(t) for _, t in ty.params)
    result = ty.result
    return f"func({params})" + (f" -> {describe(result)}" if result is not None else "")


@dataclass(frozen=True)
class ContractReport:
    """What the check found; `wasi_imports` is non-empty only for guards that need WASI."""

    host_imports: tuple[str, ...]
    wasi_imports: tuple[str, ...]
    extra_exports: tuple[str, ...] = field(default=())

    @property
    def needs_wasi(self) -> bool:
        return bool(self.wasi_imports)


def interface_funcs(instance: ComponentInstanceType, engine: Engine) -> dict[str, FuncType]:
    """The functions an imported or exported interface holds, by name."""
    return {n: e.ty for n, e in instance.exports(engine).items() if isinstance(e.ty, FuncType)}


def check_component(
    component: Component, engine: Engine, module: str, allow_wasi: bool
) -> ContractReport:
    """Raise WasmGuardLoadError unless the component keeps the contract; report what it uses."""
    ctype = component.type
    exports = {name: ext.ty for name, ext in ctype.exports(engine).items()}
    guard = exports.get(GUARD_INTERFACE)
    if not isinstance(guard, ComponentInstanceType):
        versions = [n for n in exports if n.startswith("mcp:security-guard/guard@")]
        found = f"; it exports {', '.join(versions)}" if versions else ""
        raise WasmGuardLoadError(
            module,
            f"does not export {GUARD_INTERFACE}{found}",
            "build it against the WIT that `mcpward guard wit` prints (world security-guard)",
        )
    funcs = interface_funcs(guard, engine)
    for name, expected in GUARD_FUNCS.items():
        if name not in funcs:
            raise WasmGuardLoadError(module, f"{GUARD_INTERFACE} lacks the function {name}")
        actual = describe_func(funcs[name])
        if actual != expected:
            raise WasmGuardLoadError(
                module, f"{name} has the signature {actual}, but the contract says {expected}"
            )
    host_imports: list[str] = []
    wasi_imports: list[str] = []
    for name, ext in ctype.imports(engine).items():
        item = ext.ty
        if name == HOST_INTERFACE and isinstance(item, ComponentInstanceType):
            for fname, fty in interface_funcs(item, engine).items():
                offered = HOST_FUNCS.get(fname)
                if offered is None:
                    raise WasmGuardLoadError(
                        module, f"imports {HOST_INTERFACE}#{fname}, which the host does not offer"
                    )
                if describe_func(fty) != offered:
                    raise WasmGuardLoadError(
                        module,
                        f"imports {fname} as {describe_func(fty)}, but the host offers {offered}",
                    )
                host_imports.append(fname)
            continue
        if name.startswith(WASI_ALLOWED_PACKAGES) and WASI_VERSION_PREFIX in name:
            if not allow_wasi:
                raise WasmGuardLoadError(
                    module,
                    f"imports {name}, and WASI is not allowed for this guard",
                    "set needs_wasi: true if its language runtime needs WASI (componentize-py "
                    "does); it gets no files, sockets, environment or clock",
                )
            wasi_imports.append(name)
            continue
        raise WasmGuardLoadError(
            module,
            f"imports {name}, which a guard may not use",
            f"a guard may import only {HOST_INTERFACE} (and, with needs_wasi, "
            "wasi:io/clocks/random/cli/filesystem/sockets 0.2, linked without capabilities)",
        )
    extra = tuple(sorted(n for n in exports if n != GUARD_INTERFACE))
    return ContractReport(tuple(sorted(host_imports)), tuple(sorted(wasi_imports)), extra)


def wit_text() -> str:
    """The shipped WIT contract."""
    return files("mcpward.guards.wasm").joinpath("wit/guard.wit").read_text(encoding="utf-8")
