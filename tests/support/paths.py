"""Where the tests find the repository, Node 22 and the pinned npm packages in .tools/.

Missing tools fail the test with the command that installs them; they are never skipped.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS_DIR = REPO_ROOT / ".tools"
NODE22 = TOOLS_DIR / "node22" / "bin" / "node"
NPM_MODULES = TOOLS_DIR / "npm" / "node_modules"
NODE_TOOLS_MANIFEST = REPO_ROOT / "scripts" / "node-tools" / "package.json"
SETUP_HINT = (
    "run `bash scripts/setup-node-tools.sh` "
    "(it installs Node 22 and the pinned npm packages into .tools/)"
)

SERVER_EVERYTHING = "@modelcontextprotocol/server-everything"
INSPECTOR = "@modelcontextprotocol/inspector"
CONFORMANCE = "@modelcontextprotocol/conformance"
CONFORMANCE_ALPHA = "conformance-alpha"


def venv_script(name: str) -> Path:
    """A console script installed next to the running interpreter (e.g. `mcp-server-time`)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.fail(f"{name} is not installed in {path.parent}; run `pip install -e '.[test]'`")
    return path


def node22() -> Path:
    if not NODE22.exists():
        pytest.fail(f"Node 22 is missing at {NODE22}; {SETUP_HINT}")
    return NODE22


@cache
def _pinned_versions() -> dict[str, str]:
    manifest = json.loads(NODE_TOOLS_MANIFEST.read_text(encoding="utf-8"))
    deps: dict[str, str] = manifest["dependencies"]
    return {name: spec.rsplit("@", 1)[-1] for name, spec in deps.items()}


def npm_package(name: str) -> Path:
    """The installed package directory, checked against the version pinned in scripts/node-tools."""
    pinned = _pinned_versions().get(name)
    if pinned is None:
        pytest.fail(f"{name} is not pinned in {NODE_TOOLS_MANIFEST}; add it there first")
    directory = NPM_MODULES / name
    manifest = directory / "package.json"
    if not manifest.exists():
        pytest.fail(f"npm package {name} is missing from {NPM_MODULES}; {SETUP_HINT}")
    installed = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    if installed != pinned:
        pytest.fail(f"{name} {installed} is installed but {pinned} is pinned; {SETUP_HINT}")
    return directory


def npm_bin(name: str, bin_name: str | None = None) -> Path:
    """The JavaScript file behind one of the package's `bin` entries."""
    directory = npm_package(name)
    bins = json.loads((directory / "package.json").read_text(encoding="utf-8")).get("bin")
    if isinstance(bins, str):
        return directory / bins
    if not isinstance(bins, dict) or not bins:
        pytest.fail(f"{name} declares no executable in its package.json")
    entry = bins[bin_name] if bin_name is not None else next(iter(bins.values()))
    return directory / entry


def server_everything_command() -> list[str]:
    """server-everything over stdio, run by Node 22 from the local install (never npx: see
    notes/mcp-protocol.md §7.2, npx hangs under the gateway's stripped environment)."""
    return [str(node22()), str(npm_bin(SERVER_EVERYTHING)), "stdio"]


def inspector_cli_command() -> list[str]:
    """The MCP Inspector v2 in CLI mode; append its options, then the target."""
    return [str(node22()), str(npm_bin(INSPECTOR, "mcp-inspector")), "--cli"]


def conformance_command(*, alpha: bool = False) -> list[str]:
    """The conformance harness: 0.1.16, or 0.2.0-alpha.12 (which knows the 2026-07-28 wire)."""
    return [str(node22()), str(npm_bin(CONFORMANCE_ALPHA if alpha else CONFORMANCE))]
