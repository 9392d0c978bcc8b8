"""The CLI reads like one tool: grouped commands, flags without a `<bool>` placeholder, and the
files an adopter looks for (issue #25, section 5)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.paths import REPO_ROOT


def _help(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mcpward.cli.main", *args, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "120", "TERM": "dumb"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_commands_are_grouped_in_order() -> None:
    panels = re.findall(r"╭─ (\w+) ─", _help())
    assert panels == ["Options", "Run", "Review", "Evidence", "Setup"]


def test_a_flag_shows_no_value_placeholder() -> None:
    line = next(line for line in _help("wire").splitlines() if "--dry-run" in line)
    assert "<bool>" not in line and "Show the diff" in line
    for args in ((), ("wire",), ("pins",), ("pins", "accept")):
        shown = _help(*args)
        assert "Show this message" in shown and "<bool>" not in shown, args


def test_license_and_changelog_are_there() -> None:
    license_text = (REPO_ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.startswith("# Changelog") and "replace_defaults" in changelog


def test_one_config_schema_whichever_command_prints_it() -> None:
    def printed(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "mcpward.cli.main", *args], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert printed("config", "schema") == printed("schema", "config")


def test_the_readme_says_mcpward_after_the_set_up_lines() -> None:
    """One convention (issue #25): the two opening commands spell out .venv/bin, then the README
    says once that .venv/bin is on PATH and every command is `mcpward ...`."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    head, _, rest = readme.partition("assume `.venv/bin` is on your PATH")
    assert rest, "the README no longer says once that the commands assume .venv/bin on PATH"
    assert head.count(".venv/bin/mcpward") == 1 and head.count(".venv/bin/pytest") == 1
    blocks = re.findall(r"```bash\n(.*?)```", rest, flags=re.S)
    assert blocks and all(".venv/bin/" not in block for block in blocks)
    assert "`.venv/bin/mcpward " not in rest  # inline commands too
