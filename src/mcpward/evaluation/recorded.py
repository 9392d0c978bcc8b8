"""Loading what was recorded from real servers and packages (committed under tests/data, made by
scripts/dump_server_tools.py, record_tool_outputs.py and build_ordinary_text.py): the round-4
tool dumps, benign tool outputs, and the ordinary-text documents. Reading only: CI never
installs or starts anything.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpward.evaluation.corpora import CorpusMissing, RealServer


def _gz_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield json.loads(line)
    except FileNotFoundError:
        raise CorpusMissing(f"missing recorded data {path}") from None


def text_key(text: str) -> str:
    """A document's id in the labels: the first 12 hex digits of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def bench_servers(data: Path) -> list[RealServer]:
    """real_tools/tools.jsonl.gz grouped by server (the list's order), batch 'bench'."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in _gz_jsonl(data / "real_tools" / "tools.jsonl.gz"):
        grouped.setdefault(row["server"], []).append(row["tool"])
    return [RealServer(server, "bench", tools) for server, tools in grouped.items()]


def unique_definitions(servers: list[RealServer]) -> list[tuple[str, dict[str, Any]]]:
    """(server, tool) once per distinct definition (name, description, input schema)."""
    seen: set[str] = set()
    out = []
    for server in servers:
        for tool in server.tools:
            shape = {k: tool.get(k) for k in ("name", "description", "inputSchema")}
            key = text_key(json.dumps(shape, sort_keys=True, ensure_ascii=False))
            if key not in seen:
                seen.add(key)
                out.append((server.server, tool))
    return out


@dataclass(frozen=True, slots=True)
class RecordedOutput:
    server: str
    tool: str
    result: dict[str, Any]

    def texts(self) -> list[str]:
        return [
            str(c["text"])
            for c in self.result.get("content", [])
            if isinstance(c, dict) and c.get("type") == "text" and c.get("text")
        ]


def tool_outputs(data: Path) -> list[RecordedOutput]:
    return [
        RecordedOutput(r["server"], r["tool"], r["result"])
        for r in _gz_jsonl(data / "real_outputs" / "outputs.jsonl.gz")
    ]


@dataclass(frozen=True, slots=True)
class Document:
    id: str  # text_key of the text
    source: str
    text: str


def ordinary_documents(data: Path, emails: list[str]) -> list[Document]:
    """Code and JSON files, the recorded outputs' texts and the given emails, one document each
    and each text once."""
    docs = [
        Document(text_key(r["text"]), str(r["source"]), str(r["text"]))
        for r in _gz_jsonl(data / "ordinary_text" / "docs.jsonl.gz")
    ]
    for output in tool_outputs(data):
        text = "\n".join(output.texts())
        docs.append(Document(text_key(text), f"output:{output.server}/{output.tool}", text))
    docs += [Document(text_key(t), "email", t) for t in emails]
    unique: dict[str, Document] = {}
    for doc in docs:
        if doc.text:
            unique.setdefault(doc.id, doc)
    return list(unique.values())


def secret_labels(data: Path) -> dict[str, str]:
    """Documents read and found to hold a real credential (id -> why), kept out of the rows."""
    path = data / "ordinary_text" / "labels.json"
    try:
        labels = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise CorpusMissing(f"missing recorded data {path}") from None
    return {str(k): str(v) for k, v in labels["secrets"].items()}
