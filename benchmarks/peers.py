"""Peer gateways for the benchmarks: each in its own venv under `.bench-peers/` (gitignored).

    .venv/bin/python benchmarks/peers.py            # install (or find) every peer, print where

Each peer is installed once with pip from PyPI into `.bench-peers/<name>-py<X.Y>/` and re-used
while its requirement string is unchanged. A peer that cannot be installed here (no suitable
Python, no network, a failing build) is skipped by the benchmark with a printed reason; nothing
else depends on it.

- `mcpindex-gate` (`mcpindex-proxy`): the contract-drift gate of a peer project; needs
  Python >= 3.12, found on PATH, under `pyenv root`, or given as `$BENCH_PEER_PYTHON312`.
- `mcp-firewall` (`mcp-firewall wrap --config FILE -- CMD`): a stdio gateway with a policy
  pipeline and an audit log. Its global rate limit (200 calls per 60 s by default) is raised in
  the config file the benchmarks write (`globalRateLimit`, see `firewall_config`), so it is
  measured, not throttled. It has no flag for it; the config file is the only way.
- `mcp-proxy` (`mcp-proxy --port P -- CMD`): a stdio <-> Streamable HTTP bridge on the mcp SDK
  1.x, no guards. It needs `mcp<2`, which is why it cannot share mcpward's venv.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".bench-peers"


@dataclass(frozen=True)
class PeerSpec:
    name: str  # the venv's name and the distribution name
    requirement: str  # what pip installs
    script: str  # the console script the benchmark runs
    min_python: tuple[int, int]


MCPINDEX = PeerSpec("mcpindex-gate", "mcpindex-gate==0.22.*", "mcpindex-proxy", (3, 12))
FIREWALL = PeerSpec("mcp-firewall", "mcp-firewall==0.1.*", "mcp-firewall", (3, 11))
MCP_PROXY = PeerSpec("mcp-proxy", "mcp-proxy==0.13.*", "mcp-proxy", (3, 10))


# What a reader of the numbers must know, read from each peer's source (the versions above).
GROWTH = {
    "mcpindex-gate": (
        "mcpindex-proxy's cost per call grows with the calls its process has served: its "
        "LocalStats (tooling/cse/stats.py) re-parses the timestamp of every recorded event on "
        "each call to prune a 62-day window, up to 50,000 events"
    ),
    "mcp-firewall": (
        "mcp-firewall's cost per call grows with the calls of the last 5 minutes: its chain "
        "detector (pipeline/inbound/chain_detector.py, a constant 300 s window) re-filters that "
        "history on each call; its rate limiter runs with a 1 s window and a limit of 10^9"
    ),
}


@dataclass(frozen=True)
class Peer:
    spec: PeerSpec
    script: Path  # absolute path of its console script
    python: Path  # the venv's interpreter
    version: str  # installed distribution version

    @property
    def label(self) -> str:
        return f"{self.spec.name} {self.version}"


def python_version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return int(out[0]), int(out[1])


def _version_key(python: str) -> list[int]:
    """`.../versions/3.12.1/bin/python3` -> [3, 12, 1]: the oldest suitable one is tried first."""
    return [int(part) for part in Path(python).parents[1].name.split(".") if part.isdigit()]


def find_python(minimum: tuple[int, int]) -> str | None:
    """An interpreter of at least `minimum`: this one, `$BENCH_PEER_PYTHON3xx`, PATH, pyenv."""
    if sys.version_info[:2] >= minimum:
        return sys.executable
    candidates: list[str] = []
    override = os.environ.get(f"BENCH_PEER_PYTHON{minimum[0]}{minimum[1]}")
    if override:
        candidates.append(override)
    for minor in range(minimum[1], 15):
        found = shutil.which(f"python{minimum[0]}.{minor}")
        if found:
            candidates.append(found)
    roots = [os.environ.get("PYENV_ROOT", ""), str(Path.home() / ".pyenv")]
    if shutil.which("pyenv"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            asked = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=30)
            roots.insert(0, asked.stdout.strip())
    for root in filter(None, roots):
        candidates += sorted(glob.glob(f"{root}/versions/3.*/bin/python3"), key=_version_key)
    for candidate in candidates:
        version = python_version(candidate)
        if version is not None and version >= minimum:
            return candidate
    return None


def installed_version(python: Path, distribution: str) -> str:
    return subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({distribution!r}))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()


def ensure(spec: PeerSpec, log: Callable[[str], object] = print) -> Peer | None:
    """The peer's venv, installed if missing; None (and a printed reason) if it cannot be."""
    python = find_python(spec.min_python)
    if python is None:
        log(
            f"  skipped {spec.name}: it needs Python >= {'.'.join(map(str, spec.min_python))}, "
            f"none found (PATH, pyenv, $BENCH_PEER_PYTHON{''.join(map(str, spec.min_python))})"
        )
        return None
    version = python_version(python)
    assert version is not None
    venv = CACHE / f"{spec.name}-py{version[0]}.{version[1]}"
    marker = venv / ".bench-requirement"
    venv_python = venv / "bin" / "python"
    script = venv / "bin" / spec.script
    try:
        if not (marker.exists() and marker.read_text() == spec.requirement and script.exists()):
            log(f"  installing {spec.requirement} into {venv.relative_to(ROOT)} ({python}) ...")
            CACHE.mkdir(exist_ok=True)
            if not venv_python.exists():
                subprocess.run(
                    [python, "-m", "venv", str(venv)],
                    capture_output=True,
                    text=True,
                    timeout=300,
                    check=True,
                )
            subprocess.run(
                [str(venv_python), "-m", "pip", "install", "-q", spec.requirement],
                capture_output=True,
                text=True,
                timeout=900,
                check=True,
            )
            marker.write_text(spec.requirement)
        return Peer(spec, script, venv_python, installed_version(venv_python, spec.name))
    except subprocess.CalledProcessError as exc:
        tail = (exc.stderr or exc.stdout or "").strip().splitlines()[-3:]
        log(f"  skipped {spec.name}: `{' '.join(map(str, exc.cmd))}` failed: {' | '.join(tail)}")
    except (OSError, subprocess.SubprocessError) as exc:
        log(f"  skipped {spec.name}: {exc}")
    return None


def firewall_config(directory: Path) -> Path:
    """mcp-firewall's configuration for the benchmarks: its defaults, with the global rate limit
    raised out of reach and the audit log in `directory`.

    The limit is a sliding window (`globalRateLimit`, 200 calls per 60 s by default) that keeps
    one timestamp per call and re-filters the whole list on every call, so its per-call cost
    grows with the calls inside the window. Raising only `maxCalls` would make the firewall pay
    for a minute of history (60,000 timestamps at 1,000 calls/s) and its figure depend on how
    long the benchmark ran; a 1 s window with a limit of 10^9 keeps the limiter running on
    every call but bounded. Everything else stays at its defaults (mcp_firewall/config.py and
    models.py of 0.1.0): defaultAction `prompt`, which auto-approves when stderr is not a
    terminal; injection, egress and secret scanning on; one audit line per call, hash-chained,
    appended (no fsync)."""
    path = directory / "mcp-firewall.yaml"
    path.write_text(
        "version: 1\n"
        "globalRateLimit:\n  maxCalls: 1000000000\n  windowSeconds: 1\n"
        f"audit:\n  enabled: true\n  path: {str(directory / 'mcp-firewall.audit.jsonl')!r}\n"
    )
    return path


def firewall_argv(peer: Peer, directory: Path, upstream: Sequence[str]) -> list[str]:
    """`mcp-firewall wrap --config FILE -- CMD`: the firewall in front of a stdio server."""
    return [str(peer.script), "wrap", "--config", str(firewall_config(directory)), "--", *upstream]


def mcpindex_argv(peer: Peer, directory: Path, upstream: Sequence[str]) -> list[str]:
    """`mcpindex-proxy --mcpindex-stdio --upstream-command CMD --upstream-arg A ...`, its default
    posture (guard) and its own pin store in `directory` (first list: trust on first use)."""
    argv = [str(peer.script), "--mcpindex-stdio", "--server-id", "bench"]
    argv += ["--pin-store", str(directory / "mcpindex-pins.json")]
    argv += ["--upstream-command", upstream[0]]
    for arg in upstream[1:]:
        argv += ["--upstream-arg", arg]
    return argv


def mcpindex_env(base: dict[str, str], directory: Path) -> dict[str, str]:
    """Its state in `directory`; its weekly summary (a file in the real home) off."""
    return {
        **base,
        "MCPINDEX_STATE_DIR": str(directory / "mcpindex-state"),
        "MCPINDEX_WEEKLY_SUMMARY": "0",
    }


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far (Linux /proc); NaN elsewhere."""
    fields = _stat(pid)
    if fields is None:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _argv(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode(errors="replace").split("\0")[:-1]


def gateway_pids(pid: int, upstream: Sequence[str]) -> list[int]:
    """The processes of a gateway's tree rooted at `pid`, leaving out the upstream server (a
    process whose argv is exactly `upstream`) and whatever it spawned; [] when the root is the
    upstream itself (a direct path).

    For a gateway that is one process (mcpindex-proxy, mcp-firewall, mcp-proxy) this is that
    process; mcpward adds its lifeline supervisor (the upstream's parent); a chain (mcp-proxy ->
    mcp-firewall -> upstream) is both gateways."""
    upstream = list(upstream)
    if _argv(pid) == upstream:
        return []
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        if current != pid and _argv(current) == upstream:
            continue
        found.append(current)
        todo += children.get(current, [])
    return found


def gateway_cpu_seconds(pid: int, upstream: Sequence[str]) -> float:
    """CPU time so far of a gateway's processes (`gateway_pids`); 0 for a direct path."""
    return sum((cpu_seconds(p) for p in gateway_pids(pid, upstream)), 0.0)


def spread(values: Sequence[float], fmt: str = ".0f") -> str:
    """`median (min-max)` of per-round values."""
    if not values:
        return "-"
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:{fmt}} ({low:{fmt}}\u2013{high:{fmt}})"


if __name__ == "__main__":
    for peer_spec in (MCPINDEX, FIREWALL, MCP_PROXY):
        peer = ensure(peer_spec)
        if peer is not None:
            print(f"{peer.label}: {peer.script}")
