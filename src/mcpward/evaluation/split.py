"""The fixed development / held-out split: a deterministic hash of each example's key, so the
same example always lands on the same side and tuning never sees the held-out side.
"""

from __future__ import annotations

import hashlib
from typing import Literal

Split = Literal["dev", "test"]
SALT = b"mcpward-eval-split/1\x00"


def split_of(key: str) -> Split:
    """Half of all keys go to `test`; which half is fixed by SHA-256, never by chance."""
    digest = hashlib.sha256(SALT + key.encode("utf-8")).digest()
    return "test" if digest[0] < 128 else "dev"
