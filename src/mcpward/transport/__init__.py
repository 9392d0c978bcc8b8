"""Fronts (stdio, HTTP) that clients talk to, and connectors to upstream servers."""
