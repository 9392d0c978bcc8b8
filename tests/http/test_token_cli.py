"""`mcpward token new|hash`: the token is printed once; the config entry holds only its hash."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from mcpward.identity.models import StaticToken
from mcpward.identity.tokens import hash_token

CLI = [sys.executable, "-m", "mcpward.cli.main", "token"]


def test_token_new_prints_the_token_once_and_a_hashed_entry() -> None:
    done = subprocess.run(
        [*CLI, "new", "--client-id", "ide-7", "--ceiling", "no_destructive", "--role", "dev"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith("mcpw_") and len(token) > 40
    assert token not in done.stderr
    start = done.stderr.rindex("\n", 0, done.stderr.index("- client_id")) + 1
    entry = StaticToken.model_validate(yaml.safe_load(textwrap.dedent(done.stderr[start:]))[0])
    assert entry.client_id == "ide-7"
    assert entry.roles == ["dev"]
    assert entry.consent_ceiling.value == "no_destructive"
    assert entry.token_sha256 == hash_token(token)


def test_token_new_writes_a_file_only_its_owner_reads(tmp_path: Path) -> None:
    """`-o FILE` (mode 600 even where the file was looser): what `run --http --token-file` takes
    as is; a token file made with a shell redirection (mode 644) is refused there."""
    target = tmp_path / "laptop.token"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o644)
    done = subprocess.run(
        [*CLI, "new", "--client-id", "laptop", "-o", str(target)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    token = target.read_text(encoding="utf-8").strip()
    assert token.startswith("mcpw_") and done.stdout == "" and token not in done.stderr
    assert target.stat().st_mode & 0o777 == 0o600
    assert hash_token(token) in done.stderr  # the config entry, as without -o


def test_token_hash_reads_stdin() -> None:
    token = "a-token-from-elsewhere-0123456789"
    done = subprocess.run(
        [*CLI, "hash"], input=token + "\n", capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout.strip() == hash_token(token)
    short = subprocess.run(
        [*CLI, "hash"], input="short\n", capture_output=True, text=True, timeout=60
    )
    assert short.returncode == 2
