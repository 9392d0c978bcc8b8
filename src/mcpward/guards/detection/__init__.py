"""Shared detection machinery for the content guards: RE2 patterns, pattern families, text
extraction, Unicode smuggling checks, entropy and the secret patterns. Pure functions, no I/O.
"""
