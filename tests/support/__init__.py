"""Shared test support: tool paths, gateway configs and clients, process-tree inspection.

Imported as `tests.support.<module>`; the fixtures built on it live in tests/conftest.py.
"""
