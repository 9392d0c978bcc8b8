"""A tiny supervisor between the gateway and a stdio upstream: no orphan survives the gateway.

Runs as `python -I lifeline.py FD -- COMMAND ARGS…` in its own process group. It starts COMMAND
(which inherits stdin/stdout/stderr) and waits; when the gateway dies, even by SIGKILL, the
lifeline pipe FD reads EOF and the whole process group is terminated, then killed.
Standard library only: it runs before anything else is imported.
"""

import os
import select
import signal
import subprocess
import sys
import time

GRACE_S = 1.0


def _kill_group(child: "subprocess.Popen[bytes]") -> None:
    group = os.getpgrp()
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)
    os.killpg(group, signal.SIGKILL)


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.stderr.write("usage: lifeline.py FD -- COMMAND [ARGS...]\n")
        return 2
    lifeline = int(sys.argv[1])
    # The lifeline stays ours; the upstream must not hold it open after we are gone.
    os.set_inheritable(lifeline, False)
    # SIGTERM to us (from the gateway's shutdown) means: take the group down.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        child = subprocess.Popen(sys.argv[3:])
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
            return code
        ready, _, _ = select.select([lifeline], [], [], 0.25)
        if ready and not os.read(lifeline, 1):
            _kill_group(child)
            return 0


if __name__ == "__main__":
    sys.exit(main())
