"""`mcpward token new|hash`: the token is printed once; the config entry holds only its hash."""

from __future__ import annotations

import subprocess
import sys
import textwrap

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
