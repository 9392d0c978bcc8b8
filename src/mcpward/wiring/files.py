"""Atomic file replacement: a temp file beside the target, same mode and owner, fsync, rename."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def replace_atomically(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write `data` to `path` in one rename; keeps an existing file's mode (and owner, as root).

    A symlinked config (dotfile managers) is followed: the link stays, its target is replaced.
    """
    target = path.resolve()
    uid = gid = None
    try:
        info = target.stat()
        mode = info.st_mode & 0o7777 if mode is None else mode
        uid, gid = info.st_uid, info.st_gid
    except FileNotFoundError:
        mode = 0o600 if mode is None else mode
    tmp = target.with_name(f".{target.name}.mcpward-{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            if uid is not None and hasattr(os, "geteuid") and os.geteuid() == 0:
                os.fchown(fd, uid, gid if gid is not None else -1)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
