"""Finds what can isolate a server on this machine and builds the sandboxed command line.

Bubblewrap (`bwrap`) gives its own user, network, PID, IPC and mount namespaces (no route out,
not even to the host's loopback), a read-only view of the filesystem with one throwaway writable
directory, no capabilities, and dies with its parent; `strace` watches every process in it for
connections and writes. Without both, nothing is run: the verdict is UNAVAILABLE.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LAUNCH = Path(__file__).with_name("launch.py")
# the syscalls the monitor records: connections, and anything that creates, changes or removes
TRACED = (
    "execve,connect,sendto,sendmsg,open,openat,creat,truncate,unlink,unlinkat,"
    "rename,renameat,renameat2,mkdir,mkdirat,rmdir,symlink,symlinkat,link,linkat"
)
PIDS_CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))


@dataclass(frozen=True, slots=True)
class Limits:
    """What one sandboxed server may spend (each also in the verdict's provenance)."""

    cpu_s: int = 60
    memory_bytes: int = 4 << 30  # address space; node reserves much more than it uses
    file_bytes: int = 64 << 20
    processes: int = 64
    call_timeout_s: float = 15.0
    start_timeout_s: float = 30.0
    total_timeout_s: float = 300.0  # the whole battery

    def to_json(self) -> dict[str, Any]:
        return {
            "cpu_s": self.cpu_s,
            "memory_bytes": self.memory_bytes,
            "file_bytes": self.file_bytes,
            "processes": self.processes,
            "call_timeout_s": self.call_timeout_s,
            "start_timeout_s": self.start_timeout_s,
            "total_timeout_s": self.total_timeout_s,
        }


@dataclass(frozen=True, slots=True)
class Isolator:
    """A working bubblewrap and strace, found on PATH."""

    bwrap: str
    strace: str

    def command(
        self,
        argv: list[str],
        workdir: Path,
        trace: Path,
        limits: Limits,
        pids_cgroup: Path | None,
    ) -> list[str]:
        """launch (limits) -> strace (observes) -> bwrap (isolates) -> the server."""
        launch = [sys.executable, "-I", str(LAUNCH), "--cpu", str(limits.cpu_s)]
        launch += ["--memory", str(limits.memory_bytes), "--files", str(limits.file_bytes)]
        launch += ["--processes", str(limits.processes)]
        if pids_cgroup is not None:
            launch += ["--pids-cgroup", str(pids_cgroup)]
        monitor = [self.strace, "-f", "-qq", "-s", "256", "-o", str(trace)]
        monitor += ["-e", f"trace={TRACED}", "-e", "signal=none"]
        return [*launch, "--", *monitor, *self.sandbox(workdir), "--", *argv]

    def sandbox(self, workdir: Path) -> list[str]:
        return [
            self.bwrap,
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc",
            "--tmpfs", "/run",  # the host's daemon sockets (a socket on a read-only mount
            # still accepts connections)
            "--bind", str(workdir), str(workdir),
            "--chdir", str(workdir),
            "--unshare-all",  # user, network, PID, IPC, UTS, cgroup: no route out at all
            "--uid", "65534",
            "--gid", "65534",
            "--die-with-parent",
            "--new-session",
            "--cap-drop", "ALL",
        ]  # fmt: skip


def find_isolator(search_path: str | None = None) -> tuple[Isolator | None, str]:
    """The isolator this machine offers, checked by running it once; else None and why."""
    bwrap = shutil.which("bwrap", path=search_path)
    strace = shutil.which("strace", path=search_path)
    if bwrap is None:
        return None, "bubblewrap (bwrap) is not installed"
    if strace is None:
        return None, "strace is not installed (no connection or write monitor)"
    isolator = Isolator(bwrap, strace)
    probe = Path("/")
    try:
        done = subprocess.run(
            [*isolator.sandbox(probe), "--", "/bin/true"],
            capture_output=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"bubblewrap cannot start here: {type(exc).__name__}"
    if done.returncode != 0:
        first = done.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
        return None, f"bubblewrap cannot isolate here: {first[0] if first else done.returncode}"
    return isolator, "bubblewrap + strace"


@contextlib.contextmanager
def pids_cgroup(limit: int) -> Iterator[Path | None]:
    """A pids cgroup capped at `limit` where this process may make one (cgroup v1 `pids`, or a
    v2 root with the controller); None elsewhere (RLIMIT_NPROC is then the only cap)."""
    made: Path | None = None
    for root in PIDS_CGROUP_ROOTS:
        if not (root / "pids.max").exists() and not (root / "cgroup.procs").exists():
            continue
        candidate = root / f"mcpward-validate-{uuid.uuid4().hex[:12]}"
        try:
            candidate.mkdir()
        except OSError:
            continue
        try:
            (candidate / "pids.max").write_text(str(limit))
        except OSError:
            with contextlib.suppress(OSError):
                candidate.rmdir()
            continue
        made = candidate
        break
    try:
        yield made
    finally:
        if made is not None:
            _empty_and_remove(made)


def _empty_and_remove(cgroup: Path) -> None:
    """Kill whatever is left in the cgroup, then remove it (retried while processes exit)."""
    import time

    for _ in range(50):
        try:
            pids = [int(p) for p in (cgroup / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        try:
            cgroup.rmdir()
            return
        except OSError:
            time.sleep(0.05)
