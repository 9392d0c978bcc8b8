"""Matching a URI against an RFC 6570 URI template (resources/templates/list entries).

Every expression matches any text, so a template covers every URI it could expand to.
"""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=1024)
def template_regex(template: str) -> re.Pattern[str]:
    """A compiled pattern matching the expansions of `template` (cached: templates repeat)."""
    parts = re.split(r"\{[^}]*\}", template)
    return re.compile(".*".join(re.escape(p) for p in parts) + r"\Z", re.DOTALL)
