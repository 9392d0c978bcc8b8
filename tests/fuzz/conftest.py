"""One gateway process per front for the whole fuzz run, reused across hypothesis examples (and
started again only when an example killed it: that example has already failed)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fuzz.gateways import HttpGateway, StdioGateway
from tests.fuzz.runner import Fuzzer


@pytest.fixture(scope="session")
def stdio_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioGateway]:
    gateway = StdioGateway(tmp_path_factory.mktemp("fuzz-stdio"))
    yield gateway
    gateway.stop()


@pytest.fixture(scope="session")
def http_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    gateway = HttpGateway(tmp_path_factory.mktemp("fuzz-http"))
    yield gateway
    gateway.stop()


@pytest.fixture(scope="session")
def fuzzer(stdio_gateway: StdioGateway, http_gateway: HttpGateway) -> Fuzzer:
    """Gateways start on first use: a stdio-only test never starts the HTTP one."""
    return Fuzzer(stdio_gateway, http_gateway)
