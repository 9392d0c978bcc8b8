"""Dump the tools/list of real, widely used MCP servers into tests/data/real_servers/*.json.

The dumps are the benign side of the false-positive measurement (`mcpward eval detectors`).
Not dumped: mcp-server-sqlite (crashes with mcp 2.x) and server-redis (exits without a
Redis). Install the servers first (both stay outside the repository, `.tools/` is git-ignored):

    mkdir -p .tools/mcp-servers && cd .tools/mcp-servers && npm init -y && \\
      PUPPETEER_SKIP_DOWNLOAD=true npm install --ignore-scripts <the npm packages below>
    python3 -m venv .tools/pyservers && .tools/pyservers/bin/pip install <dev-batch PyPI packages>
    python3 -m venv .tools/pyheldout && .tools/pyheldout/bin/pip install <held-out PyPI packages>

Then: `.venv/bin/python scripts/dump_server_tools.py [NAME ...]`. Each server is started with the
mcp SDK's stdio transport and asked for its tools over raw JSON-RPC, so nothing is dropped or
re-shaped on the way (the SDK's typed client would drop unknown fields). API keys are dummies:
only the tool list is read, no tool is called, and nothing leaves the host.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "real_servers"
NPM = ROOT / ".tools" / "mcp-servers"
PYS = ROOT / ".tools" / "pyservers" / "bin"
PYH = ROOT / ".tools" / "pyheldout" / "bin"  # the held-out batch's PyPI servers
DUMMY = "dummy-not-a-real-key"


@dataclass(frozen=True)
class ServerSpec:
    name: str
    registry: str  # npm | pypi
    package: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    # dev: inspected while the detectors were tuned; heldout: dumped after tuning froze and only
    # ever measured (the false-positive rate on it is the honest one).
    batch: str = "dev"


def _bin(name: str, *args: str) -> list[str]:
    return [str(NPM / "node_modules" / ".bin" / name), *args]


def heldout_specs() -> list[ServerSpec]:
    def spec(
        name: str, package: str, cmd: list[str], env: dict[str, str] | None = None
    ) -> ServerSpec:
        return ServerSpec(name, "npm", package, cmd, env or {}, batch="heldout")

    return [
        spec("server-everart", "@modelcontextprotocol/server-everart",
             _bin("mcp-server-everart"), {"EVERART_API_KEY": DUMMY}),
        spec("server-aws-kb-retrieval", "@modelcontextprotocol/server-aws-kb-retrieval",
             _bin("mcp-server-aws-kb-retrieval"),
             {"AWS_ACCESS_KEY_ID": DUMMY, "AWS_SECRET_ACCESS_KEY": DUMMY,
              "AWS_REGION": "us-east-1"}),
        spec("executeautomation-playwright", "@executeautomation/playwright-mcp-server",
             _bin("playwright-mcp-server")),
        spec("browserbase", "@browserbasehq/mcp-server-browserbase", _bin("mcp-server-browserbase"),
             {"BROWSERBASE_API_KEY": DUMMY, "BROWSERBASE_PROJECT_ID": DUMMY}),
        spec("figma-developer-mcp", "figma-developer-mcp",
             _bin("figma-developer-mcp", "--stdio", f"--figma-api-key={DUMMY}")),
        spec("hubspot-mcp-server", "@hubspot/mcp-server", _bin("mcp-hubspot"),
             {"PRIVATE_APP_ACCESS_TOKEN": DUMMY}),
        spec("sentry-mcp", "@sentry/mcp-server", _bin("sentry-mcp", f"--access-token={DUMMY}")),
        ServerSpec("arxiv-mcp-server", "pypi", "arxiv-mcp-server",
                   [str(PYH / "arxiv-mcp-server"), "--storage-path", "/tmp/mcpward-arxiv"],
                   batch="heldout"),
        ServerSpec("duckduckgo-mcp-server", "pypi", "duckduckgo-mcp-server",
                   [str(PYH / "duckduckgo-mcp-server")], batch="heldout"),
        ServerSpec("excel-mcp-server", "pypi", "excel-mcp-server",
                   [str(PYH / "excel-mcp-server"), "stdio"], batch="heldout"),
    ]  # fmt: skip


def _node(package: str, script: str, *args: str) -> list[str]:
    return ["node", str(NPM / "node_modules" / package / script), *args]


def specs(scratch: Path) -> list[ServerSpec]:
    fsdir = str(scratch)
    return [
        ServerSpec("mcp-server-time", "pypi", "mcp-server-time", [str(PYS / "mcp-server-time")]),
        ServerSpec("mcp-server-fetch", "pypi", "mcp-server-fetch", [str(PYS / "mcp-server-fetch")]),
        ServerSpec(
            "mcp-server-git", "pypi", "mcp-server-git", [str(PYS / "mcp-server-git"), "-r", fsdir]
        ),
        ServerSpec(
            "server-everything",
            "npm",
            "@modelcontextprotocol/server-everything",
            _node("@modelcontextprotocol/server-everything", "dist/index.js", "stdio"),
        ),
        ServerSpec(
            "server-filesystem",
            "npm",
            "@modelcontextprotocol/server-filesystem",
            _node("@modelcontextprotocol/server-filesystem", "dist/index.js", fsdir),
        ),
        ServerSpec(
            "server-memory",
            "npm",
            "@modelcontextprotocol/server-memory",
            _node("@modelcontextprotocol/server-memory", "dist/index.js"),
            {"MEMORY_FILE_PATH": str(scratch / "memory.jsonl")},
        ),
        ServerSpec(
            "server-sequential-thinking",
            "npm",
            "@modelcontextprotocol/server-sequential-thinking",
            _node("@modelcontextprotocol/server-sequential-thinking", "dist/index.js"),
        ),
        ServerSpec(
            "server-github",
            "npm",
            "@modelcontextprotocol/server-github",
            _node("@modelcontextprotocol/server-github", "dist/index.js"),
            {"GITHUB_PERSONAL_ACCESS_TOKEN": DUMMY},
        ),
        ServerSpec(
            "server-gitlab",
            "npm",
            "@modelcontextprotocol/server-gitlab",
            _node("@modelcontextprotocol/server-gitlab", "dist/index.js"),
            {"GITLAB_PERSONAL_ACCESS_TOKEN": DUMMY, "GITLAB_API_URL": "http://127.0.0.1:9/api/v4"},
        ),
        ServerSpec(
            "server-slack",
            "npm",
            "@modelcontextprotocol/server-slack",
            _node("@modelcontextprotocol/server-slack", "dist/index.js"),
            {"SLACK_BOT_TOKEN": DUMMY, "SLACK_TEAM_ID": "T00000000"},
        ),
        ServerSpec(
            "server-puppeteer",
            "npm",
            "@modelcontextprotocol/server-puppeteer",
            _node("@modelcontextprotocol/server-puppeteer", "dist/index.js"),
        ),
        ServerSpec(
            "server-google-maps",
            "npm",
            "@modelcontextprotocol/server-google-maps",
            _node("@modelcontextprotocol/server-google-maps", "dist/index.js"),
            {"GOOGLE_MAPS_API_KEY": DUMMY},
        ),
        ServerSpec(
            "server-brave-search",
            "npm",
            "@modelcontextprotocol/server-brave-search",
            _node("@modelcontextprotocol/server-brave-search", "dist/index.js"),
            {"BRAVE_API_KEY": DUMMY},
        ),
        ServerSpec(
            "server-postgres",
            "npm",
            "@modelcontextprotocol/server-postgres",
            _node(
                "@modelcontextprotocol/server-postgres",
                "dist/index.js",
                "postgresql://127.0.0.1:9/none",
            ),
        ),
        ServerSpec("playwright-mcp", "npm", "@playwright/mcp", _node("@playwright/mcp", "cli.js")),
        ServerSpec(
            "chrome-devtools-mcp",
            "npm",
            "chrome-devtools-mcp",
            [str(NPM / "node_modules" / ".bin" / "chrome-devtools-mcp")],
        ),
        ServerSpec(
            "notion-mcp-server",
            "npm",
            "@notionhq/notion-mcp-server",
            [str(NPM / "node_modules" / ".bin" / "notion-mcp-server")],
            {"NOTION_TOKEN": DUMMY},
        ),
        ServerSpec(
            "context7-mcp",
            "npm",
            "@upstash/context7-mcp",
            [str(NPM / "node_modules" / ".bin" / "context7-mcp")],
        ),
        ServerSpec(
            "firecrawl-mcp",
            "npm",
            "firecrawl-mcp",
            [str(NPM / "node_modules" / ".bin" / "firecrawl-mcp")],
            {"FIRECRAWL_API_KEY": "fc-" + "0" * 32},
        ),
        ServerSpec(
            "tavily-mcp",
            "npm",
            "tavily-mcp",
            [str(NPM / "node_modules" / ".bin" / "tavily-mcp")],
            {"TAVILY_API_KEY": DUMMY},
        ),
        ServerSpec(
            "exa-mcp-server",
            "npm",
            "exa-mcp-server",
            [str(NPM / "node_modules" / ".bin" / "exa-mcp-server")],
            {"EXA_API_KEY": DUMMY},
        ),
        ServerSpec(
            "desktop-commander",
            "npm",
            "@wonderwhy-er/desktop-commander",
            [str(NPM / "node_modules" / ".bin" / "desktop-commander")],
        ),
        ServerSpec(
            "mcp-server-kubernetes",
            "npm",
            "mcp-server-kubernetes",
            [str(NPM / "node_modules" / ".bin" / "mcp-server-kubernetes")],
        ),
        ServerSpec(
            "mongodb-mcp-server",
            "npm",
            "mongodb-mcp-server",
            [str(NPM / "node_modules" / ".bin" / "mongodb-mcp-server")],
        ),
    ]


def _version(spec: ServerSpec) -> str:
    if spec.registry == "npm":
        meta = NPM / "node_modules" / spec.package / "package.json"
        try:
            return str(json.loads(meta.read_text())["version"])
        except (OSError, KeyError, ValueError):
            return "unknown"
    probe = "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))"
    python = (PYH if spec.batch == "heldout" else PYS) / "python"
    done = subprocess.run([str(python), "-c", probe, spec.package], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


async def _request(write: Any, read: Any, rid: int, method: str, params: dict[str, Any]) -> Any:
    await write.send(
        SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=rid, method=method, params=params))
    )
    while True:
        item = await read.receive()
        if isinstance(item, Exception):
            continue
        msg = item.message
        if isinstance(msg, JSONRPCResponse) and msg.id == rid:
            return msg.result
        if getattr(msg, "id", None) == rid:
            raise RuntimeError(f"{method} failed: {msg}")


async def list_tools(spec: ServerSpec) -> list[dict[str, Any]]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), **spec.env}
    params = StdioServerParameters(command=spec.command[0], args=spec.command[1:], env=env)
    with open(os.devnull, "w") as sink:
        async with stdio_client(params, errlog=sink) as (read, write):
            await _request(
                write,
                read,
                1,
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "mcpward-dump", "version": "0"},
                },
            )
            await write.send(
                SessionMessage(
                    JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
                )
            )
            tools: list[dict[str, Any]] = []
            cursor: str | None = None
            rid = 2
            while True:
                page = await _request(
                    write, read, rid, "tools/list", {"cursor": cursor} if cursor else {}
                )
                tools += page.get("tools", [])
                cursor = page.get("nextCursor")
                rid += 1
                if not cursor:
                    return tools


async def main_async(names: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        # mcp-server-git refuses to start outside a repository; an empty one is enough.
        subprocess.run(["git", "init", "-q", str(scratch)], check=True)
        for spec in specs(scratch) + heldout_specs():
            if names and spec.name not in names:
                continue
            try:
                with anyio.fail_after(60):
                    tools = await list_tools(spec)
            except Exception as exc:
                print(f"{spec.name}: FAILED ({type(exc).__name__}: {exc})", file=sys.stderr)
                failures += 1
                continue
            record = {
                "server": spec.name,
                "registry": spec.registry,
                "package": spec.package,
                "version": _version(spec),
                "batch": spec.batch,
                "tools": tools,
            }
            path = OUT / f"{spec.name}.json"
            path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", "utf-8")
            print(f"{spec.name} ({spec.batch}): {len(tools)} tools -> {path.relative_to(ROOT)}")
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="Only these servers (default: all).")
    args = parser.parse_args()
    sys.exit(asyncio.run(main_async(args.names)))


if __name__ == "__main__":
    main()
