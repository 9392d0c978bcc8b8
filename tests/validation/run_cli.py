"""Runs `mcpward validate` as the operator would (a separate process) and reads its JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.validation.held import UPSTREAM


def run_validate(
    config: Path,
    *,
    env: Mapping[str, str] | None = None,
    upstream: str = UPSTREAM,
    extra: tuple[str, ...] = (),
) -> tuple[int, dict[str, Any]]:
    argv = [sys.executable, "-m", "mcpward.cli.main", "validate", upstream, "measure"]
    argv += ["--config", str(config), "--seed", "7", "--json", *extra]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout)
