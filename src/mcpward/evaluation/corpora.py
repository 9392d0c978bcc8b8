"""Loading the labelled corpora (../shared/corpora) and the real-server tool dumps, used the way
each corpus README says: which records are positives for which detector, deduplicated.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcpward.evaluation.split import Split, split_of

ROOT = Path(__file__).resolve().parents[3]

# Where a poisoning attack is visible to a metadata scanner, by (source, attack type). Cisco's
# goal-manipulation and tool-poisoning records were checked mechanically: every one of the 20 is
# a single sentence under 80 characters with no schema text, i.e. the attack is in the code.
NOT_IN_METADATA = {
    ("msb", "tool_transfer"),
}
SHADOWING_ATTACKS = {
    ("msb", "name_overlap"),
    ("mcp-safetybench", "Tool Shadowing"),
    ("mcp-safetybench", "Function Overlapping"),
    ("mcp-safetybench", "Preference Manipulation"),
}
CISCO_METADATA_POSITIVE = {"prompt-injection"}


class CorpusMissing(FileNotFoundError):
    """The corpora directory (or one file in it) is not where it was looked for."""


def corpora_dir(explicit: Path | None = None) -> Path:
    """--corpora, else $MCPWARD_CORPORA, else ../shared/corpora next to the repository."""
    candidates = [explicit] if explicit else []
    if os.environ.get("MCPWARD_CORPORA"):
        candidates.append(Path(os.environ["MCPWARD_CORPORA"]))
    candidates.append(ROOT.parent / "shared" / "corpora")
    for path in candidates:
        if path is not None and (path / "mcp-tool-definitions-labelled").is_dir():
            return path
    tried = ", ".join(str(p) for p in candidates if p is not None)
    raise CorpusMissing(f"labelled corpora not found (tried {tried}); pass --corpora DIR")


def real_servers_dir(explicit: Path | None = None) -> Path:
    path = explicit or ROOT / "tests" / "data" / "real_servers"
    if not path.is_dir():
        raise CorpusMissing(f"real-server tool dumps not found at {path}; pass --real-servers DIR")
    return path


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    try:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield json.loads(line)
    except FileNotFoundError:
        raise CorpusMissing(f"missing corpus file {path}") from None


ToolGroup = Literal["positive", "benign", "hidden", "shadowing"]


@dataclass(frozen=True, slots=True)
class ToolExample:
    id: str
    group: ToolGroup
    split: Split
    source: str
    attack_type: str | None
    server: str | None
    tool: dict[str, Any]


def tool_group(record: dict[str, Any]) -> ToolGroup:
    """How a labelled definition counts for a metadata scanner (README: 'use as it says')."""
    if record["label"] != "malicious":
        return "benign"  # benign, and the readiness set's low-quality-but-not-malicious ones
    key = (record["source"], record["attack_type"])
    if key in NOT_IN_METADATA:
        return "hidden"
    if record["source"] == "msb" and record["attack_type"] == "name_overlap":
        return "shadowing"  # identical metadata, only the name changed: a cross-server check
    if (
        record["source"].startswith("cisco")
        and record["attack_type"] not in CISCO_METADATA_POSITIVE
    ):
        return "hidden"
    return "positive"


def tool_definitions(corpora: Path) -> list[ToolExample]:
    """Deduplicated on (group, description) as the README asks; split by description hash."""
    seen: set[tuple[str, str]] = set()
    out: list[ToolExample] = []
    for record in _jsonl(corpora / "mcp-tool-definitions-labelled" / "tool_definitions.jsonl"):
        tool = record["tool"]
        description = str(tool.get("description") or "")
        group = tool_group(record)
        dedupe = description if group != "shadowing" else str(tool.get("name"))
        if (group, dedupe) in seen:
            continue
        seen.add((group, dedupe))
        out.append(
            ToolExample(
                id=record["id"],
                group=group,
                split=split_of(description or str(tool.get("name"))),
                source=record["source"],
                attack_type=record.get("attack_type"),
                server=record.get("server"),
                tool=tool,
            )
        )
    return out


def shadowing_cases(corpora: Path) -> list[tuple[ToolExample, list[dict[str, Any]]]]:
    """Each shadowing attack with the benign tools of the server it imitates."""
    records = list(_jsonl(corpora / "mcp-tool-definitions-labelled" / "tool_definitions.jsonl"))
    benign: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r["label"] == "benign" and r.get("server"):
            benign.setdefault(r["server"], []).append(r["tool"])
    cases = []
    seen: set[str] = set()
    for r in records:
        if (r["source"], r["attack_type"]) not in SHADOWING_ATTACKS:
            continue
        key = json.dumps(r["tool"], sort_keys=True)
        if key in seen or not benign.get(r.get("server") or ""):
            continue
        seen.add(key)
        example = ToolExample(
            r["id"],
            "shadowing",
            split_of(key),
            r["source"],
            r["attack_type"],
            r["server"],
            r["tool"],
        )
        cases.append((example, benign[r["server"]]))
    return cases


@dataclass(frozen=True, slots=True)
class RealServer:
    server: str
    batch: str  # dev: inspected while tuning; heldout: dumped after tuning froze, never inspected
    tools: list[dict[str, Any]] = field(default_factory=list)


def real_servers(directory: Path) -> list[RealServer]:
    out = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out.append(RealServer(data["server"], data.get("batch", "dev"), list(data["tools"])))
    return out


@dataclass(frozen=True, slots=True)
class SecretExample:
    rule_id: str
    positive: bool
    split: Split
    text: str


def secret_examples(corpora: Path) -> list[SecretExample]:
    return [
        SecretExample(r["rule_id"], r["kind"] == "positive", split_of(r["text"]), r["text"])
        for r in _jsonl(corpora / "secret-detection-examples" / "examples.jsonl")
    ]


def is_label_conflict(example: SecretExample, positives: dict[str, set[str]]) -> bool:
    """A negative of one rule that is, character for character, a positive of another rule."""
    return not example.positive and bool(positives.get(example.text, set()) - {example.rule_id})


def positive_texts(examples: list[SecretExample]) -> dict[str, set[str]]:
    """Each positive text and the rules that list it as a positive."""
    out: dict[str, set[str]] = {}
    for example in examples:
        if example.positive:
            out.setdefault(example.text, set()).add(example.rule_id)
    return out


@dataclass(frozen=True, slots=True)
class InjectionExample:
    category: str
    split: Split
    text: str  # the instruction spliced into an email (or alone)
    positive: bool


BipiaSplit = Literal["train", "test"]


def bipia_split(name: BipiaSplit) -> Split:
    """BIPIA's own split: train is our dev side, test the held-out one."""
    return "dev" if name == "train" else "test"


def bipia_emails(corpora: Path, name: BipiaSplit) -> list[str]:
    return [r["context"] for r in _jsonl(corpora / "bipia" / f"email_{name}.jsonl")]


def bipia_instructions(corpora: Path, name: BipiaSplit) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for kind in ("text", "code"):
        path = corpora / "bipia" / f"{kind}_attack_{name}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CorpusMissing(f"missing corpus file {path}") from None
        out += [(category, text) for category, texts in data.items() for text in texts]
    return out


def splice(email: str, instruction: str, position: int) -> str:
    """Put the instruction at the start (0), a sentence boundary near the middle (1) or the end."""
    if position == 0:
        return f"{instruction} {email}"
    if position == 2:
        return f"{email} {instruction}"
    middle = len(email) // 2
    cut = email.find(". ", middle)
    if cut < 0:
        cut = email.find(" ", middle)
    cut = len(email) if cut < 0 else cut + 1
    return f"{email[:cut]} {instruction} {email[cut:]}"


def bipia_injections(corpora: Path, name: BipiaSplit) -> list[InjectionExample]:
    """BIPIA's published split. Each instruction is spliced into one email of the same split at
    one position, both chosen by a hash of the instruction (so n counts independent attacks);
    the negatives are that split's untouched emails."""
    emails = bipia_emails(corpora, name)
    split = bipia_split(name)
    out = [InjectionExample("email (untouched)", split, e, False) for e in emails]
    for category, instruction in bipia_instructions(corpora, name):
        h = int.from_bytes(hashlib.sha256(instruction.encode()).digest()[:8], "big")
        email = emails[h % len(emails)]
        out.append(
            InjectionExample(category, split, splice(email, instruction, (h // 7) % 3), True)
        )
    return out


def malicious_tool_outputs(corpora: Path) -> list[str]:
    return [
        str(r["tool_output"])
        for r in _jsonl(corpora / "mcp-tool-definitions-labelled" / "tool_outputs.jsonl")
        if r.get("label") == "malicious"
    ]
