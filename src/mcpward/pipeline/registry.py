"""Guard kinds by name. Built-in kinds register themselves when `mcpward.guards` is imported."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from mcpward.pipeline.guard import Guard

_KINDS: dict[str, type[Guard]] = {}
_BUILTINS_LOADED = False


def guard_kind(cls: type[Guard]) -> type[Guard]:
    """Class decorator: register a guard kind under `cls.kind`."""
    if not cls.kind:
        raise TypeError(f"{cls.__name__} has no kind")
    existing = _KINDS.get(cls.kind)
    if existing is not None and existing is not cls:
        raise TypeError(f"guard kind {cls.kind!r} is registered twice")
    _KINDS[cls.kind] = cls
    return cls


def _load_builtins() -> None:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        importlib.import_module("mcpward.guards")


def guard_kinds() -> dict[str, type[Guard]]:
    _load_builtins()
    return dict(_KINDS)


def resolve_guard_kind(kind: str) -> type[Guard]:
    """The class for a kind, or KeyError listing the known kinds."""
    kinds = guard_kinds()
    try:
        return kinds[kind]
    except KeyError:
        known = ", ".join(sorted(kinds))
        raise KeyError(f"unknown guard kind {kind!r}; known kinds: {known}") from None


GuardFactory = Callable[..., Guard]
