"""Byte streams shared by fronts and connectors: newline framing, batched writes, SSE."""
