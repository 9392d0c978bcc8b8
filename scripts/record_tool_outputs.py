"""Record benign tool OUTPUTS from real MCP servers: the negatives of response_injection in
`mcpward eval detectors` (real results an agent reads, none of them an attack).

    .venv/bin/python scripts/dump_server_tools.py --install server-filesystem mcp-server-git \\
        mcp-server-time server-memory server-everything server-sequential-thinking
    git clone <a public repository> /tmp/repo       # the git server's history to read
    .venv/bin/python scripts/record_tool_outputs.py --git-repo /tmp/repo

Read-only calls with ordinary arguments, chosen with a fixed seed: the filesystem server reads
and lists files of the packages installed in .venv (site-packages is its only allowed root);
the git server shows the log and commits of the given repository; time, memory (a scratch
graph), everything and sequential-thinking answer ordinary requests. Nothing reaches the
network. Output: tests/data/real_outputs/outputs.jsonl.gz (server, package, version, tool,
arguments, result) and manifest.json beside it (counts per server and tool, the repository's
commit, the seed).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import random
import subprocess
import sys
import sysconfig
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
from dump_server_tools import (
    LIST,
    ServerSpec,
    Skip,
    _request,
    load_list,
    server_params,
    version,
)
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import JSONRPCNotification

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "real_outputs" / "outputs.jsonl.gz"
MAX_RESULT = 32 * 1024  # characters of JSON per recorded result; larger ones are skipped
TEXT_SUFFIXES = (".py", ".md", ".txt", ".rst", ".toml", ".cfg", ".json", ".yaml", ".yml")
ZONES = [
    "UTC", "Europe/London", "Europe/Paris", "Europe/Berlin", "Europe/Madrid", "Europe/Rome",
    "Europe/Moscow", "Asia/Tokyo", "Asia/Shanghai", "Asia/Kolkata", "Asia/Singapore",
    "Asia/Dubai", "Australia/Sydney", "America/New_York", "America/Chicago", "America/Denver",
    "America/Los_Angeles", "America/Sao_Paulo", "America/Mexico_City", "Africa/Cairo",
    "Africa/Johannesburg", "Pacific/Auckland", "America/Toronto", "Europe/Warsaw",
]  # fmt: skip
WORDS = [
    "invoice", "meeting", "Berlin office", "release 2.1", "database migration", "Alice Chen",
    "Bob Martin", "quarterly report", "support ticket", "design review", "kubernetes cluster",
    "customer feedback", "onboarding", "payment service", "mobile app", "roadmap",
]  # fmt: skip


def site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def _files(root: Path, rnd: random.Random, count: int) -> list[Path]:
    found = sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and (p.suffix in TEXT_SUFFIXES or p.name in ("METADATA", "LICENSE"))
        and 200 < p.stat().st_size < 12_000
        and "__pycache__" not in p.parts
    )
    return rnd.sample(found, min(count, len(found)))


def filesystem_calls(root: Path, rnd: random.Random) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in _files(root, rnd, 420):
        yield "read_text_file", {"path": str(path)}
    dirs = sorted({p.parent for p in _files(root, rnd, 400)})
    for directory in rnd.sample(dirs, min(120, len(dirs))):
        yield "list_directory", {"path": str(directory)}
    for path in _files(root, rnd, 40):
        yield "get_file_info", {"path": str(path)}
    for pattern in ("README", "LICENSE", "conftest", "__main__", "py.typed", "version"):
        yield "search_files", {"path": str(root / "pydantic"), "pattern": pattern}


def git_calls(repo: Path, rnd: random.Random) -> Iterator[tuple[str, dict[str, Any]]]:
    shas = subprocess.run(
        ["git", "-C", str(repo), "log", "--format=%H"], capture_output=True, text=True, check=True
    ).stdout.split()
    for sha in rnd.sample(shas, min(330, len(shas))):
        yield "git_show", {"repo_path": str(repo), "revision": sha}
    for count in (1, 3, 5, 10, 20):
        yield "git_log", {"repo_path": str(repo), "max_count": count}
    yield "git_status", {"repo_path": str(repo)}
    yield "git_branch", {"repo_path": str(repo), "branch_type": "all"}


def time_calls(rnd: random.Random) -> Iterator[tuple[str, dict[str, Any]]]:
    for zone in ZONES:
        yield "get_current_time", {"timezone": zone}
    for _ in range(60):
        source, target = rnd.sample(ZONES, 2)
        hour = f"{rnd.randrange(24):02d}:{rnd.choice(['00', '15', '30', '45'])}"
        yield "convert_time", {"source_timezone": source, "time": hour, "target_timezone": target}


def memory_calls(rnd: random.Random) -> Iterator[tuple[str, dict[str, Any]]]:
    people = ["Alice Chen", "Bob Martin", "Carla Diaz", "Deepak Rao", "Eva Novak", "Femi Ade"]
    teams = ["Payments", "Search", "Mobile", "Data Platform"]
    entities = [
        {"name": p, "entityType": "person",
         "observations": [f"works on {rnd.choice(teams)}", f"based in {rnd.choice(ZONES)}"]}
        for p in people
    ] + [{"name": t, "entityType": "team", "observations": [f"owns the {t.lower()} roadmap"]}
         for t in teams]  # fmt: skip
    yield "create_entities", {"entities": entities}
    yield (
        "create_relations",
        {
            "relations": [
                {"from": p, "to": rnd.choice(teams), "relationType": "member_of"} for p in people
            ]
        },
    )
    for person in people:
        yield (
            "add_observations",
            {
                "observations": [
                    {"entityName": person, "contents": [f"met on {rnd.randrange(1, 28)} May"]}
                ]
            },
        )
    for _ in range(3):
        yield "read_graph", {}
    for word in ["Alice", "Payments", "roadmap", "person", "team", "Europe", "May", "Search"]:
        yield "search_nodes", {"query": word}
    for _ in range(20):
        yield "open_nodes", {"names": rnd.sample(people + teams, 2)}


def everything_calls(rnd: random.Random) -> Iterator[tuple[str, dict[str, Any]]]:
    for _ in range(30):
        yield "echo", {"message": " ".join(rnd.sample(WORDS, 3))}
    for _ in range(30):
        yield "get-sum", {"a": rnd.randrange(1000), "b": rnd.randrange(1000)}
    for _ in range(10):
        yield (
            "get-structured-content",
            {"location": rnd.choice(["New York", "Chicago", "Los Angeles"])},
        )
    for kind in ("error", "success", "debug"):
        yield "get-annotated-message", {"messageType": kind, "includeImage": False}
    for _ in range(5):
        yield "get-resource-links", {"count": rnd.randrange(1, 6)}


def thinking_calls(rnd: random.Random) -> Iterator[tuple[str, dict[str, Any]]]:
    topics = ["the cache eviction policy", "a flaky integration test", "the release checklist",
              "a slow SQL query", "the on-call rota", "log retention"]  # fmt: skip
    for topic in topics:
        total = rnd.randrange(3, 7)
        for n in range(1, total + 1):
            yield "sequentialthinking", {
                "thought": f"Step {n} on {topic}: check the {rnd.choice(WORDS)} first.",
                "thoughtNumber": n, "totalThoughts": total, "nextThoughtNeeded": n < total,
            }  # fmt: skip


async def record(
    params: StdioServerParameters, calls: Iterator[tuple[str, dict[str, Any]]]
) -> list[tuple[str, dict[str, Any], Any]]:
    out = []
    with open("/dev/null", "w") as sink:
        async with stdio_client(params, errlog=sink) as (read, write):
            init = {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "mcpward-record", "version": "0"}}  # fmt: skip
            await _request(write, read, 1, "initialize", init)
            await write.send(
                SessionMessage(
                    JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
                )
            )
            for rid, (tool, arguments) in enumerate(calls, 2):
                try:
                    with anyio.fail_after(30):
                        result = await _request(
                            write, read, rid, "tools/call", {"name": tool, "arguments": arguments}
                        )
                except (Skip, TimeoutError) as why:
                    print(f"  {tool}: not recorded ({str(why)[:120]})", file=sys.stderr)
                    continue
                if len(json.dumps(result)) <= MAX_RESULT and not result.get("isError"):
                    out.append((tool, arguments, result))
    return out


async def main_async(args: argparse.Namespace) -> int:
    rnd = random.Random(args.seed)
    specs = {s.name: s for s in load_list(LIST)}
    root = site_packages()
    repo = args.git_repo.resolve()
    plan: list[tuple[ServerSpec, list[str], Iterator[tuple[str, dict[str, Any]]]]] = [
        (specs["server-filesystem"], [str(root)], filesystem_calls(root, rnd)),
        (specs["mcp-server-git"], ["-r", str(repo)], git_calls(repo, rnd)),
        (specs["mcp-server-time"], [], time_calls(rnd)),
        (specs["server-memory"], [], memory_calls(rnd)),
        (specs["server-everything"], ["stdio"], everything_calls(rnd)),
        (specs["server-sequential-thinking"], [], thinking_calls(rnd)),
    ]
    lines: list[str] = []
    counts: Counter[str] = Counter()
    versions = {}
    with tempfile.TemporaryDirectory() as tmp:
        for spec, spec_args, calls in plan:
            scratch = Path(tmp) / spec.name
            (scratch / "home").mkdir(parents=True)
            spec = ServerSpec(spec.name, spec.registry, spec.package, spec.bin, spec_args, spec.env)
            versions[spec.name] = version(spec)
            recorded = await record(server_params(spec, scratch), calls)
            for tool, arguments, result in recorded:
                counts[f"{spec.name}/{tool}"] += 1
                row = {"server": spec.name, "package": spec.package,
                       "version": versions[spec.name], "tool": tool,
                       "arguments": arguments, "result": result}  # fmt: skip
                lines.append(json.dumps(row, ensure_ascii=False, sort_keys=True))
            print(f"{spec.name} {versions[spec.name]}: {len(recorded)} outputs", flush=True)
    text = "\n".join(lines) + "\n"
    text = text.replace(str(root), "<site-packages>").replace(str(repo), "<repo>")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(args.out, "wb", mtime=0) as handle:
        handle.write(text.encode("utf-8"))
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()  # fmt: skip
    manifest = {"seed": args.seed, "outputs": len(lines), "versions": versions,
                "git_repo_head": head, "per_tool": dict(sorted(counts.items()))}  # fmt: skip
    (args.out.parent / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(lines)} outputs -> {args.out}")
    return 0 if lines else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--git-repo", type=Path, required=True, help="A clone to read.")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.out = args.out.resolve()
    sys.exit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
