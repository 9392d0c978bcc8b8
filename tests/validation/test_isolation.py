"""The sandbox holds: a probe server inside it dials a listener on the host's 127.0.0.1 and
writes outside its throwaway directory. Neither succeeds, and both attempts are reported."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.validation.held import fixture_upstream, held_config, require_isolator
from tests.validation.run_cli import run_validate

require_isolator()


def test_the_probe_reaches_neither_the_host_loopback_nor_the_filesystem(tmp_path: Path) -> None:
    outside = tmp_path / "escaped.txt"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        upstream = fixture_upstream("probe", "--port", str(port), "--outside", str(outside))
        config = held_config(tmp_path, [upstream])
        code, report = run_validate(config)
        listener.settimeout(0)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever connected
    assert not outside.exists()
    assert (code, report["verdict"]) == (1, "FAILED")
    details = [o["detail"] for o in report["observations"] if o["contradiction"]]
    assert any(d.startswith(f"connect 127.0.0.1:{port}: failed") for d in details), details
    assert any(d == f"openat {outside}: failed (EROFS)" for d in details), details
