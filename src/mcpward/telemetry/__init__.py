"""Metrics (Prometheus, one registry per gateway) and traces (OpenTelemetry, off by default).

A low layer: it imports nothing of mcpward's; the relay, evidence and transports call into it.
"""
