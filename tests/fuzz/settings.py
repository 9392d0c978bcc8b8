"""Hypothesis settings of the fuzz properties: small and reproducible in CI, scaled by env.

MCPWARD_FUZZ_EXAMPLES=N runs N examples per property; MCPWARD_FUZZ_RANDOM=1 draws new ones each
run (default: derandomized, the same examples every run); MCPWARD_FUZZ_SHRINK=1 shrinks a failure
to its minimal frame (slow: every shrink step runs on the real gateway).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings


def fuzz_settings(default_examples: int) -> settings:
    phases = [Phase.explicit, Phase.generate]
    if os.environ.get("MCPWARD_FUZZ_SHRINK"):
        phases.append(Phase.shrink)
    return settings(
        max_examples=int(os.environ.get("MCPWARD_FUZZ_EXAMPLES", default_examples)),
        deadline=None,
        derandomize=not os.environ.get("MCPWARD_FUZZ_RANDOM"),
        database=None,
        phases=phases,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
    )
