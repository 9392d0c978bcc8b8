"""The values of one guard call on the Python side: the arguments and the guest's answer.

Plain dataclasses, free of wasmtime, so the guard can build them without loading the runtime.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IdentityArg:
    sub: str
    email: str | None
    groups: tuple[str, ...]
    claims: str  # JSON object


@dataclass(frozen=True, slots=True)
class ContextArg:
    server_name: str
    identity: IdentityArg | None
    metadata: str  # JSON object


@dataclass(frozen=True, slots=True)
class ToolArg:
    name: str
    description: str | None
    input_schema: str  # JSON object


Arg = str | ContextArg | list[ToolArg]


@dataclass(frozen=True, slots=True)
class GuestAnswer:
    """What the guest returned: `kind` is allow, deny, modify or err (its result's error case)."""

    kind: str
    code: str = ""
    message: str = ""
    details: str | None = None
    payload: str = ""  # modify's JSON action, or err's message
