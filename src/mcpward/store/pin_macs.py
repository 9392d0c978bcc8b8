"""The HMACs that make a pin store tamper-evident, whatever database holds the rows.

One key (config `keys.dir`, never in the database) MACs each pin, hold, per-upstream manifest and
the list of upstreams; the SQLite and PostgreSQL stores share these so their rows mean the same.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from typing import Any

import orjson

from mcpward.contracts.model import HoldRecord, ItemKind, Pin
from mcpward.contracts.store import UpstreamPins, hold_from_json
from mcpward.protocol.canonical import canonical_bytes


class PinMacs:
    def __init__(self, key: bytes) -> None:
        self._key = key

    def mac(self, *parts: Any) -> str:
        return hmac.new(self._key, canonical_bytes(list(parts)), hashlib.sha256).hexdigest()

    def ok(self, mac: str, *parts: Any) -> bool:
        return hmac.compare_digest(mac, self.mac(*parts))

    def pin_mac(
        self,
        upstream: str,
        kind: str,
        name: str,
        hash_: str,
        contract_text: str,
        pinned_at: float,
        source: str,
    ) -> str:
        """The MAC binds the pinned hash to the exact stored contract text, so a load verifies
        both without recomputing the (costly) canonical hash of every contract."""
        text_digest = hashlib.sha256(contract_text.encode()).hexdigest()
        return self.mac("pin", upstream, kind, name, hash_, text_digest, pinned_at, source)


def pin_set_digest(rows: Iterable[tuple[str, str, str]]) -> str:
    """Digest of an upstream's pin set (kind, name, hash): catches deleted or resurrected rows."""
    h = hashlib.sha256()
    for kind, name, hash_ in sorted(rows):
        h.update(canonical_bytes([kind, name, hash_]))
    return h.hexdigest()


def dump_json(value: Any) -> str:
    """A contract or hold as stored text; one too deeply nested to store becomes a marker."""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        pass
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (RecursionError, ValueError, TypeError):
        # too deep to store; the hash (MACed) still identifies it, the diff will say undiffable
        return json.dumps({"x-mcpward-unstorable": "contract nested too deeply to store"})


def join_problems(problems: list[str]) -> str | None:
    if not problems:
        return None
    more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
    return "; ".join(problems[:5]) + more


Manifest = tuple[str, str, float, str]  # digest, kinds (JSON list), updated_at, mac
PinRow = tuple[str, str, str, str, float, str, str]  # kind, name, hash, contract, at, source, mac
HoldRow = tuple[str, str, str, str]  # kind, name, body, mac


def verify_upstream(
    macs: PinMacs,
    upstream: str,
    listed: tuple[list[str], bool],
    manifest: Manifest | None,
    pin_rows: Iterable[PinRow],
    hold_rows: Iterable[HoldRow],
) -> UpstreamPins:
    """One upstream's rows, as read in one consistent snapshot, checked against their MACs.
    `listed` is the list of upstream ids and whether its MAC verified."""
    out = UpstreamPins(upstream)
    problems: list[str] = []
    ids, list_ok = listed
    pin_rows = list(pin_rows)
    if not list_ok:
        problems.append("the list of pinned upstreams fails verification")
    if manifest is None:
        if upstream in ids:
            problems.append("the upstream's pin manifest was deleted")
        elif pin_rows:
            problems.append("pins exist without a manifest")
    else:
        digest, kinds_text, updated_at, mac = manifest
        if not macs.ok(mac, "upstream", upstream, digest, kinds_text, updated_at):
            problems.append("the upstream's pin manifest fails verification")
        elif list_ok and upstream not in ids:
            problems.append("the upstream is missing from the verified upstream list")
        try:
            out.kinds = {ItemKind(k) for k in json.loads(kinds_text)}
        except (ValueError, TypeError):
            problems.append("the upstream's pin manifest is unreadable")
        if digest != pin_set_digest([(r[0], r[1], r[2]) for r in pin_rows]):
            problems.append("pins were added or deleted outside mcpward")
    for kind, name, hash_, contract_text, pinned_at, source, mac in pin_rows:
        where = f"{kind} {name!r}"
        expected = macs.pin_mac(upstream, kind, name, hash_, contract_text, pinned_at, source)
        if not hmac.compare_digest(mac, expected):
            problems.append(f"pin of {where} fails verification")
            continue
        try:
            contract = json.loads(contract_text)
            item_kind = ItemKind(kind)
        except ValueError:
            problems.append(f"pin of {where} is unreadable")
            continue
        out.pins[(item_kind, name)] = Pin(
            upstream, item_kind, name, hash_, contract, pinned_at, source
        )
    for kind, name, body, mac in hold_rows:
        hold = verified_hold(macs, upstream, kind, name, body, mac)
        if hold is None:
            problems.append(f"hold of {kind} {name!r} fails verification")
            continue
        out.holds[hold.key] = hold
    out.tampered = join_problems(problems)
    return out


def verified_hold(
    macs: PinMacs, upstream: str, kind: str, name: str, body: str, mac: str
) -> HoldRecord | None:
    """The hold a row holds, or None when its MAC or its body does not check out."""
    if not macs.ok(mac, "hold", upstream, kind, name, body):
        return None
    try:
        return hold_from_json(json.loads(body))
    except (ValueError, KeyError):
        return None
