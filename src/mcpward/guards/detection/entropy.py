"""Shannon entropy of a string, in bits per character (for the generic secret test)."""

from __future__ import annotations

import math
from collections import Counter


def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    n = len(text)
    return -sum((c / n) * math.log2(c / n) for c in Counter(text).values())
