"""mcpward: a security gateway for the Model Context Protocol.

Pins tool contracts, runs a guard pipeline on every message, and records a tamper-evident receipt.
"""

__version__ = "0.1.0"
