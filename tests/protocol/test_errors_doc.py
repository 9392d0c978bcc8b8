"""docs/errors.md lists exactly the error codes, -32011 reasons, hold codes and denial codes the
source uses: each table is compared with what the code defines, so neither can drift alone."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mcpward.protocol import errors
from mcpward.protocol.errors import UpstreamFailure
from mcpward.relay.foreign_codes import UPSTREAM_SERVER_ERROR

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
SRC = ROOT / "src" / "mcpward"


def table_after(heading: str | None) -> list[list[str]]:
    """The rows (cells stripped) of the first table after `heading` (None: the page's first)."""
    text = DOC if heading is None else DOC[DOC.index(heading) :]
    rows: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set(cells[0]) <= set("-: "):
                rows.append(cells)
        elif rows:
            break
    return rows[1:]  # without the header


def first_cells(heading: str | None) -> set[str]:
    return {re.sub(r"[`*]", "", row[0]) for row in table_after(heading)}


def string_codes(tree: ast.AST) -> set[str]:
    """`code="..."` in Deny(...)/Hold(...) calls, and the strings `hold_code` returns."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("Deny", "Hold"):
            for kw in node.keywords:
                if kw.arg == "code" and isinstance(kw.value, ast.Constant):
                    found.add(kw.value.value)
    return found


def returned_strings(tree: ast.AST, function: str) -> set[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return {
                r.value.value
                for r in ast.walk(node)
                if isinstance(r, ast.Return) and isinstance(r.value, ast.Constant)
            }
    raise AssertionError(f"no function {function}")


def parse(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"))


def test_every_error_code_is_listed_and_nothing_else() -> None:
    constants = {
        value
        for name, value in vars(errors).items()
        if name.isupper() and isinstance(value, int) and not isinstance(value, bool)
    }
    assert {int(c) for c in first_cells(None)} == constants | {UPSTREAM_SERVER_ERROR}


def test_the_upstream_reasons_are_the_closed_vocabulary() -> None:
    assert first_cells("### -32011 upstream reasons") == {r.value for r in UpstreamFailure}


def test_the_hold_codes_are_the_ones_hold_code_gives() -> None:
    codes = returned_strings(parse(SRC / "contracts" / "holds.py"), "hold_code")
    assert first_cells("### -32010 hold codes") == codes


def test_the_denial_codes_are_the_built_in_guards_and_the_executors() -> None:
    codes: set[str] = set()
    for path in (SRC / "guards").rglob("*.py"):
        codes |= string_codes(parse(path))
    executor = (SRC / "pipeline" / "executor.py").read_text(encoding="utf-8")
    assert 'code=f"guard_{failure}"' in executor  # failure is "timeout" or "error"
    codes |= {"guard_timeout", "guard_error"}
    assert first_cells("### -32013 denial codes") == codes
