"""Logging for the gateway process: to stderr or a file, never to stdout, never message bodies."""

from __future__ import annotations

import logging
import sys
from pathlib import Path


def configure_logging(level: str = "info", file: Path | None = None) -> None:
    handler: logging.Handler
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
