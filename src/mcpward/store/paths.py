"""Where mcpward keeps its state: config `state_dir`, else $MCPWARD_STATE_DIR, else the XDG dir."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_state_dir


def state_dir_path(configured: Path | str | None = None) -> Path:
    """Where the state directory is, without creating it (`mcpward doctor` only looks)."""
    if configured is not None:
        return Path(configured).expanduser()
    if os.environ.get("MCPWARD_STATE_DIR"):
        return Path(os.environ["MCPWARD_STATE_DIR"]).expanduser()
    return Path(user_state_dir("mcpward", appauthor=False))


def resolve_state_dir(configured: Path | str | None = None) -> Path:
    """The state directory, created with mode 0700 if missing."""
    path = state_dir_path(configured)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path
