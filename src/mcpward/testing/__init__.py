"""Test and benchmark aids shipped with the package (like starlette.testclient)."""
