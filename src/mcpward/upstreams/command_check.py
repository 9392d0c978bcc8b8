"""Whether a stdio upstream's command can be started: found on the PATH the server gets (or at
its path) and executable. Checked by `config check`, `doctor` and before every start, so a
missing command is named with the OS error instead of surfacing as a crash."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Mapping
from pathlib import Path


def command_problem(
    command: str, env: Mapping[str, str] | None = None, cwd: Path | str | None = None
) -> str | None:
    """None if `command` would start; else one sentence naming it and the OS error."""
    if os.sep in command or (os.altsep and os.altsep in command):
        path = Path(command)
        if not path.is_absolute() and cwd is not None:
            path = Path(cwd) / path
        if not path.exists():
            return f"command {command!r} does not exist ({os.strerror(errno.ENOENT)})"
        if path.is_dir() or not os.access(path, os.X_OK):
            return f"command {command!r} cannot be run ({os.strerror(errno.EACCES)})"
        return None
    search = (env or os.environ).get("PATH", os.defpath)
    if shutil.which(command, path=search) is None:
        return (
            f"command {command!r} was not found on the PATH the server gets "
            f"({os.strerror(errno.ENOENT)}); install it or give its absolute path"
        )
    return None
