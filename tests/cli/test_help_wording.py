"""One wording per option across every command, and an example in every command's help
(issue #25, section 5): walks the whole typer app by click introspection."""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from mcpward.cli.main import build_app

ROOT = typer.main.get_command(build_app([]))


def leaves(command: Any = ROOT, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """Every command that runs something, as ("pins accept", its click command)."""
    subs = getattr(command, "commands", None)
    if not subs:
        yield " ".join(path), command
        return
    for name, sub in sorted(subs.items()):
        yield from leaves(sub, (*path, name))


LEAVES = dict(leaves())


def test_the_walk_sees_every_command() -> None:
    assert len(LEAVES) >= 50 and {"run", "holds", "pins accept", "ledger verify"} <= set(LEAVES)


def test_one_help_text_and_one_spelling_per_option() -> None:
    texts: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    spellings: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for name, command in LEAVES.items():
        for param in command.params:
            if param.param_type_name != "option":  # (typer carries its own copy of click)
                continue
            for opt in param.opts:
                texts[opt][param.help or ""].append(name)
            spellings[max(param.opts, key=len)].add(tuple(sorted(param.opts)))
    worded_twice = {opt: dict(by_text) for opt, by_text in texts.items() if len(by_text) > 1}
    assert worded_twice == {}, "give these options one text in mcpward.cli.options"
    assert {o: s for o, s in spellings.items() if len(s) > 1} == {}
    assert len(texts["--state-dir"][next(iter(texts["--state-dir"]))]) >= 30  # all share it


def _example_args(line: str, path: str) -> list[str]:
    """The arguments an example gives its command (shell redirections dropped)."""
    words = shlex.split(line)
    assert words[0] == "mcpward", line
    assert " ".join(words[1 : 1 + len(path.split())]) == path, f"{line!r} is not `{path}`"
    args = words[1 + len(path.split()) :]
    kept: list[str] = []
    skip = False
    for word in args:
        if skip:
            skip = False
        elif word in ("<", ">"):
            skip = True
        else:
            kept.append(word)
    return kept


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_every_command_shows_an_example_that_parses(path: str) -> None:
    command = LEAVES[path]
    epilog = command.epilog or ""
    assert epilog.startswith("Example: mcpward "), f"`mcpward {path} --help` shows no example"
    for line in epilog.split("\n\n"):
        args = _example_args(line.removeprefix("Example: "), path)
        # the options and arguments exist and fit (typer would refuse them as the user typed)
        command.make_context(path, args)
    shown = CliRunner().invoke(
        build_app(path.split()),
        [*path.split(), "--help"],
        env={"TERMINAL_WIDTH": "200"},
    )
    assert shown.exit_code == 0, shown.output
    assert epilog.split("\n\n")[0] in shown.output
