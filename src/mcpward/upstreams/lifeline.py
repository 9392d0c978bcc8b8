"""A tiny supervisor between the gateway and a stdio upstream: no orphan survives the gateway.

Runs as `python -I -S lifeline.py FD -- COMMAND ARGS…` in its own process group. It starts COMMAND
(which inherits stdin/stdout/stderr) and waits; when the gateway dies, even by SIGKILL, the
lifeline pipe FD reads EOF and the whole process group is terminated, then killed.
On Linux it is also a child subreaper: a descendant that left the group (`setsid()`, a double
fork) is re-parented to it instead of init, and is killed too, when the gateway goes and when
the upstream exits. Standard library only, and little of it (no `site`, no `subprocess`): one
runs beside every wrapped server, so its memory is counted once per server.
"""

import contextlib
import os
import select
import signal
import sys
import time

GRACE_S = 1.0
SWEEP_S = 2.0  # at most this long killing descendants (a fork bomb is not chased for ever)
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Orphaned descendants re-parent to us, not to init (Linux >= 3.4); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes  # only here: ~2 ms, and only on the platform that has prctl

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def process_table() -> dict[int, tuple[int, bytes]]:
    """pid -> (parent pid, state letter) of every process, read from /proc ({} where there is
    none). Standard library only: the validator's sandbox watch reads it too."""
    table: dict[int, tuple[int, bytes]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # the command name sits in parentheses and may hold anything: read after the last one
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            table[int(name)] = (int(fields[1]), fields[0])
    return table


def own_children() -> list[int]:
    """The pids whose parent is this process (read from /proc; [] where there is none)."""
    me = os.getpid()
    return [pid for pid, (parent, _) in process_table().items() if parent == me]


class Child:
    """The upstream process: spawned with PATH lookup, the signals Python ignores (SIGPIPE,
    SIGXFSZ) back to their defaults, and our stdin/stdout/stderr, as `subprocess.Popen` would."""

    def __init__(self, argv: list[str]) -> None:
        self.pid = os.posix_spawnp(
            argv[0], argv, os.environ, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ)
        )
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit code once the upstream has exited (collected once), else None."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # collected elsewhere: it is gone
                self.returncode = -signal.SIGKILL
            else:
                if pid == self.pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def reap_orphans(child_pid: int) -> None:
    """Collect the exit status of re-parented descendants (never the upstream's own: that one
    is the Child's), so that exited orphans do not stay zombies under us."""
    while True:
        try:
            # WNOWAIT: look first; the upstream's status must stay for child.poll()
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid == child_pid or info.si_pid == 0:
            return
        try:
            os.waitpid(info.si_pid, 0)
        except ChildProcessError:
            return


def send_signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def kill_descendants(child: Child) -> None:
    """SIGKILL every process whose parent is us, reap, repeat: the children of each one killed
    re-parent to us in turn, so the whole tree goes, whatever sessions it made."""
    deadline = time.monotonic() + SWEEP_S
    while time.monotonic() < deadline:
        children = own_children()
        if not children:
            return
        for pid in children:
            send_signal(pid, signal.SIGKILL)
        for pid in children:
            if pid == child.pid:
                child.poll()  # the Child keeps its own status
                continue
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.01)


def take_down(child: Child, subreaper: bool) -> None:
    """TERM the group and our re-parented descendants, a grace period, then KILL them all."""
    group = os.getpgrp()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    if subreaper:
        for pid in own_children():
            send_signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)
    if subreaper:
        kill_descendants(child)
    os.killpg(group, signal.SIGKILL)  # the rest of the group, and us


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.stderr.write("usage: lifeline.py FD -- COMMAND [ARGS...]\n")
        return 2
    lifeline = int(sys.argv[1])
    # The lifeline stays ours; the upstream must not hold it open after we are gone.
    os.set_inheritable(lifeline, False)
    # SIGTERM to the group (the gateway's shutdown) is for the upstream, not for us: a handler,
    # not SIG_IGN, so that the upstream (exec resets handlers) gets the default action.
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    subreaper = become_subreaper()
    # A child's exit wakes the wait below at once (through the wakeup pipe), not on a tick.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    try:
        child = Child(sys.argv[3:])
    except OSError as exc:
        sys.stderr.write(f"mcpward: cannot start upstream {sys.argv[3]!r}: {exc.strerror}\n")
        return 127
    # Drop our copies of the upstream's stdin/stdout so its exit is seen at once as EOF.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    while True:
        code = child.poll()
        if code is not None:
            if subreaper:  # what the upstream left behind goes with it
                kill_descendants(child)
            return code
        ready, _, _ = select.select([lifeline, wake_r], [], [], 1.0)
        if wake_r in ready:
            os.read(wake_r, 512)
            if subreaper:
                reap_orphans(child.pid)
        if lifeline in ready and not os.read(lifeline, 1):
            take_down(child, subreaper)
            return 0


if __name__ == "__main__":
    sys.exit(main())
