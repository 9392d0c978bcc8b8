"""Tier 2 of the drift gate: an escalate-only semantic consult of an operator-configured model
about structurally benign but ambiguous contract changes (off unless configured)."""
