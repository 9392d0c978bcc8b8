"""Consent ceilings: how far a client may go (read_only < no_destructive < full). Below the
pipeline, so the store's client records and the identity models can name them."""

from __future__ import annotations

from enum import StrEnum


class ConsentCeiling(StrEnum):
    READ_ONLY = "read_only"
    NO_DESTRUCTIVE = "no_destructive"
    FULL = "full"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def permits(self, needed: ConsentCeiling) -> bool:
        return needed.rank <= self.rank

    def narrowed_to(self, requested: ConsentCeiling | None) -> ConsentCeiling:
        """The session's ceiling: the lower of the recorded one and what the client asks for."""
        if requested is None or requested.rank >= self.rank:
            return self
        return requested


_RANK = {ConsentCeiling.READ_ONLY: 0, ConsentCeiling.NO_DESTRUCTIVE: 1, ConsentCeiling.FULL: 2}


def parse_ceiling(value: object) -> ConsentCeiling | None:
    """A ceiling named by a client or a token claim; None if absent or not one of the three."""
    if isinstance(value, str):
        try:
            return ConsentCeiling(value)
        except ValueError:
            return None
    return None
