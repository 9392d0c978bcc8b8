"""Loading the development sets we wrote ourselves (src/mcpward/evaluation/data, see its
README): multilingual poisoned and benign tool definitions. Development only: tuned on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True, slots=True)
class LabelledDefinition:
    id: str
    lang: str
    poisoned: bool
    family: str | None
    tool: dict[str, Any]


def multilingual_definitions(path: Path | None = None) -> list[LabelledDefinition]:
    source = path or DATA / "multilingual_definitions.jsonl"
    out: list[LabelledDefinition] = []
    with source.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            record = json.loads(line)
            out.append(
                LabelledDefinition(
                    id=record["id"],
                    lang=record["lang"],
                    poisoned=record["label"] == "poisoned",
                    family=record.get("family"),
                    tool=record["tool"],
                )
            )
    return out
