"""The contract's values in and out of wasmtime's C API: export arguments, answers, host calls.

wasmtime-py re-reads every type through ctypes on each call (most of a call's cost); the
contract's types are fixed and checked at load, so the values are built and read directly here.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from ctypes import POINTER, byref, c_char_p, c_ubyte
from typing import Any

from wasmtime import WasmtimeError
from wasmtime import _ffi as ffi
from wasmtime.component import Func

from mcpward.guards.wasm.values import Arg, ContextArg, GuestAnswer, IdentityArg, ToolArg

_STRING = ffi.WASMTIME_COMPONENT_STRING
_U32 = ffi.WASMTIME_COMPONENT_U32
_U64 = ffi.WASMTIME_COMPONENT_U64
_LIST = ffi.WASMTIME_COMPONENT_LIST
_RECORD = ffi.WASMTIME_COMPONENT_RECORD
_OPTION = ffi.WASMTIME_COMPONENT_OPTION
_RESULT = ffi.WASMTIME_COMPONENT_RESULT.value
_VARIANT = ffi.WASMTIME_COMPONENT_VARIANT.value
_STRING_KIND = ffi.WASMTIME_COMPONENT_STRING.value
_ENUM_KIND = ffi.WASMTIME_COMPONENT_ENUM.value
_F64_KIND = ffi.WASMTIME_COMPONENT_F64.value
_LIST_KIND = ffi.WASMTIME_COMPONENT_LIST.value
_TUPLE_KIND = ffi.WASMTIME_COMPONENT_TUPLE.value
_RECORD_KIND = ffi.WASMTIME_COMPONENT_RECORD.value
_OPTION_KIND = ffi.WASMTIME_COMPONENT_OPTION.value


_CONTEXT_FIELDS = (b"server-name", b"identity", b"metadata")
_IDENTITY_FIELDS = (b"sub", b"email", b"groups", b"claims")
_TOOL_FIELDS = (b"name", b"description", b"input-schema")


def _set_bytes(vec: Any, data: bytes) -> None:
    ffi.wasm_byte_vec_new(byref(vec), len(data), ctypes.cast(c_char_p(data), POINTER(c_ubyte)))


def write_string(val: Any, text: str) -> None:
    val.kind = _STRING
    _set_bytes(val.of.string, text.encode("utf-8", "surrogatepass"))


def write_option_string(val: Any, text: str | None) -> None:
    val.kind = _OPTION
    if text is None:
        val.of.option = None
        return
    inner = ffi.wasmtime_component_val_t()
    write_string(inner, text)
    val.of.option = ffi.wasmtime_component_val_new(byref(inner))


def write_record(val: Any, names: tuple[bytes, ...]) -> Any:
    val.kind = _RECORD
    ffi.wasmtime_component_valrecord_new_uninit(byref(val.of.record), len(names))
    entries = val.of.record.data
    for i, name in enumerate(names):
        _set_bytes(entries[i].name, name)
    return entries


def _lower_identity(val: Any, identity: IdentityArg | None) -> None:
    val.kind = _OPTION
    if identity is None:
        val.of.option = None
        return
    inner = ffi.wasmtime_component_val_t()
    entries = write_record(inner, _IDENTITY_FIELDS)
    write_string(entries[0].val, identity.sub)
    write_option_string(entries[1].val, identity.email)
    groups = entries[2].val
    groups.kind = _LIST
    ffi.wasmtime_component_vallist_new_uninit(byref(groups.of.list), len(identity.groups))
    items = groups.of.list.data
    for i, group in enumerate(identity.groups):
        write_string(items[i], group)
    write_string(entries[3].val, identity.claims)
    val.of.option = ffi.wasmtime_component_val_new(byref(inner))


def _lower_context(val: Any, ctx: ContextArg) -> None:
    entries = write_record(val, _CONTEXT_FIELDS)
    write_string(entries[0].val, ctx.server_name)
    _lower_identity(entries[1].val, ctx.identity)
    write_string(entries[2].val, ctx.metadata)


def _lower_tools(val: Any, tools: list[ToolArg]) -> None:
    val.kind = _LIST
    ffi.wasmtime_component_vallist_new_uninit(byref(val.of.list), len(tools))
    items = val.of.list.data
    for i, tool in enumerate(tools):
        entries = write_record(items[i], _TOOL_FIELDS)
        write_string(entries[0].val, tool.name)
        write_option_string(entries[1].val, tool.description)
        write_string(entries[2].val, tool.input_schema)


def _lower(val: Any, arg: Arg) -> None:
    if isinstance(arg, str):
        write_string(val, arg)
    elif isinstance(arg, ContextArg):
        _lower_context(val, arg)
    else:
        _lower_tools(val, arg)


def read_string(val: Any) -> str:
    if val.kind != _STRING_KIND:
        raise TypeError("expected a string value")
    vec = val.of.string
    return ctypes.string_at(vec.data, vec.size).decode("utf-8") if vec.size else ""


def read_enum(val: Any) -> str:
    if val.kind != _ENUM_KIND:
        raise TypeError("expected an enum value")
    vec = val.of.enumeration
    return ctypes.string_at(vec.data, vec.size).decode("utf-8")


def read_f64(val: Any) -> float:
    if val.kind != _F64_KIND:
        raise TypeError("expected an f64 value")
    return float(val.of.f64)


def read_string_pairs(val: Any) -> list[tuple[str, str]]:
    """list<tuple<string, string>>."""
    if val.kind != _LIST_KIND:
        raise TypeError("expected a list value")
    items = val.of.list
    pairs = []
    for i in range(items.size):
        item = items.data[i]
        if item.kind != _TUPLE_KIND or item.of.tuple.size != 2:
            raise TypeError("expected a pair")
        pairs.append((read_string(item.of.tuple.data[0]), read_string(item.of.tuple.data[1])))
    return pairs


def write_u64(val: Any, number: int) -> None:
    val.kind = _U64
    val.of.u64 = number


def write_u32(val: Any, number: int) -> None:
    val.kind = _U32
    val.of.u32 = number


def _lift_deny(val: Any) -> GuestAnswer:
    if val.kind != _RECORD_KIND:
        raise TypeError("deny carries no record")
    fields: dict[str, Any] = {}
    record = val.of.record
    for i in range(record.size):
        entry = record.data[i]
        fields[ctypes.string_at(entry.name.data, entry.name.size).decode()] = entry.val
    details_val = fields["details"]
    if details_val.kind != _OPTION_KIND:
        raise TypeError("deny details is not an option")
    details = read_string(details_val.of.option.contents) if details_val.of.option else None
    return GuestAnswer(
        "deny",
        code=read_string(fields["code"]),
        message=read_string(fields["message"]),
        details=details,
    )


def _lift(result: Any) -> GuestAnswer:
    if result.kind != _RESULT:
        raise TypeError("the export did not return a result")
    if not result.of.result.is_ok:
        return GuestAnswer("err", payload=read_string(result.of.result.val.contents))
    decision = result.of.result.val.contents
    if decision.kind != _VARIANT:
        raise TypeError("ok carries no decision variant")
    case_vec = decision.of.variant.discriminant
    case = ctypes.string_at(case_vec.data, case_vec.size).decode()
    if case == "allow":
        return GuestAnswer("allow")
    payload = decision.of.variant.val.contents
    if case == "deny":
        return _lift_deny(payload)
    if case == "modify":
        return GuestAnswer("modify", payload=read_string(payload))
    raise TypeError(f"unknown decision case {case!r}")


def call_export(func: Func, store: Any, args: Sequence[Arg]) -> GuestAnswer:
    """Call one contract export and run its post-return; WasmtimeError on any trap."""
    params = (ffi.wasmtime_component_val_t * len(args))()
    lowered = 0
    result = ffi.wasmtime_component_val_t()
    context = store._context()
    try:
        for i, arg in enumerate(args):
            _lower(params[i], arg)
            lowered += 1
        error = ffi.wasmtime_component_func_call(
            byref(func._func), context, params, len(args), byref(result), 1
        )
        if error:
            raise WasmtimeError._from_ptr(error)
        try:
            answer = _lift(result)
        finally:
            ffi.wasmtime_component_val_delete(byref(result))
        error = ffi.wasmtime_component_func_post_return(byref(func._func), context)
        if error:
            raise WasmtimeError._from_ptr(error)
        return answer
    finally:
        for i in range(lowered):
            ffi.wasmtime_component_val_delete(byref(params[i]))
