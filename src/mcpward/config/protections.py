"""Which protections a loaded configuration has on, in plain words, and a warning for each one
that is off or only records (`config check` and `doctor` print these)."""

from __future__ import annotations

from dataclasses import dataclass

from mcpward.config.loader import LoadedConfig
from mcpward.pipeline.spec import GuardSpec, Mode

# kind -> what it does for the user; the drift gate first, then the content guards
PROTECTIONS: dict[str, str] = {
    "rug_pull": "drift gate: pins every tool, prompt and resource contract and HOLDs a call "
    "whose contract changed",
    "tool_poisoning": "drops listed tools, prompts and resources whose texts carry hidden "
    "instructions",
    "tool_shadowing": "drops tools that impersonate another server's tools",
    "secrets": "redacts credentials in what servers send back",
    "response_injection": "flags instructions aimed at the model in returned data",
}


@dataclass(frozen=True)
class ProtectionState:
    kind: str
    meaning: str
    state: str  # "on" | "off" | "records only"
    guard_ids: list[str]

    @property
    def warning(self) -> str | None:
        if self.state == "on":
            return None
        what = (
            "the drift gate (rug_pull)" if self.kind == "rug_pull" else f"content guard {self.kind}"
        )
        if self.state == "off":
            return f"{what} is off: nothing {_consequence(self.kind)}"
        return f"{what} only records (mode shadow): it blocks nothing"


def _consequence(kind: str) -> str:
    return {
        "rug_pull": "is pinned and a changed tool runs without a HOLD",
        "tool_poisoning": "stops a poisoned tool description reaching the model",
        "tool_shadowing": "stops one server's tool impersonating another's",
        "secrets": "redacts credentials in results",
        "response_injection": "flags injected instructions in results",
    }[kind]


def _mode(spec: GuardSpec, gateway_mode: Mode) -> Mode:
    return spec.mode or gateway_mode


def protection_states(loaded: LoadedConfig) -> list[ProtectionState]:
    """One state per protection of PROTECTIONS, in its order."""
    gateway_mode = loaded.config.gateway.mode
    states = []
    for kind, meaning in PROTECTIONS.items():
        active = [s for s in loaded.guard_specs if s.kind == kind and s.enabled]
        enforcing = [s for s in active if _mode(s, gateway_mode) == Mode.ENFORCE]
        state = "on" if enforcing else ("records only" if active else "off")
        states.append(ProtectionState(kind, meaning, state, [s.id or s.kind for s in active]))
    return states


def guards_origin(loaded: LoadedConfig) -> str:
    """Where the guard pipeline comes from, in one phrase."""
    from mcpward.config.guards import guard_entries

    entries, replaced = guard_entries(loaded.config.guards)
    count = len(loaded.guard_specs)
    if replaced:
        return f"{count} guard(s), only those in the config (replace_defaults: true)"
    if not entries:
        return f"{count} guard(s), the built-in defaults"
    entry = "entry" if len(entries) == 1 else "entries"
    return f"{count} guard(s): the built-in defaults and {len(entries)} {entry} of the config"
