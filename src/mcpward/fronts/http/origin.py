"""Host and Origin validation (DNS-rebinding defence), applied to every path the front serves."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mcpward.config.http_front import HttpFront, is_loopback_host

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def _norm_host(value: str) -> str:
    return value.strip().lower().rstrip(".")


@dataclass(frozen=True, slots=True)
class HostOriginPolicy:
    hosts: frozenset[str]
    any_port_hosts: frozenset[str]
    origins: frozenset[str]
    # the settings that allow another Host / Origin, named in the 403
    host_setting: str = "front.allowed_hosts (HOST:PORT)"
    origin_setting: str = "front.allowed_origins"

    @classmethod
    def for_front(cls, front: HttpFront, bound_port: int) -> HostOriginPolicy:
        hosts: set[str] = set()
        any_port: set[str] = set()
        origins: set[str] = set()
        if is_loopback_host(front.host):
            for name in LOOPBACK_NAMES:
                hosts.add(f"{name}:{bound_port}")
                origins.add(f"http://{name}:{bound_port}")
                origins.add(f"https://{name}:{bound_port}")
        for entry in front.allowed_hosts:
            entry = _norm_host(entry)
            if entry.endswith(":*"):
                any_port.add(entry[:-2])
            else:
                hosts.add(entry)
        origins.update(o.strip().lower().rstrip("/") for o in front.allowed_origins)
        return cls(frozenset(hosts), frozenset(any_port), frozenset(origins))

    def host_allowed(self, host: str | None) -> bool:
        if not host:
            return False
        value = _norm_host(host)
        if value in self.hosts:
            return True
        bare = value.rsplit(":", 1)[0] if not value.endswith("]") else value
        return bare in self.any_port_hosts or value in self.any_port_hosts

    def origin_allowed(self, origin: str | None) -> bool:
        if origin is None:
            return True  # not a browser: there is no cross-site page to defend against
        return origin.strip().lower().rstrip("/") in self.origins

    def problem(self, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
        """Why the request must be refused with 403, or None if Host and Origin are acceptable."""
        host: str | None = None
        origin: str | None = None
        hosts_seen = 0
        for key, value in headers:
            if key == b"host":
                hosts_seen += 1
                host = value.decode("latin-1")
            elif key == b"origin":
                origin = value.decode("latin-1")
        return self.judge(hosts_seen, host, origin)

    def judge(self, hosts_seen: int, host: str | None, origin: str | None) -> str | None:
        """`problem` for headers already read: exactly one Host, allowed; an allowed Origin."""
        if hosts_seen != 1:
            return f"exactly one Host header is needed ({hosts_seen} sent)"
        if not self.host_allowed(host):
            return f"Host {_shown(host)} is not allowed; to accept it add it to {self.host_setting}"
        if not self.origin_allowed(origin):
            return (
                f"Origin {_shown(origin)} is not allowed; to accept it add it to "
                f"{self.origin_setting}"
            )
        return None


def _shown(value: str | None) -> str:
    """A header value as quoted, printable text (it is the client's, shown back to it)."""
    text = "".join(c if " " <= c <= "~" else "?" for c in (value or ""))[:100]
    return repr(text)
