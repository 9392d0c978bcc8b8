"""The module graph of `mcpward` has no import cycles (TYPE_CHECKING imports included), and the
layers point down (cli -> fronts -> relay -> pipeline/guards -> upstreams -> streams/egress),
nothing imports the CLI, guards never import the relay, fronts or connectors,
and `protocol` imports nothing of ours but itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "mcpward"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base]) if base else ".".join(anchor)
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                # importing a.b.c runs a/__init__ and a/b/__init__ first: those are edges too
                while target and target != "mcpward":
                    if target != name and not name.startswith(target + "."):
                        edges.add(target)
                    target = target.rpartition(".")[0]
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


ABOVE_RELAY = ("mcpward.fronts", "mcpward.cli")
NETWORK_AND_ABOVE = ("mcpward.relay", "mcpward.fronts", "mcpward.upstreams", "mcpward.cli")


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_only_the_validate_command_loads_tier_3() -> None:
    """`mcpward run` never pays for the validator: only `cli.validate` imports it."""
    importers = sorted(
        module
        for module, targets in _graph().items()
        if not module.startswith("mcpward.validation")
        and any(t == "mcpward.validation" or t.startswith("mcpward.validation.") for t in targets)
    )
    assert importers == ["mcpward.cli.validate"]


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        ("mcpward.guards", NETWORK_AND_ABOVE),
        ("mcpward.pipeline", (*NETWORK_AND_ABOVE, "mcpward.guards")),
        ("mcpward.relay", (*ABOVE_RELAY, "mcpward.guards")),
        # connectors sit below the relay: they know no sessions, guards or fronts
        (
            "mcpward.upstreams",
            (*NETWORK_AND_ABOVE[:2], "mcpward.cli", "mcpward.pipeline", "mcpward.guards"),
        ),
        (
            "mcpward.streams",
            (*NETWORK_AND_ABOVE, "mcpward.pipeline", "mcpward.guards", "mcpward.config"),
        ),
        (
            "mcpward.egress",
            (*NETWORK_AND_ABOVE, "mcpward.pipeline", "mcpward.guards", "mcpward.config"),
        ),
        ("mcpward.config", NETWORK_AND_ABOVE),
        ("mcpward.contracts", NETWORK_AND_ABOVE),
        ("mcpward.wiring", NETWORK_AND_ABOVE),
        ("mcpward.console", NETWORK_AND_ABOVE),
        # tier 3 runs in its own process: it uses connectors, never sessions, guards or fronts
        (
            "mcpward.validation",
            (*ABOVE_RELAY, "mcpward.relay", "mcpward.pipeline", "mcpward.guards"),
        ),
        (
            "mcpward.protocol",
            ("mcpward.relay", "mcpward.pipeline", "mcpward.guards", "mcpward.cli"),
        ),
    ],
)
def test_layers_point_down(layer: str, forbidden: tuple[str, ...]) -> None:
    graph = _graph()
    bad = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module == layer or module.startswith(layer + ".")
        for target in targets
        if any(target == f or target.startswith(f + ".") for f in forbidden)
    )
    assert bad == []
