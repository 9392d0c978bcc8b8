"""Scrape a /metrics endpoint and read it with prometheus-client's own parser."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping

import httpx
from prometheus_client.parser import text_string_to_metric_families

Labels = Mapping[str, str]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Scrape:
    """The samples of one scrape: `value(name, **labels)` sums the samples that match."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples = [
            (sample.name, dict(sample.labels), sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        ]

    def value(self, name: str, **labels: str) -> float:
        return sum(
            v
            for n, lab, v in self.samples
            if n == name and all(lab.get(k) == want for k, want in labels.items())
        )

    def label_values(self, name: str, label: str) -> set[str]:
        return {lab[label] for n, lab, _ in self.samples if n == name and label in lab}

    def series(self, prefix: str = "mcpward_") -> int:
        return sum(1 for n, _, _ in self.samples if n.startswith(prefix))


async def scrape(url: str, token: str | None = None, attempts: int = 100) -> Scrape:
    """GET url (retrying while the listener starts) and parse it."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(timeout=10) as client:
        for _ in range(attempts):
            try:
                response = await client.get(url, headers=headers)
                break
            except httpx.ConnectError:
                await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"nothing listens at {url}")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return Scrape(response.text)
