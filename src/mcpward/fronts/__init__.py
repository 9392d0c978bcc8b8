"""Fronts: what clients talk to (stdio, Streamable HTTP, the stdio-mode metrics listener).

Fronts sit above the relay: they read a client's frames and hand them to `relay.gateway`.
"""
