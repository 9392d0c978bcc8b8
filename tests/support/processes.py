"""Process-tree inspection through /proc: children of a pid, processes by command line, orphans.

Linux only (the gateway's no-orphan guarantee is tested where /proc exists).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    argv: tuple[str, ...]

    @property
    def cmdline(self) -> str:
        return " ".join(self.argv)


def read_process(pid: int) -> ProcessInfo | None:
    """The process as /proc sees it now; None if it is gone (or a zombie nobody needs to reap)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        raw_argv = (PROC / str(pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name sits in parentheses and may itself contain spaces or parentheses.
    fields = stat[stat.rindex(")") + 2 :].split()
    state, ppid, pgid, sid = fields[0], int(fields[1]), int(fields[2]), int(fields[3])
    argv = tuple(part.decode(errors="replace") for part in raw_argv.split(b"\0") if part)
    return ProcessInfo(pid=pid, ppid=ppid, pgid=pgid, sid=sid, state=state, argv=argv)


def all_processes() -> list[ProcessInfo]:
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            info = read_process(int(entry.name))
            if info is not None:
                found.append(info)
    return found


def is_alive(pid: int) -> bool:
    """Running or sleeping; a zombie has exited and counts as gone."""
    info = read_process(pid)
    return info is not None and info.state not in ("Z", "X")


def descendants(pid: int) -> list[ProcessInfo]:
    """Every live process below `pid` (children, grandchildren, ...)."""
    by_parent: dict[int, list[ProcessInfo]] = {}
    for info in all_processes():
        by_parent.setdefault(info.ppid, []).append(info)
    found: list[ProcessInfo] = []
    stack = [pid]
    while stack:
        for child in by_parent.get(stack.pop(), []):
            if child.state not in ("Z", "X"):
                found.append(child)
            stack.append(child.pid)
    return found


def find_processes(match: Callable[[ProcessInfo], bool]) -> list[ProcessInfo]:
    """Live processes (other than this one) for which `match` is true."""
    me = os.getpid()
    return [p for p in all_processes() if p.pid != me and p.state not in ("Z", "X") and match(p)]


def processes_mentioning(marker: str) -> list[ProcessInfo]:
    """Live processes whose command line contains `marker` (e.g. a test's unique tmp path).

    This finds orphans too: a process re-parented to init still carries its command line.
    """
    return find_processes(lambda p: marker in p.cmdline)


def wait_until_gone(pids: Iterable[int], timeout: float = 10.0) -> list[int]:
    """Wait for the pids to exit; returns those still alive when the timeout expires."""
    remaining = list(pids)
    deadline = time.monotonic() + timeout
    while remaining:
        remaining = [pid for pid in remaining if is_alive(pid)]
        if not remaining or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return remaining


def wait_for_processes(
    match: Callable[[ProcessInfo], bool], *, count: int = 1, timeout: float = 10.0
) -> list[ProcessInfo]:
    """Wait until at least `count` live processes match; returns them (fewer on timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        found = find_processes(match)
        if len(found) >= count or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def assert_no_survivors(marker: str, timeout: float = 10.0) -> None:
    """Fail if any process whose command line mentions `marker` is still alive after `timeout`."""
    pids = [p.pid for p in processes_mentioning(marker)]
    left = wait_until_gone(pids, timeout)
    if left:
        described = [f"{p.pid} (ppid {p.ppid}): {p.cmdline}" for p in map(read_process, left) if p]
        raise AssertionError(f"orphaned processes mentioning {marker!r}: {described}")


def kill_all(pids: Iterable[int], sig: int) -> None:
    """Signal each pid, ignoring ones already gone (test cleanup after a failure)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def tree_of(marker: str) -> list[int]:
    """The pids of processes mentioning `marker` and everything below them (snapshot now)."""
    roots = processes_mentioning(marker)
    pids = {p.pid for p in roots}
    for root in roots:
        pids.update(p.pid for p in descendants(root.pid))
    return sorted(pids)
