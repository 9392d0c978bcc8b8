"""Merging several upstreams' handshake answers into one (capabilities, versions, instructions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcpward import __version__

GATEWAY_INFO = {"name": "mcpward", "version": __version__}
_LIST_CAPS = ("tools", "prompts", "resources")


def merge_capabilities(caps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Union of capabilities; a boolean sub-flag (listChanged, subscribe) is true if any is."""
    merged: dict[str, Any] = {}
    for cap in caps:
        for key, value in cap.items():
            if key in _LIST_CAPS and isinstance(value, dict):
                slot = merged.setdefault(key, {})
                for flag, flag_value in value.items():
                    if isinstance(flag_value, bool):
                        slot[flag] = bool(slot.get(flag)) or flag_value
                    else:
                        slot.setdefault(flag, flag_value)
            elif isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**value, **merged[key]}
            else:
                merged.setdefault(key, value)
    return merged


def merge_instructions(parts: Sequence[tuple[str, str | None]]) -> str | None:
    texts = [f"[{upstream}] {text}" for upstream, text in parts if text]
    return "\n\n".join(texts) if texts else None


def merge_initialize(
    requested_version: str | None, results: Sequence[tuple[str, dict[str, Any]]]
) -> dict[str, Any]:
    """One InitializeResult for the client from each upstream's (id, result)."""
    versions = [str(r.get("protocolVersion")) for _, r in results if r.get("protocolVersion")]
    if versions and all(v == requested_version for v in versions):
        version = requested_version
    else:
        version = min(versions) if versions else requested_version
    merged: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": merge_capabilities([r.get("capabilities") or {} for _, r in results]),
        "serverInfo": dict(GATEWAY_INFO),
    }
    instructions = merge_instructions([(u, r.get("instructions")) for u, r in results])
    if instructions:
        merged["instructions"] = instructions
    return merged


def merge_discover(results: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One DiscoverResult (2026-07-28) from each upstream's (id, result)."""
    supported: list[str] | None = None
    for _, result in results:
        versions = [v for v in result.get("supportedVersions") or [] if isinstance(v, str)]
        supported = versions if supported is None else [v for v in supported if v in versions]
    merged: dict[str, Any] = {
        "supportedVersions": supported or [],
        "capabilities": merge_capabilities([r.get("capabilities") or {} for _, r in results]),
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": dict(GATEWAY_INFO)},
    }
    instructions = merge_instructions([(u, r.get("instructions")) for u, r in results])
    if instructions:
        merged["instructions"] = instructions
    return merged
