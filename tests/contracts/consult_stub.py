"""The scripted OpenAI-compatible stand-in (tests/fixtures/openai_stub.py) as a real process on
a free loopback port, for the tier-2 consult tests."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

STUB = Path(__file__).resolve().parents[1] / "fixtures" / "openai_stub.py"


class ModelStub:
    def __init__(self, directory: Path) -> None:
        self.control = directory / "model-control.json"
        self.log = directory / "model-requests.jsonl"
        self.port_file = directory / "model-port"
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    def answer(self, mode: str, reason: str = "it now asks for the conversation history") -> None:
        tmp = self.control.with_suffix(".tmp")
        tmp.write_text(json.dumps({"mode": mode, "reason": reason}), encoding="utf-8")
        tmp.replace(self.control)

    def reset(self) -> None:
        """Forget the requests seen so far and answer proceed (one stub serves many tests)."""
        self.log.unlink(missing_ok=True)
        self.answer("proceed")

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def settings(self, **overrides: Any) -> dict[str, Any]:
        """A `consult:` config section pointing at this stub."""
        return {
            "url": self.url,
            "model": "stub-model",
            "allow_private": ["127.0.0.1"],
            "deadline_s": 1.0,
            **overrides,
        }


@contextmanager
def model_stub(directory: Path, mode: str = "proceed") -> Iterator[ModelStub]:
    stub = ModelStub(directory)
    stub.answer(mode)
    argv = [sys.executable, str(STUB), "--control", str(stub.control), "--log", str(stub.log)]
    process = subprocess.Popen([*argv, "--port-file", str(stub.port_file)])
    try:
        deadline = time.monotonic() + 20
        while not stub.port_file.exists():
            assert process.poll() is None, "the model stub exited"
            assert time.monotonic() < deadline, "the model stub did not start"
            time.sleep(0.05)
        stub.port = int(stub.port_file.read_text())
        yield stub
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
