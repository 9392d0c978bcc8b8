"""Where mcpward keeps its state: config `state_dir`, else $MCPWARD_STATE_DIR, else the XDG dir."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_state_dir


def resolve_state_dir(configured: Path | str | None = None) -> Path:
    """The state directory, created with mode 0700 if missing."""
    if configured is not None:
        path = Path(configured).expanduser()
    elif os.environ.get("MCPWARD_STATE_DIR"):
        path = Path(os.environ["MCPWARD_STATE_DIR"]).expanduser()
    else:
        path = Path(user_state_dir("mcpward", appauthor=False))
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path
