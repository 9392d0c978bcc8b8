"""A real PostgreSQL cluster for tests: initdb in a temporary directory on one loopback port.

The server binaries are found, not assumed (`MCPWARD_PG_BIN`, `pg_config --bindir`, then
/usr/lib/postgresql/<newest>/bin). `initdb` refuses root, so as root the cluster runs as the
unprivileged `postgres` system user with its directory chowned to it.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

SUPERUSER = "mcpward_test"
SERVICE_USER = "postgres"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine, or the cluster would not start."""


def find_bindir() -> Path:
    """The directory holding initdb, pg_ctl and postgres."""
    configured = os.environ.get("MCPWARD_PG_BIN")
    candidates: list[Path] = [Path(configured)] if configured else []
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if out.returncode == 0:
            candidates.append(Path(out.stdout.strip()))
    root = Path("/usr/lib/postgresql")
    if root.is_dir():
        versions = sorted(
            (p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name), reverse=True
        )
        candidates.extend(v / "bin" for v in versions)
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).parent)
    for candidate in candidates:
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    raise PostgresUnavailable(
        "no PostgreSQL server binaries (initdb, pg_ctl) found; install postgresql "
        "or set MCPWARD_PG_BIN to their directory"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresCluster:
    """One throwaway cluster. `dsn(db)` gives a libpq URL with a password (scram-sha-256 auth)."""

    def __init__(self, base: Path) -> None:
        self.bindir = find_bindir()
        self.base = base
        self.data = base / "data"
        self.sockets = base / "sockets"
        self.log = base / "postgres.log"
        self.port = free_port()
        self.password = secrets.token_urlsafe(18)
        self._as_service_user = os.geteuid() == 0

    # -- lifecycle -------------------------------------------------------------------------------

    def init(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        self.sockets.mkdir(exist_ok=True)
        pwfile = self.base / "pwfile"
        pwfile.write_text(self.password + "\n")
        pwfile.chmod(0o600)
        if self._as_service_user:
            user = pwd.getpwnam(SERVICE_USER)
            for path in (self.base, self.sockets, pwfile):
                os.chown(path, user.pw_uid, user.pw_gid)
            # the service user must be able to reach the directory through its parents
            parent = self.base.parent
            while parent != parent.parent:
                if parent.stat().st_mode & 0o001 == 0:
                    parent.chmod(parent.stat().st_mode | 0o001)
                parent = parent.parent
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        pwfile.unlink()

    def start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.sockets} -c fsync=on "
            "-c max_connections=200 -c shared_buffers=64MB"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def kill(self) -> None:
        """Stop with SIGQUIT-like immediate shutdown (no checkpoint), as a crash would."""
        self.stop("immediate")

    # -- access ----------------------------------------------------------------------------------

    def dsn(self, database: str = "postgres") -> str:
        return (
            f"postgresql://{SUPERUSER}:{quote(self.password, safe='')}@127.0.0.1:"
            f"{self.port}/{database}"
        )

    def create_database(self, name: str) -> str:
        """A fresh, empty database; returns its DSN."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    # -- internals -------------------------------------------------------------------------------

    def _run(self, tool: str, *args: str, check: bool = True) -> None:
        command = [str(self.bindir / tool), *args]
        if self._as_service_user:
            command = ["runuser", "-u", SERVICE_USER, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
        if check and result.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise PostgresUnavailable(
                f"{tool} failed ({result.returncode}): {result.stderr.strip()[-2000:]}\n{log}"
            )


@contextmanager
def running_cluster(base: Path) -> Iterator[PostgresCluster]:
    """A started cluster, stopped (and its files removed) on exit."""
    cluster = PostgresCluster(base)
    cluster.init()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)
