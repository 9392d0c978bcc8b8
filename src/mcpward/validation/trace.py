"""Reads the monitor's (strace) log as it grows: connection attempts and filesystem writes,
made by the sandboxed server after it started (the isolator's own set-up is skipped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_LINE = re.compile(r"^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+|\?)(?:\s+(\w+))?")
_UNFINISHED = " <unfinished ...>"
_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$")
_FIRST_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC")
_NETWORK_FAMILIES = ("AF_INET", "AF_INET6", "AF_UNIX", "AF_PACKET", "AF_NETLINK")
_QUIET_PATHS = ("/dev/null", "/dev/tty", "/dev/pts/", "/dev/shm/", "/proc/", "/dev/fd/")
_CHANGES = {
    "creat", "truncate", "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir",
    "mkdirat", "rmdir", "symlink", "symlinkat", "link", "linkat",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Event:
    """One recorded attempt. `ok` is False when the kernel refused it (`error` says how)."""

    what: str  # connect | write
    syscall: str
    target: str  # an address (family and address) or a path
    ok: bool
    error: str

    def describe(self) -> str:
        result = "succeeded" if self.ok else f"failed ({self.error or 'no result'})"
        return f"{self.syscall} {self.target}: {result}"


class TraceLog:
    """Incremental reader: `take()` returns the events recorded since the last call."""

    def __init__(self, path: Path, isolator_binary: str) -> None:
        self.path = path
        self.isolator_binary = isolator_binary
        self._offset = 0
        self._started = False  # the server's own execve was seen
        self._pending: dict[str, str] = {}
        self._partial = ""

    def take(self) -> list[Event]:
        try:
            with self.path.open("r", encoding="utf-8", errors="replace") as handle:
                handle.seek(self._offset)
                chunk = handle.read()
                self._offset = handle.tell()
        except OSError:
            return []
        text = self._partial + chunk
        lines = text.split("\n")
        self._partial = lines.pop()  # an incomplete last line waits for the next read
        events = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def _line(self, line: str) -> Event | None:
        if line.endswith(_UNFINISHED):
            pid = line.split(None, 1)[0]
            self._pending[pid] = line[: -len(_UNFINISHED)]
            return None
        resumed = _RESUMED.match(line)
        if resumed:
            line = self._pending.pop(resumed.group(1), "") + resumed.group(3)
        match = _LINE.match(line)
        if match is None:
            return None
        _pid, syscall, args, ret, errno = match.groups()
        ok = ret not in ("?",) and not ret.startswith("-")
        if syscall == "execve":
            if ok and not self._started and self.isolator_binary not in args.split(",", 1)[0]:
                self._started = True
            return None
        if not self._started:
            return None
        if syscall in ("connect", "sendto", "sendmsg"):
            family = next((f for f in _NETWORK_FAMILIES if f"sa_family={f}" in args), None)
            if family is None:
                return None
            return Event("connect", syscall, _address(family, args), ok, errno or "")
        if syscall in ("open", "openat") and not any(f in args for f in _WRITE_FLAGS):
            return None
        if syscall not in _CHANGES and syscall not in ("open", "openat"):
            return None
        found = _FIRST_STRING.search(args)
        path = found.group(1) if found else "?"
        if path.startswith(_QUIET_PATHS) or _bytecode_cache(path):
            return None
        return Event("write", syscall, path, ok, errno or "")


def _address(family: str, args: str) -> str:
    if family == "AF_UNIX":
        found = _FIRST_STRING.search(args.split("sa_family=AF_UNIX", 1)[1])
        return f"unix:{found.group(1) if found else '(abstract)'}"
    port = re.search(r"htons\((\d+)\)", args)
    host = re.search(r'inet_(?:addr|pton)\((?:AF_INET6, )?"([^"]+)"', args)
    if host is None:
        return family
    return f"{host.group(1)}:{port.group(1) if port else '?'}"


def _bytecode_cache(path: str) -> bool:
    """An interpreter caching compiled code next to its sources (Python's __pycache__): not a
    write the tool made, and refused on the read-only filesystem anyway."""
    return "/__pycache__/" in path or path.endswith((".pyc", ".pyc.tmp"))
