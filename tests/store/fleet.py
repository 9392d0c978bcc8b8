"""Two (or more) `mcpward run` replicas with HTTP fronts on one PostgreSQL database, each with its
own drift_server upstream reading one shared control file; real MCP clients on each."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.http.gateway_harness import free_port, token_entry
from tests.store.pg import DSN_ENV
from tests.support.paths import REPO_ROOT

DRIFT_SERVER = REPO_ROOT / "tests" / "fixtures" / "drift_server.py"
TOKEN = "fleet-client-token-0123456789abcdef"
CLI = [sys.executable, "-m", "mcpward.cli.main"]


@dataclass
class Replica:
    name: str
    config: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def client(self, token: str = TOKEN) -> Client:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        return Client(streamable_http_client(self.url, http_client=http), mode="legacy")


def write_control(control: Path, version: int) -> None:
    tmp = control.with_suffix(".tmp")
    tmp.write_text(json.dumps({"version": version, "annotations": "readonly"}), encoding="utf-8")
    tmp.replace(control)


def replica_config(
    base: Path, name: str, keys: Path | None, control: Path, *, postgres: bool = True
) -> Replica:
    """A replica's config: its own state dir and port, the shared database and keys (or, with
    `postgres=False`, a single box: SQLite and keys in its state dir)."""
    directory = base / name
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    upstream = {
        "id": "ledger",
        "command": sys.executable,
        "args": [str(DRIFT_SERVER), "--control", str(control), "--mode", "live"],
    }
    config: dict[str, Any] = {
        "version": 1,
        "front": {
            "kind": "http",
            "host": "127.0.0.1",
            "port": port,
            "tokens": [token_entry(TOKEN, "fleet-client")],
        },
        "upstreams": [upstream],
        "state_dir": str(directory / "state"),
        "logging": {"level": "info", "file": str(directory / "gateway.log")},
    }
    if postgres:
        config["store"] = {
            "kind": "postgres",
            "dsn": {"env": DSN_ENV},
            "pool": {"min": 1, "max": 4},
        }
        config["keys"] = {"dir": str(keys)}
    path = directory / "mcpward.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return Replica(name, path, port)


def cli(dsn: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, DSN_ENV: dsn}
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=120)
    if check:
        assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def running(replicas: list[Replica], dsn: str) -> Iterator[list[Replica]]:
    env = {**os.environ, DSN_ENV: dsn}
    try:
        for replica in replicas:
            replica.process = subprocess.Popen(
                [*CLI, "run", "--config", str(replica.config)],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        deadline = time.monotonic() + 60
        for replica in replicas:
            while not _listening(replica.port):
                assert replica.process is not None
                if replica.process.poll() is not None:
                    pipe = replica.process.stderr
                    stderr = pipe.read().decode() if pipe else ""
                    raise AssertionError(f"replica {replica.name} exited: {stderr[-3000:]}")
                assert time.monotonic() < deadline, f"replica {replica.name} did not listen"
                time.sleep(0.05)
        yield replicas
    finally:
        for replica in replicas:
            if replica.process is not None and replica.process.poll() is None:
                replica.process.send_signal(signal.SIGTERM)
        for replica in replicas:
            if replica.process is not None:
                try:
                    replica.process.wait(15)
                except subprocess.TimeoutExpired:
                    replica.process.kill()
                    replica.process.wait()


def held_data(error: Any) -> dict[str, Any]:
    data = error.error.data
    assert isinstance(data, dict), data
    return data
