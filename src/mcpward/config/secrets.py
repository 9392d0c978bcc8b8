"""Resolving a configured SecretRef (an environment variable or a file) to its value.

The value is used, never logged; a reference that cannot be read is a clear error.
"""

from __future__ import annotations

import os

from mcpward.config.models import SecretRef


class SecretUnavailable(Exception):
    """A configured secret reference that cannot be read."""


def resolve_secret(ref: SecretRef) -> str:
    """The value a SecretRef names: an environment variable, or a file (trailing newline cut)."""
    if ref.env is not None:
        value = os.environ.get(ref.env)
        if value is None:
            raise SecretUnavailable(f"environment variable {ref.env} is not set")
    else:
        assert ref.file is not None
        try:
            value = ref.file.read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise SecretUnavailable(f"cannot read {ref.file}: {exc.strerror or exc}") from None
    return ref.prefix + value
