"""The drift gate: per-upstream pins, live hashes and holds, and the decision on each call.

`observe` takes an upstream's listed contracts (pin on first sight, classify drift, hold or
re-pin); `check` is the per-call fast path: one dict lookup and one hash comparison.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcpward.contracts.classify import classify_item
from mcpward.contracts.clearance import released
from mcpward.contracts.consult.cache import ConsultVerdict
from mcpward.contracts.consult.consult import PENDING, Review, SemanticConsult
from mcpward.contracts.extract import DEEP_PREFIX, ContractMap, HashCache
from mcpward.contracts.holds import Commands, hold_banner
from mcpward.contracts.markers import MarkerScan
from mcpward.contracts.model import INSTRUCTIONS, WHOLE_UPSTREAM, HoldRecord, ItemKind, Pin, Verdict
from mcpward.contracts.postures import Posture, PostureTable
from mcpward.contracts.provenance import CONSULT_MEANING, provenance
from mcpward.contracts.store import Key, PinStore
from mcpward.contracts.taxonomy import Change, ChangeKind
from mcpward.protocol.uri_template import template_regex

log = logging.getLogger("mcpward.contracts")


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


UNOBSERVED = _Sentinel("UNOBSERVED")  # the upstream's contracts were never read
UNLISTED = _Sentinel("UNLISTED")  # the item is neither pinned nor in the live view
CONSULTING = _Sentinel("CONSULTING")  # a benign-looking change awaits the tier-2 consult

CheckResult = HoldRecord | _Sentinel | None
_INSTRUCTIONS_KEY: Key = (ItemKind.SERVER, INSTRUCTIONS)


@dataclass(frozen=True, slots=True)
class ConnectionView:
    """What one upstream connection serves, as contracts and their hashes (built once per read
    of that connection, shared by every call judged against it)."""

    contracts: ContractMap
    hashes: dict[Key, str]
    complete: frozenset[ItemKind]  # kinds listed in full on that read
    kinds: frozenset[ItemKind]  # every kind the read shows (complete, or with items)


@dataclass(slots=True)
class Observation:
    """What one observation did (for logs and receipts; never contract bodies)."""

    tofu: int = 0
    new_holds: list[HoldRecord] = field(default_factory=list)
    repinned: list[tuple[Key, list[str]]] = field(default_factory=list)
    released: list[Key] = field(default_factory=list)
    consulting: list[Key] = field(default_factory=list)  # PROCEEDs awaiting the consult


@dataclass(slots=True)
class _State:
    upstream: str
    baselined: set[ItemKind] = field(default_factory=set)  # kinds whose first sight is pinned
    tampered: str | None = None
    pins: dict[Key, Pin] = field(default_factory=dict)
    holds: dict[Key, HoldRecord] = field(default_factory=dict)
    live: dict[Key, str] = field(default_factory=dict)
    live_contracts: ContractMap = field(default_factory=dict)
    complete: set[ItemKind] = field(default_factory=set)
    observed_at: float | None = None  # the catalog's fetched_at of the last observed snapshot
    kind_observed_at: dict[ItemKind, float] = field(default_factory=dict)  # the same, per kind
    blocking: HoldRecord | None = None  # an enforced upstream-wide hold


class Gate:
    """One gate over one pin store. All methods run on the event loop's thread."""

    def __init__(
        self,
        store: PinStore,
        table_for: Callable[[str], PostureTable],
        commands: Commands,
        *,
        markers: MarkerScan | None = None,
        clock: Callable[[], float] = time.time,
        identities: Mapping[str, Any] | None = None,
        consult: SemanticConsult | None = None,
    ) -> None:
        self.store = store
        self.consult = consult  # tier 2: may raise a PROCEED to a HOLD, never the reverse
        self.identities = dict(identities or {})  # upstream id -> what identifies the server
        self.markers = markers
        self.table_for = table_for
        self.commands = commands
        self.clock = clock
        self.started_at = clock()  # a tier-3 CLEARED reached after this releases in this run
        self.hashes = HashCache()
        self._states: dict[str, _State] = {}

    # -- state -------------------------------------------------------------------------------

    def state(self, upstream: str) -> _State:
        st = self._states.get(upstream)
        if st is None:
            st = _State(upstream)
            self._load(st)
            self._states[upstream] = st
        return st

    def _load(self, st: _State) -> None:
        loaded = self.store.load(st.upstream)
        st.baselined = set(loaded.kinds)
        st.tampered = loaded.tampered
        st.pins = loaded.pins
        st.holds = loaded.holds
        for pin in st.pins.values():
            self.hashes.seed(pin.contract, pin.hash)
        self._refresh_blocking(st)

    def _refresh_blocking(self, st: _State) -> None:
        st.blocking = next(
            (h for k, h in st.holds.items() if k[0] is ItemKind.SERVER and h.enforced), None
        )

    def _enforced(self, hold: HoldRecord) -> bool:
        """Enforced, and not released for this run by a tier-3 CLEARED verdict."""
        return hold.enforced and not released(hold, self.started_at)

    def baselined(self, upstream: str, kind: ItemKind) -> bool:
        """Has this kind of item of this upstream been pinned on first sight already?"""
        return kind in self.state(upstream).baselined

    def observed_at(self, upstream: str) -> float | None:
        st = self._states.get(upstream)
        return st.observed_at if st is not None else None

    # -- observing contracts -----------------------------------------------------------------

    def observe(
        self,
        upstream: str,
        contracts: ContractMap,
        complete: Iterable[ItemKind] = (),
        observed_at: float | None = None,
    ) -> Observation:
        """Judge one view of an upstream. Kinds in `complete` were listed in full, so pinned
        items of those kinds that are missing count as removed. `observed_at` (monotonic, when
        the view was read) orders views per kind: for each kind, a view read before the last
        judged view of that kind is ignored, so a slow re-read can never bring back a contract
        the upstream has already moved away from, yet still gives the first sight of a kind
        that a newer, partial view did not show."""
        st = self.state(upstream)
        complete = set(complete)
        if observed_at is not None:
            # Per kind: a view read before the last judged view of a kind says nothing new about
            # that kind, but may be the first (or newest) view of another kind.
            fresh = {
                kind
                for kind in complete | {key[0] for key in contracts}
                if observed_at >= st.kind_observed_at.get(kind, observed_at)
            }
            if not fresh:
                return Observation()
            contracts = {key: c for key, c in contracts.items() if key[0] in fresh}
            complete &= fresh
            for kind in fresh:
                st.kind_observed_at[kind] = observed_at
        for key in [k for k in st.live_contracts if k[0] in complete]:
            del st.live_contracts[key]
            st.live.pop(key, None)
        for key, contract in contracts.items():
            st.live_contracts[key] = contract
            st.live[key] = self.hashes.hash(contract)
        st.complete |= complete
        if observed_at is not None:
            st.observed_at = (
                observed_at if st.observed_at is None else max(st.observed_at, observed_at)
            )
        # accepts/revokes made by the CLI apply before this view is judged (after a revoke,
        # this view is the "next sight" that is pinned)
        self.reload_if_changed()
        view_kinds = complete | {key[0] for key in contracts}
        keys = [*contracts, *[k for k in st.pins if k[0] in complete]]
        return self._evaluate(st, keys, view_kinds=view_kinds)

    def _evaluate(
        self,
        st: _State,
        keys: Iterable[Key],
        *,
        view_kinds: Iterable[ItemKind] = (),
        connection: ConnectionView | None = None,
    ) -> Observation:
        """Judge the live view against the pins. Kinds seen for the first time in this view
        (`view_kinds`, a current view) are pinned as they are: trust on first use, per kind, so
        an item is "new" only if its kind was listed before without it. With `connection`, the
        keys are judged as that connection serves them instead of the upstream's last view."""
        obs = Observation()
        if st.tampered is not None:
            self._hold_tampered(st, obs)
            return obs
        first_sight = set(view_kinds) - st.baselined
        if first_sight:
            self._baseline(st, first_sight, obs)
        keys = [k for k in keys if k[0] in st.baselined]
        table = self.table_for(st.upstream)
        puts: list[Pin] = []
        deletes: list[Key] = []
        put_holds: list[HoldRecord] = []
        del_holds: list[Key] = []
        now = self.clock()
        stale = (ItemKind.SERVER, WHOLE_UPSTREAM)
        if stale in st.holds:
            del_holds.append(stale)  # the store verifies again (a human reset it)
        for key in dict.fromkeys(keys):
            if connection is not None:
                contract = connection.contracts.get(key)
                live_hash = connection.hashes.get(key)
            else:
                contract = st.live_contracts.get(key)
                live_hash = st.live.get(key) if contract is not None else None
            pin = st.pins.get(key)
            hold = st.holds.get(key)
            if pin is not None and live_hash == pin.hash:
                if hold is not None:
                    del_holds.append(key)
                    obs.released.append(key)
                continue
            if contract is None:
                # Absent from this view: nothing to judge. A list may vary with the client (its
                # declared capabilities) and an absent item cannot be called; its pin stays, so
                # the item passes when it returns unchanged and is held if it returns drifted.
                if hold is not None:
                    del_holds.append(key)
                    obs.released.append(key)
                continue
            if (
                hold is not None
                and hold.new_hash == live_hash
                and hold.posture == table.posture.value
            ):
                hold.last_seen = now
                continue
            changes = classify_item(key[0], pin.contract if pin else None, contract, self.markers)
            deep = (pin is not None and pin.hash.startswith(DEEP_PREFIX)) or (
                live_hash or ""
            ).startswith(DEEP_PREFIX)
            if deep and not any(c.kind is ChangeKind.DEEP_SCHEMA_UNDIFFABLE for c in changes):
                changes.append(
                    Change(ChangeKind.DEEP_SCHEMA_UNDIFFABLE, "", "contract too deep to compare")
                )
            decision = table.decide(c.kind for c in changes)
            kinds = list(dict.fromkeys(c.kind.value for c in changes))
            if decision.judged is Verdict.PROCEED:
                review = self._consult_review(st, key, pin, contract, live_hash, changes)
                if review is PENDING:
                    obs.consulting.append(key)  # decided when the consult answers
                    continue
                if isinstance(review, ConsultVerdict) and review.escalates:
                    record = self._consult_hold(st, key, pin, contract, live_hash, changes, review)
                    if hold is not None and hold.new_hash == live_hash:
                        record.first_seen = hold.first_seen
                    put_holds.append(record)
                    obs.new_holds.append(record)
                    continue
                if contract is None:
                    deletes.append(key)
                else:
                    puts.append(
                        Pin(
                            st.upstream,
                            key[0],
                            key[1],
                            live_hash or "",
                            contract,
                            now,
                            "auto" if pin else "tofu",
                        )
                    )
                if hold is not None:
                    del_holds.append(key)
                obs.repinned.append((key, kinds))
                continue
            record = HoldRecord(
                upstream=st.upstream,
                kind=key[0],
                name=key[1],
                old_hash=pin.hash if pin else None,
                new_hash=live_hash,
                change_kinds=kinds,
                changes=[c.to_json() for c in changes],
                posture=table.posture.value,
                verdict=decision.judged,
                reason="new" if pin is None else ("removed" if contract is None else "drift"),
                first_seen=hold.first_seen
                if hold is not None and hold.new_hash == live_hash
                else now,
                last_seen=now,
                new_contract=contract,
                enforced=decision.verdict.holds,
                extra={
                    "holding_kinds": list(decision.holding),
                    "provenance": provenance(
                        pin, self.identities.get(st.upstream), table.posture.value
                    ),
                },
            )
            put_holds.append(record)
            obs.new_holds.append(record)
        self._commit(st, puts, deletes, put_holds, del_holds)
        for record in obs.new_holds:
            log.warning("%s", hold_banner(record, self.commands))
        for key, kinds in obs.repinned:
            log.info(
                "mcpward: re-pinned %s of upstream %r after benign drift: %s",
                key[0].value,
                st.upstream,
                ", ".join(kinds),
            )
        return obs

    def _consult_review(
        self,
        st: _State,
        key: Key,
        pin: Pin | None,
        contract: Any,
        live_hash: str | None,
        changes: list[Change],
    ) -> Review:
        """Tier 2's say on a PROCEED: only a moved (not new, not removed) contract is asked."""
        if self.consult is None or pin is None or contract is None or not live_hash:
            return None
        return self.consult.review(
            (st.upstream, key[0], key[1]), pin.contract, contract, pin.hash, live_hash, changes
        )

    def _consult_hold(
        self,
        st: _State,
        key: Key,
        pin: Pin | None,
        contract: Any,
        live_hash: str | None,
        changes: list[Change],
        verdict: ConsultVerdict,
    ) -> HoldRecord:
        """The HOLD a consult raised a structural PROCEED to (enforced unless monitor)."""
        now = self.clock()
        posture = self.table_for(st.upstream).posture
        origin = provenance(pin, self.identities.get(st.upstream), posture.value)
        origin["flagged_by"] = {"tier": 2, **verdict.to_json(), "meaning": CONSULT_MEANING}
        return HoldRecord(
            upstream=st.upstream,
            kind=key[0],
            name=key[1],
            old_hash=pin.hash if pin else None,
            new_hash=live_hash,
            change_kinds=list(dict.fromkeys(c.kind.value for c in changes)),
            changes=[c.to_json() for c in changes],
            posture=posture.value,
            verdict=Verdict.HOLD,
            reason="consult",
            first_seen=now,
            last_seen=now,
            new_contract=contract,
            enforced=posture is not Posture.MONITOR,
            extra={"holding_kinds": [], "consult": verdict.to_json(), "provenance": origin},
        )

    def _baseline(self, st: _State, kinds: set[ItemKind], obs: Observation) -> None:
        """First sight of these kinds of an upstream: what is listed is the baseline."""
        now = self.clock()
        pins = [
            Pin(st.upstream, key[0], key[1], st.live[key], contract, now, "tofu")
            for key, contract in st.live_contracts.items()
            if key[0] in kinds and key not in st.pins
        ]
        self.store.write(st.upstream, put=pins, baseline_kinds=kinds)
        st.pins.update({p.key: p for p in pins})
        st.baselined |= kinds
        obs.tofu += len(pins)
        log.info(
            "mcpward: pinned %d contract(s) of upstream %r on first sight (%s)",
            len(pins), st.upstream, ", ".join(sorted(k.value for k in kinds)),
        )  # fmt: skip

    def _hold_tampered(self, st: _State, obs: Observation) -> None:
        key = (ItemKind.SERVER, WHOLE_UPSTREAM)
        if key in st.holds and st.holds[key].reason == "tampered":
            return
        now = self.clock()
        posture = self.table_for(st.upstream).posture
        record = HoldRecord(
            upstream=st.upstream,
            kind=ItemKind.SERVER,
            name=WHOLE_UPSTREAM,
            old_hash=None,
            new_hash=None,
            change_kinds=[ChangeKind.PIN_STORE_TAMPERED.value],
            changes=[{"kind": ChangeKind.PIN_STORE_TAMPERED.value, "detail": st.tampered or ""}],
            posture=posture.value,
            verdict=Verdict.HOLD,
            reason="tampered",
            first_seen=now,
            last_seen=now,
            enforced=posture is not Posture.MONITOR,  # monitor never blocks, it records
            extra={"problem": st.tampered or ""},
        )
        # recorded so `mcpward holds` shows it; pins are left exactly as found (evidence)
        self.store.write(st.upstream, put_holds=[record])
        st.holds[key] = record
        self._refresh_blocking(st)
        obs.new_holds.append(record)
        log.error("%s", hold_banner(record, self.commands))

    def _commit(
        self,
        st: _State,
        puts: list[Pin],
        deletes: list[Key],
        put_holds: list[HoldRecord],
        del_holds: list[Key],
    ) -> None:
        if not (puts or deletes or put_holds or del_holds):
            return
        self.store.write(
            st.upstream, put=puts, delete=deletes, put_holds=put_holds, delete_holds=del_holds
        )
        for pin in puts:
            st.pins[pin.key] = pin
        for key in deletes:
            st.pins.pop(key, None)
        for key in del_holds:
            st.holds.pop(key, None)
        for hold in put_holds:
            st.holds[hold.key] = hold
        self._refresh_blocking(st)

    def settle(self, upstream: str, keys: Iterable[Key]) -> Observation:
        """Judge these items again against the upstream's last view (once the consult about
        them has answered)."""
        return self._evaluate(self.state(upstream), list(keys))

    # -- other processes (the CLI) -----------------------------------------------------------

    def reload_if_changed(self) -> bool:
        """Pick up accepts/revokes made by `mcpward pins` in another process."""
        if not self.store.changed():
            return False
        for st in self._states.values():
            self._load(st)
            keys = list(st.live_contracts) + [k for k in st.pins if k[0] in st.complete]
            self._evaluate(st, keys)  # an older view: never a baseline (no view_kinds)
        return True

    # -- calls -------------------------------------------------------------------------------

    def view(self, contracts: ContractMap, complete: Iterable[ItemKind]) -> ConnectionView:
        """The hashed view of one connection's read (hashes come from the shared cache)."""
        hashes = {key: self.hashes.hash(contract) for key, contract in contracts.items()}
        complete = frozenset(complete)
        return ConnectionView(contracts, hashes, complete, complete | {k[0] for k in contracts})

    def check_connection(
        self, upstream: str, view: ConnectionView, kind: ItemKind, name: str
    ) -> CheckResult:
        """The per-call decision against what the call's own connection serves: None = proceed,
        a HoldRecord = held, UNLISTED = not served by that connection.

        Fast path (unchanged contract): dict lookups and two hash comparisons. A contract that
        differs from its pin is judged here and then (hold, or benign re-pin), so a call never
        depends on another connection's read or on the upstream-wide last view."""
        st = self.state(upstream)
        if st.tampered is not None or not view.kinds <= st.baselined:
            # a tampered store, or the first full sight of a kind: judge the whole view first
            self.observe(upstream, view.contracts, view.complete)
        if st.blocking is not None and st.blocking.name == WHOLE_UPSTREAM:
            return st.blocking
        # The server's instructions are a description for every item; absent instructions are
        # never read as removed instructions.
        if _INSTRUCTIONS_KEY in view.hashes:
            held = self._check_key(st, view, _INSTRUCTIONS_KEY)
            if isinstance(held, HoldRecord):
                return held
            if held is CONSULTING:  # a hold or denial of the item itself is never delayed
                result = self._check_key(st, view, (kind, name))
                return result if isinstance(result, HoldRecord) or result is UNLISTED else held
        return self._check_key(st, view, (kind, name))

    def _check_key(self, st: _State, view: ConnectionView, key: Key) -> CheckResult:
        live_hash = view.hashes.get(key)
        pin = st.pins.get(key)
        if pin is not None and pin.hash == live_hash:
            return None
        if live_hash is None:
            return UNLISTED  # not served by this connection (pinned or not): never forwarded
        if key[0] not in st.baselined:
            return None  # that kind was never listed: nothing to hold it to yet
        hold = st.holds.get(key)
        posture = self.table_for(st.upstream).posture.value
        if hold is None or hold.new_hash != live_hash or hold.posture != posture:
            self.reload_if_changed()  # an accept made elsewhere applies before judging
            self._evaluate(st, [key], connection=view)
            if self.consult is not None and self.consult.pending((st.upstream, *key)):
                return CONSULTING
            pin = st.pins.get(key)
            if pin is not None and pin.hash == live_hash:
                return None  # benign under the posture: re-pinned
            if pin is None and live_hash is None:
                return UNLISTED
            hold = st.holds.get(key)
        if hold is not None and hold.new_hash == live_hash and self._enforced(hold):
            # a verdict or an accept made in another process applies before the call is refused
            if self.reload_if_changed():
                return self._check_key(st, view, key)
            return hold
        return None

    def check(self, upstream: str, kind: ItemKind, name: str) -> CheckResult:
        """The gate's view of an item across the upstream's last observed view (not a per-call
        decision: calls use `check_connection`). None = no hold; a HoldRecord = held;
        UNOBSERVED/UNLISTED = never observed / neither pinned nor listed."""
        st = self._states.get(upstream)
        if st is None or (st.observed_at is None and not st.live):
            return UNOBSERVED
        if st.blocking is not None:
            return st.blocking
        key = (kind, name)
        pin = st.pins.get(key)
        if pin is not None and pin.hash == st.live.get(key):
            return None
        hold = st.holds.get(key)
        if hold is not None:
            return hold if self._enforced(hold) else None
        if pin is None:
            return UNLISTED
        return None  # pinned, and no view since has shown it changed

    def check_resource(self, upstream: str, uri: str) -> CheckResult:
        """`check` for a resource URI: an unlisted URI is covered by a held template."""
        result = self.check(upstream, ItemKind.RESOURCE, uri)
        return self.held_template(upstream, uri) if result is UNLISTED else result

    def held_template(self, upstream: str, uri: str) -> HoldRecord | None:
        """An enforced hold on a resource template that expands to this URI, if any."""
        st = self._states.get(upstream)
        if st is None:
            return None
        for (kind, template), hold in st.holds.items():
            if (
                kind is ItemKind.RESOURCE_TEMPLATE
                and self._enforced(hold)
                and template_regex(template).match(uri)
            ):
                return hold
        return None

    def withheld(self, upstream: str, kind: ItemKind) -> set[str]:
        """Names of this kind whose enforced holds keep them out of list results (as live)."""
        return set(self.held(upstream, kind))

    def held(self, upstream: str, kind: ItemKind) -> dict[str, HoldRecord]:
        """Name -> enforced hold of the listed items of this kind (removed items are not)."""
        st = self._states.get(upstream)
        if st is None:
            return {}
        return {
            k[1]: h
            for k, h in st.holds.items()
            if k[0] is kind and self._enforced(h) and h.reason != "removed"
        }

    def pin(self, upstream: str, kind: ItemKind, name: str) -> Pin | None:
        st = self._states.get(upstream)
        return st.pins.get((kind, name)) if st is not None else None

    def holds(self, upstream: str) -> list[HoldRecord]:
        st = self._states.get(upstream)
        return list(st.holds.values()) if st is not None else []


__all__ = ["CONSULTING", "UNLISTED", "UNOBSERVED", "CheckResult", "Gate", "Observation"]
