"""How a wired entry starts the gateway, and how an entry already behind mcpward is recognised.

Desktop clients start servers with a minimal PATH, so the command is an absolute path.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path, PurePath

EXECUTABLE_NAMES = ("mcpward", "mcpward.exe")
MODULE_PREFIX = ("-m", "mcpward")
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class Launcher:
    """The command of a wired entry and the arguments before `run`."""

    command: str
    prefix: tuple[str, ...] = ()

    def wrap(self, upstream_id: str, env_names: list[str], original: list[str]) -> list[str]:
        """The args of a wired entry: the gateway wrapping the original command line.

        The client still sets the entry's `env` on the process it starts (the gateway); each
        name is passed on with --pass-env, so values never appear on a command line.
        """
        passed = [part for name in env_names for part in ("--pass-env", name)]
        return [*self.prefix, "run", "--id", upstream_id, *passed, "--", *original]


def find_launcher() -> Launcher:
    """`mcpward` on PATH, else the one beside this interpreter, else `python -m mcpward`."""
    found = shutil.which("mcpward")
    if found:
        return Launcher(os.path.abspath(found))
    beside = Path(sys.executable).with_name("mcpward.exe" if os.name == "nt" else "mcpward")
    if beside.is_file() and os.access(beside, os.X_OK):
        return Launcher(str(beside))
    return Launcher(sys.executable, MODULE_PREFIX)


def is_wired(command: str, args: list[str]) -> bool:
    """True if the entry already runs `mcpward run …` (wired by us or by hand)."""
    name = PurePath(command.replace("\\", "/")).name.lower()
    if name in EXECUTABLE_NAMES:
        return args[:1] == ["run"]
    return tuple(args[:2]) == MODULE_PREFIX and args[2:3] == ["run"]


def upstream_id_for(name: str, taken: set[str]) -> str:
    """A valid upstream id (`[A-Za-z0-9][A-Za-z0-9_-]{0,62}`) from a server's name, unique."""
    base = _ID_UNSAFE.sub("-", name).strip("-_")[:60] or "server"
    candidate, n = base, 2
    while candidate.lower() in taken:
        candidate = f"{base}-{n}"
        n += 1
    taken.add(candidate.lower())
    return candidate
