"""Applies the sandbox's resource limits, then execs the monitor and the isolator.

Runs as `python -I launch.py --cpu S --memory B --files B --processes N [--pids-cgroup DIR]
-- COMMAND ARGS...`. Standard library only; every limit is inherited by everything it starts.
"""

import argparse
import os
import resource
import sys


def main(argv: list[str]) -> None:
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="launch")
    parser.add_argument("--cpu", type=int, required=True)
    parser.add_argument("--memory", type=int, required=True)
    parser.add_argument("--files", type=int, required=True)
    parser.add_argument("--processes", type=int, required=True)
    parser.add_argument("--pids-cgroup")
    opts = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    resource.setrlimit(resource.RLIMIT_CPU, (opts.cpu, opts.cpu))
    resource.setrlimit(resource.RLIMIT_AS, (opts.memory, opts.memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (opts.files, opts.files))
    resource.setrlimit(resource.RLIMIT_NPROC, (opts.processes, opts.processes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if opts.pids_cgroup:
        # the process cap root is exempt from RLIMIT_NPROC: a pids cgroup enforces it for root
        with open(os.path.join(opts.pids_cgroup, "cgroup.procs"), "w") as handle:
            handle.write(str(os.getpid()))
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
