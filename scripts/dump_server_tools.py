"""Dump the tools/list of real MCP servers from PyPI and npm: the benign tool definitions of
`mcpward eval detectors` (false-positive rows of tool_poisoning and tool_shadowing).

    .venv/bin/python scripts/dump_server_tools.py --install            # all of the list
    .venv/bin/python scripts/dump_server_tools.py --install NAME ...   # only these

The list is `scripts/real_servers.jsonl`, one server a line: name, registry (npm | pypi),
package, optional bin (default: the package's only or same-named executable), args and env
(`{scratch}` is a throw-away directory with an empty git repository, `{dummy}` a fake key).
`--install` installs each package into its own directory under `.bench-servers/` (git-ignored):
npm with `--ignore-scripts` (no browser downloads), PyPI into a venv each. Each install and each
start has its own timeout; a server that cannot be installed or started, or lists no tool, is
skipped with its reason in the manifest.

Each server is started with the mcp SDK's stdio transport and asked for its tools over raw
JSON-RPC, so nothing is dropped or re-shaped on the way (the SDK's typed client would drop unknown
fields). API keys are dummies: only the tool list is read, no tool is called.

Output (`--out`, default tests/data/real_tools/tools.jsonl.gz): one line per tool with the
server's name, registry, package and version; and `manifest.json` beside it (every server of
the list: version and tool count, or why it was skipped). The older per-server dumps in
tests/data/real_servers/ (the dev and held-out batches of rounds 1-3) are kept as they were.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "scripts" / "real_servers.jsonl"
OUT = ROOT / "tests" / "data" / "real_tools" / "tools.jsonl.gz"
CACHE = ROOT / ".bench-servers"
DUMMY = "dummy-not-a-real-key"
INSTALL_TIMEOUT = 600.0
START_TIMEOUT = 60.0


class Skip(Exception):
    """The server cannot be dumped; the message says why (it goes into the manifest)."""


@dataclass(frozen=True)
class ServerSpec:
    name: str
    registry: str  # npm | pypi
    package: str
    bin: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return CACHE / self.registry / self.name


def load_list(path: Path) -> list[ServerSpec]:
    specs = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        row = json.loads(line)
        if row.get("registry") not in ("npm", "pypi"):
            raise SystemExit(f"{path}:{number}: registry must be npm or pypi")
        specs.append(
            ServerSpec(
                row["name"],
                row["registry"],
                row["package"],
                row.get("bin"),
                list(row.get("args", [])),
                dict(row.get("env", {})),
            )
        )
    return specs


def _run(command: list[str], timeout: float, **kwargs: Any) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        raise Skip(f"install timed out after {timeout:.0f} s") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise Skip(f"install failed (exit {done.returncode}): {tail[0][:200]}")


def install(spec: ServerSpec, timeout: float) -> None:
    """Install the package into its own directory under .bench-servers/ (once)."""
    if _installed(spec):
        return
    shutil.rmtree(spec.home, ignore_errors=True)
    spec.home.mkdir(parents=True)
    if spec.registry == "npm":
        no_browsers = {"PUPPETEER_SKIP_DOWNLOAD": "true", "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"}
        env = {**os.environ, **no_browsers}
        (spec.home / "package.json").write_text('{"private": true}\n')
        command = ["npm", "install", "--prefix", str(spec.home), "--ignore-scripts"]
        _run([*command, "--no-audit", "--no-fund", spec.package], timeout, env=env)
    else:
        _run([sys.executable, "-m", "venv", str(spec.home)], timeout)
        pip = [str(spec.home / "bin" / "pip"), "install", "-q", "--disable-pip-version-check"]
        _run([*pip, spec.package], timeout)


def install_all(specs: list[ServerSpec], timeout: float, jobs: int) -> dict[str, Skip]:
    """Install every server, a few at a time; the failures by server name."""

    def one(spec: ServerSpec) -> tuple[str, Skip | None]:
        try:
            install(spec, timeout)
        except Skip as why:
            return spec.name, why
        print(f"{spec.name}: installed", file=sys.stderr, flush=True)
        return spec.name, None

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(one, specs))
    return {name: why for name, why in done if why is not None}


def _installed(spec: ServerSpec) -> bool:
    if spec.registry == "npm":
        return (spec.home / "node_modules" / spec.package / "package.json").is_file()
    return (spec.home / "bin" / "python").is_file() and bool(version(spec) != "unknown")


def executable(spec: ServerSpec) -> Path:
    """The command that starts the server, from the list or the package's own metadata."""
    if spec.registry == "pypi":
        path = spec.home / "bin" / (spec.bin or spec.package)
        if not path.is_file():
            raise Skip(f"no executable {path.name} in the venv")
        return path
    meta = _npm_meta(spec)
    bins = meta.get("bin") or {}
    if isinstance(bins, str):
        bins = {spec.package.rsplit("/", 1)[-1]: bins}
    name = spec.bin
    if name is None:
        base = spec.package.rsplit("/", 1)[-1]
        name = base if base in bins else next(iter(bins), None) if len(bins) == 1 else None
        if name is None:
            mcp = [b for b in bins if "mcp" in b]
            name = mcp[0] if len(mcp) == 1 else None
    if name is None or name not in bins:
        raise Skip(f"no single executable in package.json bin ({sorted(bins)[:5]})")
    return spec.home / "node_modules" / spec.package / str(bins[name])


def _npm_meta(spec: ServerSpec) -> dict[str, Any]:
    try:
        meta = json.loads((spec.home / "node_modules" / spec.package / "package.json").read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def version(spec: ServerSpec) -> str:
    if spec.registry == "npm":
        return str(_npm_meta(spec).get("version", "unknown"))
    probe = "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))"
    python = spec.home / "bin" / "python"
    if not python.is_file():
        return "unknown"
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
            raise Skip(f"{method} failed: {str(msg)[:200]}")


def _fill(text: str, scratch: Path) -> str:
    return text.replace("{scratch}", str(scratch)).replace("{dummy}", DUMMY)


def server_params(spec: ServerSpec, scratch: Path) -> StdioServerParameters:
    program = executable(spec)
    command = [str(program)] if os.access(program, os.X_OK) else ["node", str(program)]
    if spec.registry == "npm" and program.suffix in (".js", ".mjs", ".cjs"):
        command = ["node", str(program)]
    env = {
        "PATH": f"{spec.home / 'node_modules' / '.bin'}:{os.environ.get('PATH', '')}",
        "HOME": str(scratch / "home"),
        **{k: _fill(v, scratch) for k, v in spec.env.items()},
    }
    args = [*command[1:], *(_fill(a, scratch) for a in spec.args)]
    return StdioServerParameters(command=command[0], args=args, env=env, cwd=str(scratch))


async def list_tools(params: StdioServerParameters) -> list[dict[str, Any]]:
    with open(os.devnull, "w") as sink:
        async with stdio_client(params, errlog=sink) as (read, write):
            init = {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "mcpward-dump", "version": "0"},
            }
            await _request(write, read, 1, "initialize", init)
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


async def dump(spec: ServerSpec, scratch: Path, timeout: float) -> list[dict[str, Any]]:
    params = server_params(spec, scratch)
    try:
        with anyio.fail_after(timeout):
            tools = await list_tools(params)
    except TimeoutError:
        raise Skip(f"no tools/list answer within {timeout:.0f} s") from None
    except Skip:
        raise
    except Exception as exc:  # the server exited or spoke something else: say which
        leaf: BaseException = exc
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        reason = (
            str(leaf)[:160] or "the server closed its output (exited, e.g. missing credentials)"
        )
        raise Skip(f"start failed: {type(leaf).__name__}: {reason}") from None
    if not tools:
        raise Skip("listed no tools (without credentials)")
    return tools


def _scratch(base: Path, name: str) -> Path:
    path = base / name
    (path / "home").mkdir(parents=True)
    # mcp-server-git refuses to start outside a repository; an empty one is enough.
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


async def main_async(args: argparse.Namespace) -> int:
    specs = [s for s in load_list(args.list) if not args.names or s.name in args.names]
    manifest: dict[str, Any] = {"list": str(args.list.relative_to(ROOT)), "servers": []}
    lines: list[str] = []
    failed = install_all(specs, args.install_timeout, args.jobs) if args.install else {}
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            entry: dict[str, Any] = {"server": spec.name, "registry": spec.registry,
                                     "package": spec.package}  # fmt: skip
            try:
                if spec.name in failed:
                    raise failed[spec.name]
                if not _installed(spec):
                    raise Skip("not installed (run with --install)")
                entry["version"] = version(spec)
                tools = await dump(spec, _scratch(Path(tmp), spec.name), args.timeout)
            except Skip as why:
                entry["skipped"] = str(why)
                print(f"{spec.name}: skipped: {why}", file=sys.stderr)
            else:
                entry["tools"] = len(tools)
                lines += [
                    json.dumps({**{k: entry[k] for k in ("server", "registry", "package",
                                                         "version")}, "tool": tool},
                               ensure_ascii=False, sort_keys=True)
                    for tool in tools
                ]  # fmt: skip
                print(f"{spec.name} {entry['version']}: {len(tools)} tools", flush=True)
            manifest["servers"].append(entry)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(args.out, "wb", mtime=0) as handle:  # mtime 0: same bytes, same file
        handle.write(("\n".join(lines) + "\n").encode("utf-8"))
    dumped = [e for e in manifest["servers"] if "tools" in e]
    manifest["dumped"] = len(dumped)
    manifest["tools"] = len(lines)
    (args.out.parent / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(dumped)} of {len(specs)} servers, {len(lines)} tools -> {args.out}")
    return 0 if dumped else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("names", nargs="*", help="Only these servers (default: all of the list).")
    parser.add_argument("--list", type=Path, default=LIST, help="Server list (JSON lines).")
    parser.add_argument("--out", type=Path, default=OUT, help="Output .jsonl.gz.")
    parser.add_argument("--install", action="store_true", help="Install into .bench-servers/.")
    parser.add_argument("--timeout", type=float, default=START_TIMEOUT, help="Per start (s).")
    parser.add_argument("--install-timeout", type=float, default=INSTALL_TIMEOUT)
    parser.add_argument("--jobs", type=int, default=3, help="Installs at a time.")
    args = parser.parse_args()
    args.list = args.list.resolve()
    args.out = args.out.resolve()
    sys.exit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
